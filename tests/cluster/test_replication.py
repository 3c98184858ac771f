"""The objects a ShardDB with members owns, stored by a real API server: each is a fixed point of Metacontroller.

Created as Metacontroller creates a child (its namespace, selector label and last-applied record),
read back as stored, then asked for again: the in-place update decision must send nothing. The
building blocks alone, and the wired hooks' answers stage by stage (new, ready, registered, running,
stopping, drained), each applied as Metacontroller applies it (created, or merged in place and put).
"""

from __future__ import annotations

from typing import Any

from hooks import kinds, render
from hooks.replication import cleanup
from hooks.replication import rollout as member_rollout
from hooks.replication.shape import Plan
from testbed.models.metacontroller import (
    LAST_APPLIED,
    apply_update,
    desired_as_sent,
    difference,
    for_create,
    needs_update,
    serialize,
)

from ..support.kube import Kube
from ..support.replication import OWNER, failed_over, members, parent, rendered, spec, stages

Obj = dict[str, Any]

PARENT_UID = "00000000-0000-0000-0000-000000000000"


def collection_of(kind: str, namespace: str) -> str:
    """The REST path a child of ``kind`` is created at, from the one table of kinds."""
    found = kinds.BY_KIND[kind]
    return f"{found.api_prefix}/namespaces/{namespace}/{found.plural}"


def assert_fixed_point(kube: Kube, namespace: str, desired: Obj) -> None:
    """Created as Metacontroller creates a child, read back: the update decision sends nothing."""
    sent = desired_as_sent(desired, namespace, PARENT_UID)
    created = desired_as_sent(desired, namespace, PARENT_UID)
    created["metadata"].setdefault("annotations", {})[LAST_APPLIED] = serialize(sent)
    collection = collection_of(desired["kind"], namespace)
    response = kube.http.post(collection, json=created, params={"fieldValidation": "Strict"})
    assert response.status_code == 201, response.text
    stored = kube.http.get(f"{collection}/{desired['metadata']['name']}").json()
    assert not needs_update(stored, sent), (desired["kind"], difference(stored, sent))


def test_every_object_for_members_is_stored_as_a_fixed_point(kube: Kube, namespace: str) -> None:
    for desired in rendered(members(3), Plan(3, True)):
        assert_fixed_point(kube, namespace, desired)


STORE = {
    "destinationPath": "s3://backups/orders",
    "endpointURL": "https://s3.example.com",
    "endpointCA": {"name": "store-ca", "key": "ca.crt"},
    "s3Credentials": {
        "accessKeyId": {"name": "backup-s3", "key": "ACCESS_KEY_ID"},
        "secretAccessKey": {"name": "backup-s3", "key": "ACCESS_SECRET_KEY"},
    },
}


def test_every_object_for_members_with_backups_is_stored_as_a_fixed_point(kube: Kube, namespace: str) -> None:
    """The store's CA (a Secret volume with a mode and one item) and the access key (Secret references)."""
    for desired in rendered(spec(replication={"members": 2}, backup={"objectStore": STORE}), Plan(2, True)):
        assert_fixed_point(kube, namespace, desired)


def test_the_base_backups_cronjob_is_stored_as_a_fixed_point(kube: Kube, namespace: str) -> None:
    """Its schedule, its Job's template (the script, the password's reference, the CA volume, no token)."""
    password = {"secretKeyRef": {"name": "demo-db", "key": "superuser"}}
    the_spec = spec(
        replication={"members": 2},
        db={"env": [{"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": password}]},
        backup={"objectStore": STORE, "schedule": "@hourly", "retentionPolicy": "7d"},
    )
    assert the_spec.backup is not None
    assert_fixed_point(kube, namespace, render.base_backups("demo", the_spec, the_spec.backup, 2))


