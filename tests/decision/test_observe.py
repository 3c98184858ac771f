"""Reading Metacontroller's request: key styles, missing groups, discovery and pods."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hooks.hook_request import decode_sync
from hooks.observe import observe
from hooks.snapshot import Snapshot
from hooks.spec import ShardDBSpec
from testbed.models.world import Obj, World, bring_up, sharddb

from ..support.hook import direct


def snap(request: Obj) -> Snapshot:
    parsed = decode_sync(json.dumps(request).encode())
    return observe(parsed, ShardDBSpec.model_validate(parsed.parent.spec))


def available_world(hook_version: str = "v2") -> World:
    world = World(sharddb(), hook_version=hook_version)
    bring_up(world, direct)
    return world


@pytest.mark.parametrize("hook_version", ["v1", "v2"])
def test_both_object_key_styles_read_the_same(hook_version: str) -> None:
    seen = snap(available_world(hook_version).request())
    assert seen.statefulset is not None
    assert seen.cache is not None
    assert seen.service
    assert seen.registered == frozenset({0, 1, 2})
    assert [job.shards for job in seen.seed_jobs] == [3]


def test_v1_and_v2_requests_get_identical_answers() -> None:
    assert direct(available_world("v1").request(), False) == direct(available_world("v2").request(), False)


@pytest.mark.parametrize("empty", [None, {}, "missing"])
def test_missing_or_empty_groups_are_empty(empty: Any) -> None:
    request = World().request()
    for key in ("children", "related"):
        if empty == "missing":
            del request[key]
        else:
            request[key] = empty
    seen = snap(request)
    assert seen.statefulset is None
    assert seen.registered == frozenset()


def test_null_group_inside_children_is_empty() -> None:
    request = available_world().request()
    request["children"]["Deployment.apps/v1"] = None
    assert snap(request).cache is None


def test_endpoint_with_ready_unset_counts_as_registered() -> None:
    world = World()
    bring_up(world, direct)
    world.publish_endpoints(ready_unset=True)
    assert snap(world.request()).registered == frozenset({0, 1, 2})


def test_endpoint_not_ready_is_not_registered() -> None:
    world = available_world()
    world.run_statefulset(ready=2)
    assert snap(world.request()).registered == frozenset({0, 1})


def test_endpoints_of_another_service_are_ignored() -> None:
    world = available_world()
    for endpoint_slice in world.slices.values():
        endpoint_slice["metadata"]["labels"]["kubernetes.io/service-name"] = "other-db"
    assert snap(world.request()).registered == frozenset()


def test_terminating_pods_still_count() -> None:
    world = available_world()
    world.terminate_pods("cache")
    assert snap(world.request()).cache_pods == 2


def test_finished_pods_being_torn_down_count_until_they_are_gone() -> None:
    world = available_world()
    world.terminate_pods("cache")
    for pod in world.pods.values():
        pod["status"]["phase"] = "Succeeded"  # a kubelet's last word on a deleted pod, before it removes it
    assert snap(world.request()).cache_pods == 2


def test_finished_pods_do_not_count() -> None:
    world = available_world()
    for pod in world.pods.values():
        pod["status"]["phase"] = "Failed"
    seen = snap(world.request())
    assert (seen.cache_pods, seen.shard_pods) == (0, 0)


def test_pods_of_another_instance_do_not_count() -> None:
    world = available_world()
    for pod in world.pods.values():
        pod["metadata"]["labels"]["app.kubernetes.io/instance"] = "other"
    assert snap(world.request()).shard_pods == 0


def test_jobs_that_are_not_seed_jobs_are_ignored() -> None:
    world = available_world()
    job = world.job(3)
    assert job is not None
    job["metadata"]["name"] = "demo-seed-03"
    assert snap(world.request()).seed_jobs == ()


def test_seeded_count_is_read_from_the_statefulset_annotation() -> None:
    world = available_world()
    sts = world.statefulset()
    assert sts is not None
    assert sts["metadata"]["annotations"]["mygroup.example.com/seeded-shards"] == "3"
    assert snap(world.request()).statefulset.seeded_annotation == 3  # type: ignore[union-attr]


def test_seeded_count_is_read_from_the_parent_status() -> None:
    world = available_world()
    world.parent["status"]["seededShards"] = 7
    assert snap(world.request()).prior_seeded == 7


def test_prior_conditions_are_read_from_the_parent_status() -> None:
    world = available_world()
    seen = snap(world.request())
    assert [c.type for c in seen.prior_conditions] == ["Available", "Progressing", "Degraded"]


def test_the_generation_the_last_answer_saw_is_the_oldest_its_status_names() -> None:
    world = available_world()
    world.parent["status"].update(observedGeneration=4, unrecordedGeneration=2)
    for condition in world.parent["status"]["conditions"]:
        condition["observedGeneration"] = 4
    assert snap(world.request()).answered_generation == 2


def test_a_status_naming_no_generation_says_nothing_of_the_last_answer() -> None:
    world = available_world()
    world.parent["status"] = {"observedGeneration": "4", "conditions": [{"observedGeneration": True}, "junk"]}
    assert snap(world.request()).answered_generation is None


def test_unreadable_prior_status_is_ignored_not_refused() -> None:
    world = available_world()
    world.parent["status"] = {"seededShards": "many", "conditions": [{"type": 1}, "junk"]}
    seen = snap(world.request())
    assert (seen.prior_seeded, seen.prior_conditions) == (0, ())
