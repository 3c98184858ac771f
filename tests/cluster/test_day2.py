"""Rollouts, pause and hibernation against a real API server, with Metacontroller's writes.

A rollout writes each changed template once, the shards' before the cache's, and
ends in a fixed point; a paused ShardDB's answer must reproduce every stored child
so exactly that Metacontroller neither updates nor deletes anything; hibernation
must take the children down in the teardown order and wake on the same volumes
without a seed; deleting a paused or hibernated ShardDB still ends cleanly.
"""

from __future__ import annotations

from typing import Any

import pytest

from hooks import names
from testbed.models.metacontroller import LAST_APPLIED

from ..support.kube import path
from ..support.samples import SPEC
from .loop import Loop

Obj = dict[str, Any]


@pytest.fixture
def loop(available: Loop) -> Loop:
    """An Available ShardDB (conftest's ``available``), by the name these tests use."""
    return available


def _stored(loop: Loop) -> dict[tuple[str, str], str]:
    """Every child's resourceVersion: any write changes one, any delete drops one."""
    found = {}
    for kind in ("Service", "StatefulSet", "Deployment", "Job", "PodDisruptionBudget"):
        for name in ("demo-db", "demo-cache", "demo-seed-3"):
            response = loop.kube.http.get(path(kind, name, loop.namespace))
            if response.status_code == 200:
                found[(kind, name)] = response.json()["metadata"]["resourceVersion"]
    return found


