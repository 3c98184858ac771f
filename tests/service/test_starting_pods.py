"""A pod that waits a moment to start is progress; only what lasts past the grace is Degraded.

Walk-throughs over HTTP: on the live uvicorn server and the ASGI app with the real clock
(pods placed just now, or stuck for long), and on the ASGI app with a clock the test moves
(time passing with no event, Metacontroller's ETag cache, a scale-up from 3 to 16).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from hooks.clock import rfc3339, system_clock
from hooks.service.app import create_app
from testbed.models.world import World, bring_up, sharddb, step

from ..support.hook import ManualClock, over_http

pytestmark = pytest.mark.http

Obj = dict[str, Any]
START = "2026-03-01T12:00:00Z"
SCHEDULER = "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available."


def conditions(answer: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in answer["status"]["conditions"]}


def shards_waiting(world: World, since: str, ordinals: range) -> None:
    """The StatefulSet controller made these shard pods at ``since``; the scheduler found no node yet."""
    for ordinal in ordinals:
        world.fail_pod(f"{world.name}-db-{ordinal}", "Unschedulable", since=since)


def provisioning_world(hook: Any, since: str, **spec: Any) -> World:
    """A new ShardDB whose three shard pods were created at ``since`` and wait to be scheduled."""
    world = World(sharddb("shop", **spec))
    step(world, hook)
    world.run_statefulset(ready=0)
    shards_waiting(world, since, range(3))
    return world


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def timed(clock: ManualClock) -> Iterator[TestClient]:
    """The ASGI app reading the test's clock."""
    with TestClient(create_app(clock=clock)) as client:
        yield client


def sync(client: httpx.Client, world: World, tag: str | None = None) -> httpx.Response:
    """One sync call, as Metacontroller's webhook cache makes it (``If-None-Match`` once it holds a tag)."""
    headers = {"If-None-Match": tag} if tag else {}
    return client.post("/sync", content=json.dumps(world.request()), headers=headers)


# --- the real clock: pods placed just now, pods stuck for long ---------------------------------


def test_shard_pods_waiting_for_their_volumes_are_progress(client: httpx.Client) -> None:
    world = provisioning_world(over_http(client), rfc3339(system_clock()))
    answer = step(world, over_http(client))
    degraded, progressing = conditions(answer)["Degraded"], conditions(answer)["Progressing"]
    assert (degraded["status"], degraded["reason"]) == ("False", "AsExpected")
    assert (progressing["status"], progressing["reason"]) == ("True", "Provisioning")
    assert (
        progressing["message"]
        == "0/3 shards ready; 3 shard pods waiting to be scheduled: shop-db-0, shop-db-1, shop-db-2"
    )
    assert 0 < answer["resyncAfterSeconds"] <= 120


def test_a_bring_up_whose_pods_wait_a_moment_is_never_degraded(client: httpx.Client) -> None:
    hook = over_http(client)
    world = provisioning_world(hook, rfc3339(system_clock()))
    seen = [conditions(step(world, hook))["Degraded"]["status"]]
    world.run_statefulset()  # the volumes bound, the pods run
    answer = bring_up(world, hook)
    seen.append(conditions(answer)["Degraded"]["status"])
    assert seen == ["False", "False"]
    assert "resyncAfterSeconds" not in answer


