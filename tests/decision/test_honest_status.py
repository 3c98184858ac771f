"""What admission refuses and what a node's loss hides, named in the status with where to read why.

Requests are Metacontroller's shape (the stand-in World's), with the pods and StatefulSet
statuses written as Kubernetes 1.34 writes them: the StatefulSet controller's count after a
refused create, the node lifecycle controller's ``MarkPodsNotReady`` (Ready False alone), the
taint manager's and pod GC's ``DisruptionTarget``, the scheduler's ``FitError`` message.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from hooks import handler
from hooks.errors import HookError
from hooks.service.etags import etag
from hooks.service.refusals import http_status
from testbed.models.world import World, bring_up, sharddb, step

from ..support.hook import at, direct, moment
from ..support.worlds import CREATED, after, evict_by_taint, mark_not_ready

Obj = dict[str, Any]
GRACE = 120  # the default spec.podStartGraceSeconds


def answer(world: World, now: str) -> Obj:
    body: Obj = handler.sync(json.dumps(world.request()).encode(), finalize=world.finalizing, now=at(now)).body
    return body


def outcome(world: World, now: str) -> handler.Outcome:
    return handler.sync(json.dumps(world.request()).encode(), finalize=world.finalizing, now=at(now))


def condition(body: Obj, kind: str) -> Obj:
    found: Obj = next(c for c in body["status"]["conditions"] if c["type"] == kind)
    return found


def quota_world() -> World:
    """A new 3-shard ShardDB whose StatefulSet controller could create only two pods: a quota refused demo-db-1."""
    world = World(sharddb("demo"))
    step(world, direct)
    world.run_statefulset(ready=2)
    del world.pods["demo-db-1"]
    sts = world.statefulset()
    assert sts is not None
    sts["status"].update(replicas=2, readyReplicas=2, availableReplicas=2)
    return world


# --- a shard pod that admission refused -----------------------------------------------------


def test_a_shard_pod_refused_by_a_quota_is_named_in_degraded_after_the_grace() -> None:
    degraded = condition(answer(quota_world(), after(GRACE)), "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "ShardPodsMissing")
    assert degraded["message"] == (
        "shard pod demo-db-1 does not exist 120 s after the StatefulSet asked for it: "
        "read `kubectl describe statefulset demo-db` (its FailedCreate events)"
    )


def test_a_shard_pod_not_created_within_the_grace_is_progress_that_says_so() -> None:
    body = answer(quota_world(), after(10))
    assert condition(body, "Degraded")["status"] == "False"
    assert condition(body, "Progressing")["message"] == "2/3 shards ready; 1 shard pod waiting to be created: demo-db-1"


def test_a_shard_pod_not_created_asks_to_be_called_when_its_grace_runs_out() -> None:
    assert answer(quota_world(), after(10))["resyncAfterSeconds"] == GRACE - 10


def test_the_etag_of_an_answer_with_a_missing_pod_carries_the_grace() -> None:
    assert outcome(quota_world(), after(10)).fresh_until == moment(after(GRACE))


def test_a_missing_pods_grace_counts_from_the_statefulsets_last_spec_write() -> None:
    world = quota_world()
    sts = world.statefulset()
    assert sts is not None
    sts["metadata"]["managedFields"].append(
        {"manager": "metacontroller", "operation": "Update", "time": after(100), "fieldsType": "FieldsV1"}
    )
    sts["metadata"]["managedFields"].append(
        {"manager": "kube-controller-manager", "operation": "Update", "time": after(500), "subresource": "status"}
    )
    assert condition(answer(world, after(GRACE + 50)), "Degraded")["status"] == "False"
    assert condition(answer(world, after(GRACE + 100)), "Degraded")["reason"] == "ShardPodsMissing"


def test_a_pod_absent_while_its_statefulset_controller_has_not_counted_yet_is_not_missing() -> None:
    """A pod deleted a moment ago (a rollout, an eviction): the controller still counts every replica."""
    world = World(sharddb("demo"))
    bring_up(world, direct)
    del world.pods["demo-db-1"]
    assert "missing" not in condition(answer(world, after(10_000)), "Degraded")["reason"].lower()


def test_a_scale_up_the_statefulset_controller_has_not_seen_is_not_missing() -> None:
    world = quota_world()
    sts = world.statefulset()
    assert sts is not None
    sts["metadata"]["generation"] = 2
    assert condition(answer(world, after(GRACE)), "Degraded")["reason"] != "ShardPodsMissing"


def test_missing_pods_are_named_by_ordinal_three_then_counted() -> None:
    world = World(sharddb("demo", shards=6))
    step(world, direct)
    world.run_statefulset(ready=1)
    for ordinal in range(1, 6):
        del world.pods[f"demo-db-{ordinal}"]
    sts = world.statefulset()
    assert sts is not None
    sts["status"].update(replicas=1)
    message = condition(answer(world, after(GRACE)), "Degraded")["message"]
    assert message.startswith("shard pods demo-db-1, demo-db-2, demo-db-3 and 2 more do not exist 120 s after")


def test_a_missing_pod_never_changes_a_child() -> None:
    world = quota_world()
    before = answer(world, after(10))["children"]
    assert answer(world, after(GRACE))["children"] == before


def test_a_missing_pods_status_is_a_fixed_point() -> None:
    world = quota_world()
    first = answer(world, after(GRACE))
    world.apply(first)
    assert answer(world, after(GRACE + 3600))["status"] == first["status"]


# --- a child that admission refused ---------------------------------------------------------


def refused_world() -> World:
    """The hooks answered, Metacontroller's create of the StatefulSet was refused: no child exists."""
    world = World(sharddb("demo"))
    world.apply(answer(world, after(1)))
    world.children.clear()
    return world


