"""Properties of the honest status over generated worlds: lost nodes, refused pods, refused children.

Each world is an Available ShardDB (the stand-in World's) with some of its pods on lost nodes
(in one of the shapes Kubernetes 1.34 writes), some shard pods the StatefulSet controller could
not create, maybe its StatefulSet refused, maybe deleted, at a clock before or after the grace.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hooks import handler
from testbed.models.world import World, bring_up, sharddb

from ..support.hook import at, direct
from ..support.worlds import after, evict_by_taint, mark_not_ready

Obj = dict[str, Any]
SHAPES = ("not-ready", "evicted", "node-lost", "pod-gc")


@dataclass
class Case:
    request: Obj
    finalize: bool
    now: str
    healthy_children: list[Obj]


def _lose(pod: Obj, node: str, shape: str) -> None:
    if shape == "node-lost":
        pod["spec"]["nodeName"] = node
        pod["status"]["reason"] = "NodeLost"
        return
    mark_not_ready(pod, node, after(3600))
    if shape == "evicted":
        evict_by_taint(pod, after(3900))
    elif shape == "pod-gc":
        pod["status"]["conditions"].append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists",
                "lastTransitionTime": after(3900),
            }
        )
        pod["status"]["phase"] = "Failed"
        pod["metadata"]["deletionTimestamp"] = after(3900)


_AVAILABLE = World(sharddb("demo"))
_HEALTHY = bring_up(_AVAILABLE, direct)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    world = copy.deepcopy(_AVAILABLE)
    for name in sorted(world.pods):
        if draw(st.integers(0, 3)) == 0:
            _lose(world.pods[name], draw(st.sampled_from(["node-2", "node-3"])), draw(st.sampled_from(SHAPES)))
    sts = world.statefulset()
    assert sts is not None
    missing = draw(st.sets(st.integers(0, 2), max_size=3))
    for ordinal in missing:
        world.pods.pop(f"demo-db-{ordinal}", None)
    counted = draw(st.booleans())  # the StatefulSet controller has tried, and counts fewer pods
    if missing and counted:
        sts["status"]["replicas"] = 3 - len(missing)
    if draw(st.integers(0, 4)) == 0:
        del world.children["StatefulSet.apps/v1"]
    if draw(st.integers(0, 4)) == 0:
        world.delete()
    now = after(draw(st.sampled_from([10, 119, 120, 3700, 4000, 10_000])))
    return Case(world.request(), world.finalizing, now, _HEALTHY["children"])


def _run(request: Obj, finalize: bool, now: str) -> Obj:
    body: Obj = handler.sync(json.dumps(request).encode(), finalize=finalize, now=at(now)).body
    return body


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(cases())
def test_the_same_request_at_the_same_clock_gets_the_same_bytes(case: Case) -> None:
    first = _run(case.request, case.finalize, case.now)
    assert json.dumps(first) == json.dumps(_run(case.request, case.finalize, case.now))


@PROPERTY
@given(cases())
def test_fed_its_own_status_the_hook_says_the_same(case: Case) -> None:
    body = _run(case.request, case.finalize, case.now)
    again = copy.deepcopy(case.request)
    again["parent"]["status"] = {**body["status"], "observedGeneration": again["parent"]["metadata"]["generation"]}
    assert _run(again, case.finalize, case.now)["status"] == body["status"]


@PROPERTY
@given(cases())
def test_a_lost_node_or_a_missing_pod_never_changes_or_deletes_a_child(case: Case) -> None:
    if case.finalize or "StatefulSet.apps/v1" not in case.request["children"]:
        return  # a teardown's children follow its own order; a missing StatefulSet is asked for again
    assert _run(case.request, case.finalize, case.now)["children"] == case.healthy_children