def test_paused_sharddb_changes_no_stored_child(loop: Loop) -> None:
    loop.edit({"paused": True, "shards": 5, "dbImage": "postgres:17", "cache": {"replicas": 3}})
    before = _stored(loop)
    updates = len(loop.updates)
    answer = loop.round()
    loop.round()
    assert loop.updates[updates:] == []
    assert _stored(loop) == before
    progressing = next(c for c in answer["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "Paused")


def test_unpaused_sharddb_carries_out_what_waited(loop: Loop) -> None:
    loop.edit({"paused": True, "cache": {"replicas": 3}})
    loop.round()
    loop.edit({"paused": False})
    loop.round()
    assert loop.kube.get("Deployment", "demo-cache", loop.namespace)["spec"]["replicas"] == 3


def test_hibernation_keeps_the_statefulset_at_zero_and_wakes_without_a_seed(loop: Loop) -> None:
    loop.edit({"hibernated": True})
    for _ in range(8):
        if loop.round()["status"]["phase"] == "Hibernated":
            break
        loop.world.run_cache()
        loop.world.remove_pods("cache")
        loop.world.run_statefulset()
    else:
        raise AssertionError(f"not Hibernated: {loop.answers[-1]['status']}")
    assert loop.kube.get("StatefulSet", "demo-db", loop.namespace)["spec"]["replicas"] == 0
    assert loop.kube.exists("Service", "demo-db", loop.namespace)
    assert loop.kube.exists("Job", "demo-seed-3", loop.namespace)
    for kind, name in (("Deployment", "demo-cache"), ("Service", "demo-cache"), ("PodDisruptionBudget", "demo-db")):
        assert not loop.kube.exists(kind, name, loop.namespace), f"{kind}/{name} outlived hibernation"

    loop.edit({"hibernated": False})
    answer = loop.until("Available")
    assert answer["status"]["seededShards"] == 3
    assert [c["metadata"]["name"] for c in answer["children"] if c["kind"] == "Job"] == ["demo-seed-3"]


# --- rollouts ------------------------------------------------------------------------------

Update = tuple[str, list[str]]


def _updates_since(loop: Loop, before: int) -> list[Update]:
    """Each update sent since ``before``: the kind and the fields it changed (the last-applied record aside)."""
    return [
        (kind, [line.split(":", 1)[0] for line in lines if LAST_APPLIED not in line])
        for kind, _, lines in loop.updates[before:]
    ]


def _condition(loop: Loop, kind: str) -> Obj:
    """A condition of the status the API server stored, not just the one the hook answered."""
    found: Obj = next(c for c in loop.parent_stored["status"]["conditions"] if c["type"] == kind)
    return found


def _version(loop: Loop, kind: str, name: str) -> str:
    version: str = loop.kube.get(kind, name, loop.namespace)["metadata"]["resourceVersion"]
    return version


def _image(loop: Loop, kind: str, name: str) -> str:
    image: str = loop.kube.get(kind, name, loop.namespace)["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


def _idle_round_writes_nothing(loop: Loop) -> None:
    updates, status_writes = len(loop.updates), loop.status_writes
    phase = loop.round()["status"]["phase"]
    assert loop.updates[updates:] == [], f"no-op updates in phase {phase}"
    assert loop.status_writes == status_writes, f"a status write in an idle round, phase {phase}"


# A template change, and the record of the spec it was made from, in the same write.
TEMPLATE_WRITE = (".spec.template.", f".metadata.annotations.{names.TEMPLATE_INPUTS_ANNOTATION}")
SHARD_ONLY_CHANGES = {
    "dbImage": {"dbImage": "postgres:17"},
    # A quantity spelled unlike the server's 1Gi: the rollout must still end in a fixed point.
    "db.resources": {"db": {"resources": {"requests": {"memory": "1024Mi"}}}},
}


@pytest.mark.parametrize("change", SHARD_ONLY_CHANGES.values(), ids=SHARD_ONLY_CHANGES.keys())
def test_shard_only_change_rolls_the_statefulset_template_once_and_leaves_the_cache(loop: Loop, change: Obj) -> None:
    cache_version = _version(loop, "Deployment", "demo-cache")
    available_since = _condition(loop, "Available")["lastTransitionTime"]
    before = len(loop.updates)
    loop.edit(change)
    loop.round()
    ((kind, fields),) = _updates_since(loop, before)
    assert kind == "StatefulSet"
    assert fields, "the update changed nothing but the last-applied record"
    assert all(field.startswith(TEMPLATE_WRITE) for field in fields), fields
    assert any(field.startswith(".spec.template.") for field in fields), fields
    progressing = _condition(loop, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "RollingUpdate")
    assert progressing["message"] == "0/3 shards updated"

    for updated in (1, 2):  # one shard at a time is replaced: that one is not ready
        loop.world.roll_statefulset(updated=updated)
        loop.round()
        progressing, available = _condition(loop, "Progressing"), _condition(loop, "Available")
        assert (progressing["status"], progressing["reason"]) == ("True", "RollingUpdate")
        assert progressing["message"] == f"{updated}/3 shards updated"
        assert (available["status"], available["lastTransitionTime"]) == ("True", available_since)
        assert _condition(loop, "Degraded")["status"] == "False"
    loop.world.run_statefulset()
    loop.round()
    progressing = _condition(loop, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "Complete")
    assert loop.parent_stored["status"]["updatedShards"] == 3
    assert _condition(loop, "Available")["lastTransitionTime"] == available_since

    assert len(loop.updates) == before + 1, _updates_since(loop, before)
    assert _version(loop, "Deployment", "demo-cache") == cache_version, "the cache Deployment was written"
    _idle_round_writes_nothing(loop)


def test_cache_only_change_rolls_the_deployment_template_once_then_writes_nothing(loop: Loop) -> None:
    shards_version = _version(loop, "StatefulSet", "demo-db")
    before = len(loop.updates)
    loop.edit({"cache": {"image": "redis:8"}})
    loop.round()
    ((kind, fields),) = _updates_since(loop, before)
    assert kind == "Deployment"
    assert fields, "the update changed nothing but the last-applied record"
    assert all(field.startswith(TEMPLATE_WRITE) for field in fields), fields
    assert any(field.startswith(".spec.template.") for field in fields), fields
    assert _image(loop, "Deployment", "demo-cache") == "redis:8"
    progressing = _condition(loop, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "RollingUpdate")

    loop.world.run_cache()
    loop.round()
    progressing = _condition(loop, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "Complete")
    assert _condition(loop, "Available")["status"] == "True"
    assert len(loop.updates) == before + 1, _updates_since(loop, before)
    assert _version(loop, "StatefulSet", "demo-db") == shards_version, "the StatefulSet was written"
    _idle_round_writes_nothing(loop)


def test_cache_template_waits_until_every_shard_is_rolled_ready_and_registered(loop: Loop) -> None:
    cache_version = _version(loop, "Deployment", "demo-cache")
    before = len(loop.updates)
    loop.edit({"dbImage": "postgres:17", "cache": {"image": "redis:8"}})
    loop.round()
    assert [kind for kind, _ in _updates_since(loop, before)] == ["StatefulSet"]
    assert _condition(loop, "Progressing")["message"] == "0/3 shards updated; the cache rolls after them"

    holds = (  # (stage, shards on the new template, shards ready, shards registered: None for the ready ones)
        ("one shard updated", 1, 2, None),
        ("two shards updated", 2, 2, None),
        ("every shard updated, one not ready", 3, 2, None),
        ("every shard ready, one not registered", 3, 3, {0, 1}),
    )
    for stage, updated, ready, registered in holds:
        loop.world.roll_statefulset(updated=updated, ready=ready)
        if registered is not None:
            loop.world.publish_endpoints(only=registered)
        loop.round()
        assert _version(loop, "Deployment", "demo-cache") == cache_version, f"the cache was written: {stage}"
        assert _image(loop, "Deployment", "demo-cache") == "redis:7", stage
        assert _condition(loop, "Progressing")["status"] == "True", stage
        assert _condition(loop, "Available")["status"] == "True", stage
    assert len(loop.updates) == before + 1, _updates_since(loop, before)

    loop.world.publish_endpoints()
    loop.round()
    ((kind, fields),) = _updates_since(loop, before + 1)
    assert kind == "Deployment"
    assert all(field.startswith(TEMPLATE_WRITE) for field in fields), fields
    assert any(field.startswith(".spec.template.") for field in fields), fields
    assert _image(loop, "Deployment", "demo-cache") == "redis:8"
    loop.world.run_cache()
    loop.round()
    assert _condition(loop, "Progressing")["reason"] == "Complete"
    assert len(loop.updates) == before + 2, _updates_since(loop, before)
    _idle_round_writes_nothing(loop)


# --- deletion ------------------------------------------------------------------------------


def _scaled_to_zero_pods_terminating(loop: Loop, workload: Obj | None, component: str) -> None:
    """The controller has taken the replicas to zero; the pods are Terminating, their preStop still running."""
    assert workload is not None
    workload["status"] = {**workload.get("status", {}), "replicas": 0, "readyReplicas": 0, "availableReplicas": 0}
    assert loop.world.terminate_pods(component)


def test_deleting_a_paused_sharddb_flushes_the_cache_before_the_shards_stop(loop: Loop) -> None:
    loop.edit({"paused": True})
    loop.round()
    before = len(loop.updates)
    loop.delete()

    assert loop.round()["status"]["phase"] == "DrainingCache"
    for kind, name in (
        ("PodDisruptionBudget", "demo-db"),
        ("PodDisruptionBudget", "demo-cache"),
        ("Service", "demo-cache"),
    ):
        assert not loop.kube.exists(kind, name, loop.namespace), f"{kind}/{name} outlived the cache"
    assert loop.kube.get("Deployment", "demo-cache", loop.namespace)["spec"]["replicas"] == 0
    assert loop.kube.get("StatefulSet", "demo-db", loop.namespace)["spec"]["replicas"] == 3

    _scaled_to_zero_pods_terminating(loop, loop.world.cache(), "cache")  # flushing
    answer = loop.round()
    assert (answer["status"]["phase"], answer["finalized"]) == ("DrainingCache", False)
    assert loop.kube.get("StatefulSet", "demo-db", loop.namespace)["spec"]["replicas"] == 3

    loop.world.remove_pods("cache")
    answer = loop.round()
    assert (answer["status"]["phase"], answer["finalized"]) == ("DrainingShards", False)
    assert loop.kube.get("StatefulSet", "demo-db", loop.namespace)["spec"]["replicas"] == 0
    assert loop.kube.exists("ShardDB", "demo", loop.namespace)

    _scaled_to_zero_pods_terminating(loop, loop.world.statefulset(), "db")  # draining
    answer = loop.round()
    assert (answer["status"]["phase"], answer["finalized"]) == ("DrainingShards", False)
    assert loop.kube.exists("ShardDB", "demo", loop.namespace)

    loop.world.remove_pods("db")
    assert loop.round()["finalized"] is True
    assert not loop.kube.exists("ShardDB", "demo", loop.namespace)
    teardown = _updates_since(loop, before)
    assert teardown == [("Deployment", [".spec.replicas"]), ("StatefulSet", [".spec.replicas"])]


def _hibernate(loop: Loop) -> None:
    loop.edit({"hibernated": True})
    for _ in range(8):
        if loop.round()["status"]["phase"] == "Hibernated":
            return
        loop.world.run_cache()
        loop.world.remove_pods("cache")
        loop.world.run_statefulset()
    raise AssertionError(f"not Hibernated: {loop.answers[-1]['status']}")


def test_deleting_a_hibernated_sharddb_finalizes_at_once_and_writes_no_child(loop: Loop) -> None:
    _hibernate(loop)
    stored = _stored(loop)
    updates = len(loop.updates)
    loop.delete()
    answer = loop.round()
    assert (answer["status"]["phase"], answer["finalized"]) == ("Finalized", True)
    assert not loop.kube.exists("ShardDB", "demo", loop.namespace)
    assert loop.updates[updates:] == []
    assert _stored(loop) == stored, "a child was written or deleted on the way out"


def test_a_change_waiting_in_a_paused_sharddb_is_not_rolled_out_by_its_deletion(loop: Loop) -> None:
    """Teardown never restarts a shard on a new template (a new major version on old data would crash)."""
    loop.edit({"paused": True})
    loop.round()
    loop.edit({"paused": True, "dbImage": "postgres:17", "cache": {**SPEC["cache"], "image": "redis:8"}})
    loop.round()
    before = len(loop.updates)
    loop.delete()
    loop.round()
    _scaled_to_zero_pods_terminating(loop, loop.world.cache(), "cache")
    loop.world.remove_pods("cache")
    assert loop.round()["status"]["phase"] == "DrainingShards"
    teardown = _updates_since(loop, before)
    assert teardown == [("Deployment", [".spec.replicas"]), ("StatefulSet", [".spec.replicas"])]
    stored = loop.kube.get("StatefulSet", "demo-db", loop.namespace)
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == SPEC["dbImage"]


def test_a_change_made_while_hibernating_waits_for_the_wake(loop: Loop) -> None:
    loop.edit({"hibernated": True})
    loop.round()
    before = len(loop.updates)
    loop.edit({"hibernated": True, "dbImage": "postgres:17"})
    loop.round()
    assert all(kind != "StatefulSet" or fields == [".spec.replicas"] for kind, fields in _updates_since(loop, before))
    stored = loop.kube.get("StatefulSet", "demo-db", loop.namespace)
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == SPEC["dbImage"]
