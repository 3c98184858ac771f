"""Names Kubernetes can run: the CRD admits exactly the ShardDB names whose every derived name fits.

The limit comes from ``hooks.names`` (built by the same functions that name the
children); here the real API server proves it tight: the longest name's children,
and the pods their controllers would create, are accepted; one character more
and a shard pod is refused.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import httpx
import pytest

from hooks import kinds, names
from hooks.cli.stages import preview

from ..support.kube import Kube, collection, error_message
from ..support.samples import SPEC, sharddb
from .conftest import CRD_NAME
from .loop import Loop

Obj = dict[str, Any]
DRY_RUN = {"dryRun": "All", "fieldValidation": "Strict"}


def name_of(length: int) -> str:
    """A valid DNS label of ``length`` characters."""
    return ("orders-" + "x" * length)[:length]


def dry_run(kube: Kube, obj: Obj, namespace: str) -> httpx.Response:
    return kube.http.post(collection(obj["kind"], namespace), json=obj, params=DRY_RUN)


def shard_pod(parent: str, ordinal: int) -> Obj:
    """The pod the StatefulSet controller creates for ``ordinal``, with the labels it sets."""
    pod = names.shard_pod_name(parent, ordinal)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod,
            "labels": {
                **names.labels(parent, names.DB),
                "controller-revision-hash": f"{names.db_name(parent)}-{'7' * names.REVISION_HASH_MAX}",
                "statefulset.kubernetes.io/pod-name": pod,
                "apps.kubernetes.io/pod-index": str(ordinal),
            },
        },
        "spec": {
            "hostname": pod,
            "subdomain": names.db_name(parent),
            "containers": [{"name": "db", "image": "postgres:16"}],
        },
    }


def seed_pod(parent: str, shards: int) -> Obj:
    """A pod the Job controller creates for a seed Job, labelled with the Job's name."""
    job = names.seed_job_name(parent, shards)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{job}-",
            "labels": {**names.labels(parent, names.SEED), "job-name": job, "batch.kubernetes.io/job-name": job},
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "seed", "image": "postgres:16"}]},
    }


def test_the_api_server_refuses_a_name_one_character_too_long(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb(name_of(names.MAX_NAME_LENGTH + 1), namespace))
    assert response.status_code == 422
    message = error_message(response)
    assert "metadata.name" in message
    assert f"at most {names.MAX_NAME_LENGTH} characters" in message


def test_the_api_server_accepts_the_longest_name_that_fits(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb(name_of(names.MAX_NAME_LENGTH), namespace))
    assert response.status_code == 201, error_message(response)


def with_members(count: int) -> Obj:
    return {**SPEC, "replication": {"members": count}}


def test_the_api_server_refuses_members_for_a_name_one_character_too_long_for_them(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb(name_of(names.MAX_REPLICATED_NAME_LENGTH + 1), namespace, with_members(2)))
    assert response.status_code == 422
    message = error_message(response)
    assert "spec.replication.members" in message
    assert f"at most {names.MAX_REPLICATED_NAME_LENGTH} characters" in message


def test_the_api_server_accepts_members_for_the_longest_name_that_fits_them(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb(name_of(names.MAX_REPLICATED_NAME_LENGTH), namespace, with_members(2)))
    assert response.status_code == 201, error_message(response)


def test_a_name_too_long_for_members_keeps_one_copy_and_its_edits_and_deletion(kube: Kube, namespace: str) -> None:
    """One copy fits; members asked by an edit are refused; the object still takes other edits and its finalizer."""
    name = name_of(names.MAX_REPLICATED_NAME_LENGTH + 1)
    created = kube.create(sharddb(name, namespace, {**SPEC, "shards": 1}))
    assert created.status_code == 201, error_message(created)
    asked = kube.merge_patch("ShardDB", name, namespace, {"spec": {"replication": {"members": 2}}})
    assert asked.status_code == 422
    assert "spec.replication.members" in error_message(asked)
    grown = kube.merge_patch("ShardDB", name, namespace, {"spec": {"shards": 2}})
    assert grown.status_code == 200, error_message(grown)
    marked = kube.merge_patch("ShardDB", name, namespace, {"metadata": {"finalizers": ["example.com/test"]}})
    assert marked.status_code == 200, error_message(marked)
    cleared = kube.merge_patch("ShardDB", name, namespace, {"metadata": {"finalizers": None}})
    assert cleared.status_code == 200, error_message(cleared)