def test_a_statefulset_never_created_is_named_in_degraded_after_the_grace() -> None:
    degraded = condition(answer(refused_world(), after(GRACE)), "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "ChildrenMissing")
    assert degraded["message"] == (
        "StatefulSet demo-db and Service demo-db do not exist 120 s after the ShardDB was created: "
        "read the ShardDB's events (`kubectl describe sharddb demo`: SyncError)"
    )


def test_a_child_not_created_within_the_grace_changes_nothing_yet() -> None:
    assert condition(answer(refused_world(), after(GRACE - 1)), "Degraded")["status"] == "False"


def test_a_missing_child_asks_to_be_called_when_its_grace_runs_out() -> None:
    """Metacontroller retries a refused create, but with a growing back-off: the hooks ask for the call."""
    assert answer(refused_world(), after(10))["resyncAfterSeconds"] == GRACE - 10


def test_a_first_answer_asks_for_no_call_though_no_child_exists_yet() -> None:
    assert "resyncAfterSeconds" not in answer(World(sharddb("demo")), after(10))


def test_the_etag_of_an_answer_with_a_missing_child_carries_the_grace() -> None:
    found = outcome(refused_world(), after(10))
    assert found.fresh_until == moment(after(GRACE))
    assert etag("d", found.fresh_until).endswith(f'-{int(moment(after(GRACE)).timestamp())}"')


def test_only_the_missing_child_is_named() -> None:
    world = World(sharddb("demo"))
    world.apply(answer(world, after(1)))
    del world.children["StatefulSet.apps/v1"]
    assert condition(answer(world, after(GRACE)), "Degraded")["message"].startswith("StatefulSet demo-db does not")


def test_a_paused_sharddb_creates_nothing_so_calls_no_child_missing() -> None:
    world = World(sharddb("demo", paused=True))
    assert condition(answer(world, after(10_000)), "Degraded")["status"] == "False"


def test_a_missing_child_is_asked_for_again_never_deleted_or_changed() -> None:
    kinds = sorted(child["kind"] for child in answer(refused_world(), after(GRACE))["children"])
    assert kinds == ["PodDisruptionBudget", "Service", "StatefulSet"]


def test_a_missing_childs_status_is_a_fixed_point() -> None:
    world = refused_world()
    first = answer(world, after(GRACE))
    world.parent["status"] = {**first["status"], "observedGeneration": 1}
    assert answer(world, after(GRACE))["status"] == first["status"]


def test_a_sharddb_without_a_creation_time_calls_no_child_missing() -> None:
    world = refused_world()
    del world.parent["metadata"]["creationTimestamp"]
    assert condition(answer(world, after(10_000)), "Degraded")["status"] == "False"


# --- a pod whose node is lost ---------------------------------------------------------------


def lost_node_world(finalizing: bool = False) -> World:
    world = World(sharddb("demo"))
    bring_up(world, direct)
    cache_pod = sorted(name for name in world.pods if name.startswith("demo-cache-"))[0]
    for name in ("demo-db-1", cache_pod):
        mark_not_ready(world.pods[name], "node-2", after(3600))
    if finalizing:
        world.delete()
    return world


def test_pods_on_a_lost_node_are_named_with_the_node_and_the_condition_that_says_so() -> None:
    world = lost_node_world()
    cache_pod = sorted(name for name in world.pods if name.startswith("demo-cache-"))[0]
    degraded = condition(answer(world, after(3700)), "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "NodeLost")
    assert degraded["message"].startswith(
        "node node-2 is lost, as its pods show (Ready=False while its containers are ready: the node controller's "
        f"mark of a node that stopped reporting): on it shard demo-db-1, cache {cache_pod}; "
        "read `kubectl describe node node-2`"
    )


def test_a_pod_evicted_by_the_taint_manager_on_a_lost_node_is_still_named() -> None:
    world = lost_node_world()
    evict_by_taint(world.pods["demo-db-1"], after(3900))
    assert "shard demo-db-1" in condition(answer(world, after(3950)), "Degraded")["message"]


def test_a_pod_with_the_reason_node_lost_is_on_a_lost_node() -> None:
    world = World(sharddb("demo"))
    bring_up(world, direct)
    world.pods["demo-db-2"]["status"]["reason"] = "NodeLost"
    assert "status.reason NodeLost" in condition(answer(world, after(3600)), "Degraded")["message"]


def test_a_pod_not_ready_by_its_own_kubelet_is_not_on_a_lost_node() -> None:
    world = World(sharddb("demo"))
    bring_up(world, direct)
    for item in world.pods["demo-db-1"]["status"]["conditions"]:
        if item["type"] in ("Ready", "ContainersReady"):
            item["status"] = "False"
    assert "node" not in condition(answer(world, after(3600)), "Degraded")["message"]


def test_a_lost_node_deletes_or_changes_no_child() -> None:
    world = World(sharddb("demo"))
    healthy = bring_up(world, direct)["children"]
    mark_not_ready(world.pods["demo-db-1"], "node-2", after(3600))
    assert answer(world, after(3700))["children"] == healthy


def test_a_deletion_blocked_by_a_cache_pod_on_a_lost_node_says_what_blocks_it_and_what_to_do() -> None:
    world = lost_node_world(finalizing=True)
    cache_pod = sorted(name for name in world.pods if name.startswith("demo-cache-"))[0]
    evict_by_taint(world.pods[cache_pod], after(3900))
    body = answer(world, after(4000))
    progressing = condition(body, "Progressing")
    assert progressing["reason"] == "DrainingCache"
    assert f"; {cache_pod} is on node node-2, which is lost (Ready=False" in progressing["message"]
    assert progressing["message"].endswith(
        "once the node is known to be gone, taint it `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute` "
        "or `kubectl delete pod <pod> --grace-period=0 --force`"
    )
    assert body["finalized"] is False


def test_a_deletion_names_only_the_lost_pods_of_the_step_it_waits_on() -> None:
    world = World(sharddb("demo"))
    bring_up(world, direct)
    mark_not_ready(world.pods["demo-db-1"], "node-2", after(3600))
    world.delete()
    message = condition(answer(world, after(3700)), "Progressing")["message"]
    assert message.startswith("waiting for 2 cache pods to flush and exit")
    assert "demo-db-1" not in message


def test_a_lost_nodes_status_is_a_fixed_point() -> None:
    world = lost_node_world()
    first = answer(world, after(3700))
    world.parent["status"] = {**first["status"], "observedGeneration": 1}
    assert answer(world, after(7200))["status"] == first["status"]


# --- a pod that waits for its volume's node -----------------------------------------------------

DRAINED = (
    "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match PersistentVolume's node "
    "affinity. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)
VOLUME_ELSEWHERE = (
    "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 2 node(s) "
    "didn't match PersistentVolume's node affinity. preemption: 0/3 nodes are available: 3 Preemption is not "
    "helpful for scheduling."
)
CORDONED_ONLY = (
    "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: "
    "1 Preemption is not helpful for scheduling."
)


def waiting_world(message: str) -> World:
    """An Available ShardDB whose shard demo-db-1 was evicted by a drain and waits Pending."""
    world = World(sharddb("demo"))
    bring_up(world, direct)
    world.fail_pod("demo-db-1", "Unschedulable", since=after(3600))
    scheduled = next(c for c in world.pods["demo-db-1"]["status"]["conditions"] if c["type"] == "PodScheduled")
    scheduled["message"] = message
    return world


@pytest.mark.parametrize(
    ("message", "waits"),
    [
        (DRAINED, "for its volume's node, which is cordoned"),
        (VOLUME_ELSEWHERE, "for its volume's node"),
        (CORDONED_ONLY, "to be scheduled, with a node cordoned"),
    ],
    ids=["drained", "volume-elsewhere", "cordoned"],
)
def test_a_shard_waiting_for_its_node_says_what_the_scheduler_says_of_it(message: str, waits: str) -> None:
    progressing = condition(answer(waiting_world(message), after(3610)), "Progressing")
    assert progressing["message"].endswith(f"1 shard pod waiting {waits}: demo-db-1")


def test_a_shard_waiting_for_a_cordoned_node_is_not_damage_within_the_grace() -> None:
    assert condition(answer(waiting_world(DRAINED), after(3610)), "Degraded")["reason"] != "ShardPodsFailing"


def test_a_shard_waiting_for_a_cordoned_node_past_the_grace_is_named_with_the_schedulers_words() -> None:
    degraded = condition(answer(waiting_world(DRAINED), after(3600 + GRACE)), "Degraded")
    assert "demo-db-1: Unschedulable (0/3 nodes are available: 1 node(s) were unschedulable" in degraded["message"]


def test_the_words_past_the_short_detail_still_class_the_wait() -> None:
    """The detail is cut at 120 characters; the class is read from the whole message."""
    long_prefix = "0/3 nodes are available: " + "1 node(s) had untolerated taint {example.com/very-long-key: }, " * 2
    world = waiting_world(
        long_prefix + "1 node(s) were unschedulable, 2 node(s) didn't match PersistentVolume's node affinity."
    )
    assert condition(answer(world, after(3610)), "Progressing")["message"].endswith(
        "waiting for its volume's node, which is cordoned: demo-db-1"
    )


def test_a_request_with_a_pod_node_name_that_is_no_string_is_refused_with_4xx() -> None:
    world = World(sharddb("demo"))
    bring_up(world, direct)
    request = copy.deepcopy(world.request())
    next(iter(request["related"]["Pod.v1"].values()))["spec"]["nodeName"] = 7
    with pytest.raises(HookError) as refused:
        handler.sync(json.dumps(request).encode(), finalize=False, now=at(after(1)))
    assert 400 <= http_status(refused.value) < 500
    assert "nodeName" in refused.value.message


# --- cache pods the ReplicaSet could not create ------------------------------------------------

QUOTA = 'pods "demo-cache-7c9f4-" is forbidden: exceeded quota: q, requested: pods=1, used: pods=4, limited: pods=4'


def refused_cache_world(since: str = CREATED) -> World:
    """Shards up, seeded and registered; the cache Deployment's ReplicaSet was refused both its pods."""
    world = World(sharddb("demo"))
    for _ in range(6):
        step(world, direct)
        world.run_statefulset()
        for job in world.jobs():
            if not job["status"].get("conditions"):
                world.finish_job(3)
        if world.cache() is not None:
            break
    deployment = world.cache()
    assert deployment is not None
    failure = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": QUOTA}
    deployment["status"] = {"replicas": 0, "conditions": [{**failure, "lastTransitionTime": since}]}
    return world


def test_cache_pods_a_quota_refuses_are_named_with_the_replicasets_words_after_the_grace() -> None:
    degraded = condition(answer(refused_cache_world(), after(GRACE)), "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "CachePodsMissing")
    assert degraded["message"] == (
        f"cache pods cannot be created: {QUOTA}; read `kubectl describe deployment demo-cache` "
        "(its ReplicaFailure condition) and its ReplicaSet's FailedCreate events"
    )


def test_cache_pods_refused_within_the_grace_ask_to_be_called_when_it_runs_out() -> None:
    body = answer(refused_cache_world(), after(30))
    assert condition(body, "Degraded")["status"] == "False"
    assert body["resyncAfterSeconds"] == GRACE - 30


# --- a seed Job whose pod was refused ------------------------------------------------------------


def podless_seed_world(started: str = CREATED) -> World:
    """Shards ready: the seed Job exists and its controller started it; its pod was refused."""
    world = World(sharddb("demo"))
    step(world, direct)
    world.run_statefulset()
    step(world, direct)
    job = world.job(3)
    assert job is not None
    job["status"] = {"startTime": started, "active": 0}
    return world


def test_a_seed_job_whose_pod_is_refused_is_named_after_the_grace() -> None:
    degraded = condition(answer(podless_seed_world(), after(GRACE)), "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "SeedPodsMissing")
    assert degraded["message"] == (
        "seed Job demo-seed-3 has no pod 120 s after it started: "
        "read `kubectl describe job demo-seed-3` (its FailedCreate events)"
    )


def test_a_seed_job_whose_pod_is_observed_has_no_pod_missing() -> None:
    world = podless_seed_world()
    world.run_seed_pod(3)
    assert condition(answer(world, after(GRACE)), "Degraded")["reason"] != "SeedPodsMissing"


def test_a_seed_job_without_a_pod_within_the_grace_asks_to_be_called_when_it_runs_out() -> None:
    body = answer(podless_seed_world(), after(30))
    assert condition(body, "Degraded")["status"] == "False"
    assert body["resyncAfterSeconds"] == GRACE - 30


# --- the docs ---------------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize(
    "reason", ["ChildrenMissing", "ShardPodsMissing", "NodeLost", "SeedPodsMissing", "CachePodsMissing"]
)
def test_each_new_degraded_reason_is_listed_in_the_status_guide_and_the_runbooks(reason: str) -> None:
    section = (DOCS / "api" / "status.md").read_text().split("### Degraded", 1)[1].split("\n#", 1)[0]
    assert f"| `True` | `{reason}` |" in section
    assert f"| `{reason}` |" in (DOCS / "runbooks" / "index.md").read_text()