def test_the_restore_points_cronjob_is_stored_as_a_fixed_point(kube: Kube, namespace: str) -> None:
    """Suspended; its Job's template: the program and the Services, the password's reference, the job-name label
    by the downward API, no token."""
    password = {"secretKeyRef": {"name": "demo-db", "key": "superuser"}}
    the_spec = spec(
        replication={"members": 2},
        db={"env": [{"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": password}]},
        backup={"objectStore": STORE},
    )
    assert_fixed_point(kube, namespace, render.restore_points("demo", the_spec, 2))


def apply(kube: Kube, namespace: str, desired: Obj) -> Obj:
    """What Metacontroller does with a child of an answer: create it, or merge it in place and put it; then read it."""
    sent = desired_as_sent(desired, namespace, PARENT_UID)
    collection = collection_of(desired["kind"], namespace)
    url = f"{collection}/{desired['metadata']['name']}"
    found = kube.http.get(url)
    if found.status_code == 404:
        response = kube.http.post(collection, json=for_create(sent, OWNER), params={"fieldValidation": "Strict"})
        assert response.status_code == 201, response.text
    elif needs_update(found.json(), sent) and desired["kind"] != "Job":  # Jobs are OnDelete
        response = kube.http.put(url, json=apply_update(found.json(), sent), params={"fieldValidation": "Strict"})
        assert response.status_code == 200, response.text
    stored: Obj = kube.http.get(url).json()
    return stored


def test_every_child_the_wired_hooks_answer_is_stored_as_a_fixed_point_at_each_stage(
    kube: Kube, namespace: str
) -> None:
    for stage, body in stages().items():
        for desired in body["children"]:
            stored = apply(kube, namespace, desired)
            sent = desired_as_sent(desired, namespace, PARENT_UID)
            if desired["kind"] != "Job":
                assert not needs_update(stored, sent), (stage, desired["kind"], difference(stored, sent))


def test_the_patroni_cleanup_job_and_its_role_are_stored_as_fixed_points(kube: Kube, namespace: str) -> None:
    """Asked only on deletion, once every member is gone: the Job is created as sent (never updated), and the
    Role and binding merge to nothing."""
    for desired in cleanup.children("demo", namespace, members(2)):
        stored = apply(kube, namespace, desired)
        sent = desired_as_sent(desired, namespace, PARENT_UID)
        if desired["kind"] == "Job":
            assert (
                stored["spec"]["template"]["spec"]["containers"][0]["command"]
                == desired["spec"]["template"]["spec"]["containers"][0]["command"]
            )
        else:
            assert not needs_update(stored, sent), (desired["kind"], difference(stored, sent))


def test_the_rollout_job_and_its_role_are_stored_as_fixed_points(kube: Kube, namespace: str) -> None:
    """Asked while a member runs an older template: the Role (pods and StatefulSets by name) and binding merge
    to nothing, and the Job is stored with the script and environment sent."""
    plan = Plan(2, True)
    templates = [desired["spec"]["template"] for desired in rendered() if desired["kind"] == "StatefulSet"]
    for desired in member_rollout.children("demo", namespace, members(2), 2, plan, templates):
        stored = apply(kube, namespace, desired)
        sent = desired_as_sent(desired, namespace, PARENT_UID)
        if desired["kind"] == "Job":
            container = stored["spec"]["template"]["spec"]["containers"][0]
            asked = desired["spec"]["template"]["spec"]["containers"][0]
            assert (container["command"], container["env"]) == (asked["command"], asked["env"])
        else:
            assert not needs_update(stored, sent), (desired["kind"], difference(stored, sent))


def test_the_status_of_shards_with_members_is_stored_unchanged(kube: Kube, namespace: str) -> None:
    """Each member's state and lag and the last failover are declared: else the API server prunes them, and
    Metacontroller writes the status at every sync."""
    body = parent()
    body["metadata"] = {"name": "demo", "namespace": namespace}
    response = kube.create(body, namespace)
    assert response.status_code == 201, response.text
    stored = response.json()
    status = failed_over()["status"]
    assert status["replication"]["shards"][1]["lastFailover"]
    stored["status"] = status
    response = kube.put(stored, subresource="status")
    assert response.status_code == 200, response.text
    assert kube.get("ShardDB", "demo", namespace)["status"] == status