@pytest.mark.parametrize("name", ["1orders", "orders.eu"])
def test_the_api_server_refuses_a_name_no_service_can_carry(kube: Kube, namespace: str, name: str) -> None:
    response = kube.create(sharddb(name, namespace))
    assert response.status_code == 422
    assert "must start with a letter" in error_message(response)


def test_every_child_of_the_longest_name_is_accepted_with_the_pods_it_makes(kube: Kube, namespace: str) -> None:
    parent = name_of(names.MAX_NAME_LENGTH)
    manifest = sharddb(
        parent, namespace, {**SPEC, "shards": names.MAX_SHARDS, "cache": {**SPEC["cache"], "replicas": 2}}
    )
    children = preview(manifest, "available").children
    assert {child["kind"] for child in children} >= {"Service", "StatefulSet", "Job", "Deployment"}
    pods = [shard_pod(parent, names.MAX_SHARDS - 1), seed_pod(parent, names.MAX_SHARDS)]
    assert names.seed_job_name(parent, names.MAX_SHARDS) in {child["metadata"]["name"] for child in children}
    for obj in [*children, *pods]:
        response = dry_run(kube, obj, namespace)
        assert response.status_code == 201, (obj["kind"], obj["metadata"], error_message(response))


def test_one_character_more_and_the_shard_pods_are_refused(kube: Kube, namespace: str) -> None:
    response = dry_run(kube, shard_pod(name_of(names.MAX_NAME_LENGTH + 1), 0), namespace)
    assert response.status_code == 422
    assert "must be no more than 63 characters" in error_message(response)


def _name_rules(crd: Obj) -> list[Obj]:
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    rules: list[Obj] = schema["properties"]["metadata"]["properties"]["name"]["x-kubernetes-validations"]
    return rules


def test_a_too_long_name_past_an_older_crd_gets_no_children_and_says_why(kube: Kube, namespace: str) -> None:
    crd = kube.get("CustomResourceDefinition", CRD_NAME)
    rules = _name_rules(crd)
    older = copy.deepcopy(crd)
    del older["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"]["properties"]["name"][
        "x-kubernetes-validations"
    ]
    assert kube.put(older).status_code == 200
    too_long = "orders-eu-west-primary-payments-ledger-shard-group-a1"
    loop = Loop(kube, namespace, name=too_long)
    try:
        _eventually_created(loop)
    finally:
        restored = kube.get("CustomResourceDefinition", CRD_NAME)
        restored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"]["properties"]["name"][
            "x-kubernetes-validations"
        ] = rules
        assert kube.put(restored).status_code == 200
    for _ in range(3):
        loop.round()
    stored = loop.parent_stored
    for kind in kinds.CHILDREN:
        listed = kube.http.get(collection(kind.kind, namespace)).json()["items"]
        assert listed == [], f"a {kind.kind} was created for a name no pod can run under"
    assert stored["status"]["phase"] == "NameTooLong"
    degraded = next(c for c in stored["status"]["conditions"] if c["type"] == "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "NameTooLong")
    assert f"at most {names.MAX_NAME_LENGTH} fit" in degraded["message"]
    assert loop.status_writes == 1  # said once, then a fixed point


def _eventually_created(loop: Loop, attempts: int = 50) -> None:
    """The API server takes a moment to serve a changed CRD; until then the old rules refuse."""
    for _ in range(attempts):
        try:
            loop.create(SPEC)
            return
        except AssertionError:
            time.sleep(0.2)
    loop.create(SPEC)