def test_a_pod_stuck_for_longer_than_the_grace_is_degraded(client: httpx.Client) -> None:
    an_hour_ago = rfc3339(system_clock() - timedelta(hours=1))
    world = provisioning_world(over_http(client), an_hour_ago)
    degraded = conditions(step(world, over_http(client)))["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "ShardPodsFailing")
    assert f"shop-db-0: Unschedulable ({SCHEDULER})" in degraded["message"]


def test_a_new_pod_that_cannot_pull_its_image_is_degraded_at_once(client: httpx.Client) -> None:
    hook = over_http(client)
    world = World(sharddb("shop"))
    step(world, hook)
    world.run_statefulset(ready=2)
    world.fail_pod("shop-db-2", "ImagePullBackOff", since=rfc3339(system_clock()))
    answer = step(world, hook)
    assert conditions(answer)["Degraded"]["reason"] == "ShardPodsFailing"
    assert "resyncAfterSeconds" not in answer


def test_an_answer_bound_to_a_grace_is_not_served_from_the_etag_cache_after_it(http: httpx.Client) -> None:
    """The live server, its own clock: the same request once the grace has run out gets a fresh answer."""
    placed = system_clock().replace(microsecond=0)
    world = provisioning_world(over_http(http), rfc3339(placed), podStartGraceSeconds=2)
    first = sync(http, world)
    assert conditions(first.json())["Degraded"]["status"] == "False"
    time.sleep(max(0.0, (placed + timedelta(seconds=2) - system_clock()).total_seconds()) + 0.1)
    again = sync(http, world, tag=first.headers["etag"])
    assert again.status_code == 200
    assert conditions(again.json())["Degraded"]["status"] == "True"


# --- a clock the test moves -------------------------------------------------------------------


def test_a_stuck_pod_turns_degraded_on_the_recheck_with_no_event(timed: TestClient, clock: ManualClock) -> None:
    world = provisioning_world(over_http(timed), START, podStartGraceSeconds=5)
    clock.advance(1)
    first = sync(timed, world)
    assert first.json()["resyncAfterSeconds"] == 4.0
    world.apply(first.json())
    clock.advance(4)  # Metacontroller calls again, as asked; the request is the same
    answer = sync(timed, world, tag=first.headers["etag"])
    assert answer.status_code == 200
    degraded = conditions(answer.json())["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "ShardPodsFailing")
    assert degraded["message"].startswith(f"shard pods cannot start: shop-db-0: Unschedulable ({SCHEDULER})")
    assert degraded["lastTransitionTime"] == "2026-03-01T12:00:05Z"
    assert "resyncAfterSeconds" not in answer.json()


def test_within_the_grace_the_etag_cache_answers(timed: TestClient, clock: ManualClock) -> None:
    world = provisioning_world(over_http(timed), START)
    first = sync(timed, world)
    clock.advance(119)
    held = sync(timed, world, tag=first.headers["etag"])
    assert held.status_code == 304
    assert held.headers["etag"] == first.headers["etag"]


def test_once_every_grace_has_run_out_the_answer_is_cached_for_good(timed: TestClient, clock: ManualClock) -> None:
    world = provisioning_world(over_http(timed), START)
    clock.advance(120)
    degraded = sync(timed, world)
    assert conditions(degraded.json())["Degraded"]["status"] == "True"
    clock.advance(86400)
    assert sync(timed, world, tag=degraded.headers["etag"]).status_code == 304


def test_within_the_grace_only_the_resync_moves(timed: TestClient, clock: ManualClock) -> None:
    world = provisioning_world(over_http(timed), START)
    first = sync(timed, world).json()
    world.apply(first)
    clock.advance(60)
    later = sync(timed, world).json()
    assert later["status"] == first["status"]
    assert (first["resyncAfterSeconds"], later["resyncAfterSeconds"]) == (120.0, 60.0)


def test_when_the_grace_runs_out_only_the_flipping_condition_moves_its_time(
    timed: TestClient, clock: ManualClock
) -> None:
    world = provisioning_world(over_http(timed), START)
    before = sync(timed, world).json()
    world.apply(before)
    clock.advance(120)
    after = conditions(sync(timed, world).json())
    for kind, condition in conditions(before).items():
        moved = condition["status"] != after[kind]["status"]
        assert (after[kind]["lastTransitionTime"] != condition["lastTransitionTime"]) == moved, kind
    assert after["Degraded"]["status"] == "True"
    assert after["Progressing"]["message"] == "0/3 shards ready"


def test_a_secret_applied_a_moment_after_the_sharddb_never_degrades_it(timed: TestClient, clock: ManualClock) -> None:
    hook = over_http(timed)
    world = World(sharddb("shop"))
    step(world, hook)
    world.run_statefulset(ready=0)
    for ordinal in range(3):
        world.fail_pod(f"shop-db-{ordinal}", "CreateContainerConfigError", since=START)
    clock.advance(10)
    answer = step(world, hook)
    assert conditions(answer)["Degraded"]["status"] == "False"
    assert conditions(answer)["Progressing"]["message"].endswith(
        "3 shard pods waiting for a Secret or ConfigMap: shop-db-0, shop-db-1, shop-db-2"
    )
    clock.advance(10)  # the Secret exists now: the kubelet starts the containers
    world.run_statefulset()
    assert conditions(bring_up(world, hook))["Degraded"]["status"] == "False"


def test_a_scale_up_from_3_to_16_whose_new_pods_wait_for_volumes_is_never_degraded(
    timed: TestClient, clock: ManualClock
) -> None:
    hook = over_http(timed)
    world = World(sharddb("shop"))
    bring_up(world, hook)
    world.edit_spec(shards=16)
    answers = [step(world, hook)]
    world.run_statefulset(ready=3)
    shards_waiting(world, rfc3339(clock()), range(3, 16))
    clock.advance(2)
    answers.append(step(world, hook))
    progressing = conditions(answers[-1])["Progressing"]
    assert progressing["message"] == (
        "3/16 shards ready; 13 shard pods waiting to be scheduled: shop-db-3, shop-db-4, shop-db-5 and 10 more"
    )
    clock.advance(30)  # a slow provisioner: still within the grace
    answers.append(step(world, hook))
    world.run_statefulset()
    answers.append(bring_up(world, hook))
    assert [conditions(answer)["Degraded"]["status"] for answer in answers] == ["False"] * 4
    assert answers[-1]["status"]["readyShards"] == 16
