"""The status the hooks return survives the API server unchanged: nothing pruned, nothing rewritten.

If any field were undeclared, the stored status would differ from the answer
and Metacontroller would write status on every sync, forever.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hooks.clock import rfc3339, system_clock
from tests.support.hook import ManualClock

from ..support.kube import Kube, error_message
from ..support.samples import SPEC
from .loop import Loop, hook

Obj = dict[str, Any]


def _hook_status(loop: Loop) -> Obj:
    """What the hook answers for the current stored world, plus Metacontroller's observedGeneration."""
    loop.world.parent = loop.parent_stored
    status: Obj = copy.deepcopy(hook(loop.world.request(), False)["status"])
    status["observedGeneration"] = loop.world.parent["metadata"]["generation"]
    return status


def test_available_status_put_through_status_round_trips_unchanged(available: Loop) -> None:
    status = _hook_status(available)
    assert status["phase"] == "Available"
    assert {c["type"] for c in status["conditions"]} == {"Available", "Progressing", "Degraded"}
    parent = available.parent_stored
    parent["status"] = status
    response = available.kube.put(parent, subresource="status")
    assert response.status_code == 200, error_message(response)
    assert available.parent_stored["status"] == status


def test_status_merge_patch_round_trips_unchanged(available: Loop) -> None:
    status = _hook_status(available)
    status["conditions"] = list(reversed(status["conditions"]))  # order is the answer's, not the server's
    response = available.kube.merge_patch("ShardDB", "demo", available.namespace, {"status": status}, "status")
    assert response.status_code == 200, error_message(response)
    assert available.parent_stored["status"] == status


def test_stored_status_is_a_fixed_point_of_the_hook(available: Loop) -> None:
    stored = available.parent_stored["status"]
    assert _hook_status(available) == stored


def test_resync_with_nothing_changed_writes_no_status(available: Loop) -> None:
    before = available.parent_stored["metadata"]["resourceVersion"]
    writes = available.status_writes
    available.round()
    available.round()
    assert available.status_writes == writes
    assert available.parent_stored["metadata"]["resourceVersion"] == before


def test_every_stage_status_round_trips(kube: Kube, namespace: str) -> None:
    loop = Loop(kube, namespace)
    loop.create(SPEC)
    loop.until("Available")  # each round asserts its /status write came back unchanged
    loop.delete()
    loop.round()
    phases = [answer["status"]["phase"] for answer in loop.answers]
    assert phases[0] == "Provisioning"
    assert {"Seeding", "StartingCache", "Available", "DrainingCache"} <= set(phases)
    assert loop.parent_stored["status"]["phase"] == "DrainingCache"


def test_status_written_with_the_spec_is_ignored(kube: Kube, namespace: str) -> None:
    loop = Loop(kube, namespace)
    loop.create(SPEC)
    parent = loop.parent_stored
    parent["status"] = {"phase": "Available", "cacheReady": True}
    response = kube.put(parent)
    assert response.status_code == 200, error_message(response)
    assert "status" not in loop.parent_stored


def test_status_with_an_undeclared_field_is_refused(available: Loop) -> None:
    status = {**_hook_status(available), "colour": "green"}
    response = available.kube.merge_patch("ShardDB", "demo", available.namespace, {"status": status}, "status")
    assert response.status_code in (400, 422), error_message(response)
    assert 'unknown field "status.colour"' in error_message(response)


@pytest.mark.parametrize("failure", ["ImagePullBackOff", "CrashLoopBackOff", "Unschedulable"])
def test_a_pod_that_cannot_start_costs_one_status_write_then_none(available: Loop, failure: str) -> None:
    updates = len(available.updates)
    available.world.fail_pod("demo-db-1", failure)
    available.round()
    degraded = next(c for c in available.parent_stored["status"]["conditions"] if c["type"] == "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "ShardPodsFailing")
    assert f"demo-db-1: {failure}" in degraded["message"]
    writes = available.status_writes
    for _ in range(3):
        available.round()
    assert available.status_writes == writes
    assert available.updates[updates:] == []  # and no child is touched


def _condition(loop: Loop, kind: str) -> Obj:
    found: Obj = next(c for c in loop.parent_stored["status"]["conditions"] if c["type"] == kind)
    return found


def test_a_new_shard_waiting_for_a_node_costs_one_status_write_and_one_more_when_its_grace_runs_out(
    available: Loop,
) -> None:
    clock = ManualClock(rfc3339(system_clock()))
    available.clock = clock
    available.edit({"shards": 4})
    available.round()
    available.world.run_statefulset(ready=3)
    available.world.fail_pod("demo-db-3", "Unschedulable", since=rfc3339(clock()))
    writes, updates = available.status_writes, len(available.updates)
    available.round()
    progressing = _condition(available, "Progressing")
    assert progressing["message"] == "3/4 shards ready; 1 shard pod waiting to be scheduled: demo-db-3"
    assert _condition(available, "Degraded")["status"] == "False"
    clock.advance(60)
    available.round()
    assert available.status_writes == writes + 1
    clock.advance(60)  # the grace of 120 s has run out, with no event
    available.round()
    degraded = _condition(available, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "ShardPodsFailing")
    assert degraded["message"].startswith("shard pods cannot start: demo-db-3: Unschedulable (0/3 nodes are available")
    available.round()
    assert available.status_writes == writes + 2
    assert available.updates[updates:] == []  # and no child is touched
