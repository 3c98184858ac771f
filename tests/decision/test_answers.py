"""The answers themselves: deterministic, a fixed point, apply-style objects."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from hooks import handler
from testbed.models.world import Obj, World, bring_up, sharddb, step

from ..support.hook import at, direct, moment


def answer(request: Obj, now: str = "2026-05-05T05:05:05Z", finalize: bool = False) -> Obj:
    return handler.sync(json.dumps(request).encode(), finalize=finalize, now=at(now)).body


def available_world(**spec: Any) -> World:
    world = World(sharddb(**spec))
    bring_up(world, direct)
    return world


def child(body: Obj, kind: str) -> Obj:
    return next(c for c in body["children"] if c["kind"] == kind)


def test_same_request_gives_the_same_bytes() -> None:
    request = available_world().request()
    first = answer(request)
    second = answer(request)
    assert json.dumps(first) == json.dumps(second)


def test_status_is_a_fixed_point() -> None:
    world = available_world()
    first = answer(world.request())
    world.parent["status"] = first["status"]
    assert answer(world.request(), now="2030-01-01T00:00:00Z")["status"] == first["status"]


def test_the_clock_is_read_once_per_call() -> None:
    world = available_world()
    world.run_statefulset(ready=2)  # every condition changes status: each is stamped, from one reading
    readings: list[datetime] = []

    def clock() -> datetime:
        readings.append(moment("2026-04-04T04:04:04Z"))
        return readings[-1]

    body = handler.sync(json.dumps(world.request()).encode(), finalize=False, now=clock).body
    assert len(readings) == 1
    assert {c["lastTransitionTime"] for c in body["status"]["conditions"]} == {"2026-04-04T04:04:04Z"}


def test_transition_time_moves_only_for_the_condition_that_flips() -> None:
    world = available_world()
    world.apply(answer(world.request(), now="2026-01-01T00:00:00Z"))
    world.run_statefulset(ready=2)  # a shard flaps
    body = answer(world.request(), now="2026-02-02T00:00:00Z")
    times = {c["type"]: c["lastTransitionTime"] for c in body["status"]["conditions"]}
    assert times["Degraded"] == "2026-02-02T00:00:00Z"
    assert times["Available"] == "2026-02-02T00:00:00Z"
    assert times["Progressing"] == "2026-02-02T00:00:00Z"
    world.apply(body)
    world.run_statefulset(ready=2)
    again = answer(world.request(), now="2026-03-03T00:00:00Z")
    assert {c["type"]: c["lastTransitionTime"] for c in again["status"]["conditions"]} == times


def test_conditions_carry_the_parent_generation() -> None:
    world = available_world()
    world.edit_spec(shards=4)
    generations = {c["observedGeneration"] for c in answer(world.request())["status"]["conditions"]}
    assert generations == {world.parent["metadata"]["generation"]}


def test_children_are_apply_style_desired_objects() -> None:
    for obj in answer(available_world().request())["children"]:
        assert set(obj) <= {"apiVersion", "kind", "metadata", "spec"}
        assert set(obj["metadata"]) <= {"name", "labels", "annotations"}


def test_children_carry_recommended_labels() -> None:
    for obj in answer(available_world().request())["children"]:
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "sharddb"
        assert labels["app.kubernetes.io/instance"] == "demo"
        assert labels["app.kubernetes.io/component"] in {"db", "cache", "seed"}


def test_image_upgrade_flows_to_the_statefulset() -> None:
    world = available_world()
    world.edit_spec(dbImage="postgres:17")
    sts = child(answer(world.request()), "StatefulSet")
    assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == "postgres:17"


def test_cache_image_upgrade_flows_to_the_deployment() -> None:
    world = available_world()
    world.edit_spec(cache={"image": "redis:8", "replicas": 2})
    deployment = child(answer(world.request()), "Deployment")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "redis:8"


def test_statefulset_keeps_volumes_on_delete_and_scale_down() -> None:
    sts = child(answer(World().request()), "StatefulSet")
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "1Gi"
    assert sts["spec"]["serviceName"] == "demo-db"


def test_storage_class_and_size_come_from_the_spec() -> None:
    world = World(sharddb(storage={"size": "20Gi", "storageClassName": "fast-ssd"}))
    claim = child(answer(world.request()), "StatefulSet")["spec"]["volumeClaimTemplates"][0]["spec"]
    assert claim["resources"]["requests"]["storage"] == "20Gi"
    assert claim["storageClassName"] == "fast-ssd"


def test_shard_pods_probe_the_db_port_and_drain_before_stopping() -> None:
    world = World(sharddb(drainCommand=["/bin/drain", "--wait"], drainGracePeriodSeconds=120))
    pod = child(answer(world.request()), "StatefulSet")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["ports"][0]["containerPort"] == 5432
    assert container["readinessProbe"]["tcpSocket"]["port"] == "db"
    assert container["lifecycle"]["preStop"]["exec"]["command"] == ["/bin/drain", "--wait"]
    assert pod["terminationGracePeriodSeconds"] == 120


def test_cache_pods_flush_before_stopping() -> None:
    world = available_world(cache={"image": "redis:7", "replicas": 2, "flushCommand": ["flush"]})
    pod = child(answer(world.request()), "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"] == ["flush"]
    assert pod["terminationGracePeriodSeconds"] == 30


def test_seed_job_runs_the_seed_command_for_its_shard_count() -> None:
    world = World(sharddb(seedCommand=["seed", "--all"]))
    step(world, direct)
    world.run_statefulset()
    job = child(answer(world.request()), "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert job["metadata"]["name"] == "demo-seed-3"
    assert container["command"] == ["seed", "--all"]
    assert {"name": "SHARDDB_SHARDS", "value": "3"} in container["env"]


def test_scale_up_does_not_restart_existing_shards() -> None:
    world = available_world()
    before = child(answer(world.request()), "StatefulSet")["spec"]["template"]
    world.edit_spec(shards=6)
    after = child(answer(world.request()), "StatefulSet")["spec"]["template"]
    assert before == after


def test_finalize_answer_says_whether_it_is_finalized_and_asks_for_a_resync() -> None:
    world = available_world()
    world.delete()
    body = answer(world.request(), finalize=True)
    assert body["finalized"] is False
    assert body["resyncAfterSeconds"] > 0


def test_sync_answer_has_no_finalized_field() -> None:
    assert "finalized" not in answer(World().request())


def test_customize_watches_discovery_and_pods_of_this_sharddb() -> None:
    body = handler.customize(json.dumps({"parent": sharddb("shop")}).encode())
    resources = {r["resource"]: r for r in body["relatedResources"]}
    assert resources["endpointslices"]["labelSelector"]["matchLabels"] == {"kubernetes.io/service-name": "shop-db"}
    assert resources["pods"]["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"] == "shop"


def test_whole_numbers_written_as_floats_count_as_integers() -> None:
    world = World(sharddb(shards=3.0, cache={"image": "redis:7", "replicas": 2.0}))
    sts = child(answer(world.request()), "StatefulSet")
    assert sts["spec"]["replicas"] == 3
    assert isinstance(sts["spec"]["replicas"], int)


@pytest.mark.parametrize(
    ("group", "name"),
    [("Service.v1", "demo-db"), ("StatefulSet.apps/v1", "demo-db"), ("Deployment.apps/v1", "demo-cache")],
)
def test_a_deleted_child_comes_back(group: str, name: str) -> None:
    world = available_world()
    del world.children[group][f"default/{name}"]
    kinds = {(c["kind"], c["metadata"]["name"]) for c in answer(world.request())["children"]}
    assert (group.split(".")[0], name) in kinds


def test_a_deleted_statefulset_comes_back_with_its_seed_remembered() -> None:
    world = available_world()
    del world.children["StatefulSet.apps/v1"]["default/demo-db"]
    body = answer(world.request())
    assert body["status"]["seededShards"] == 3
    assert [c["metadata"]["name"] for c in body["children"] if c["kind"] == "Job"] == ["demo-seed-3"]
