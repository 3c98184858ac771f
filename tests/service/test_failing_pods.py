"""Pods that cannot start are named in ``Degraded``, per component, and the status stays still.

Walk-throughs over real HTTP (uvicorn on loopback) and the ASGI app: a ShardDB brought
up with the World's controllers, then one of its pods made to fail the way the kubelet
or the scheduler reports it.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from testbed.models.world import FAILURES, Obj, World, bring_up, sharddb, step

from ..support.hook import direct, over_http

pytestmark = pytest.mark.http

Hook = Any


def degraded(answer: Obj) -> Obj:
    condition: Obj = next(c for c in answer["status"]["conditions"] if c["type"] == "Degraded")
    return condition


def seeding_world(hook: Hook, **spec: Any) -> World:
    """A ShardDB whose shards are all ready, so its seed Job has just been asked for."""
    world = World(sharddb("shop", **spec))
    step(world, hook)
    world.run_statefulset()
    step(world, hook)
    return world


def available_world(hook: Hook, **spec: Any) -> World:
    world = World(sharddb("shop", **spec))
    answer = bring_up(world, hook)
    assert answer["status"]["phase"] == "Available"
    return world


@pytest.fixture
def hook(client: httpx.Client) -> Hook:
    return over_http(client)


def test_a_shard_pod_that_cannot_pull_its_image_is_named_with_the_image(hook: Hook) -> None:
    world = available_world(hook)
    world.pods["shop-db-1"]["spec"]["containers"][0]["image"] = "registry.invalid/nope:1"
    world.fail_pod("shop-db-1", "ImagePullBackOff")
    condition = degraded(step(world, hook))
    assert (condition["status"], condition["reason"]) == ("True", "ShardPodsFailing")
    assert "shop-db-1: ImagePullBackOff (registry.invalid/nope:1)" in condition["message"]


def test_err_image_pull_and_image_pull_back_off_read_the_same(hook: Hook) -> None:
    """The kubelet alternates the two on every retry; the status must not follow it."""
    world = available_world(hook)
    world.fail_pod("shop-db-1", "ErrImagePull")
    first = step(world, hook)
    world.fail_pod("shop-db-1", "ImagePullBackOff")
    assert step(world, hook)["status"] == first["status"]


def test_a_crash_looping_shard_reports_its_exit_code_not_the_back_off_timer(hook: Hook) -> None:
    world = available_world(hook)
    world.fail_pod("shop-db-2", "CrashLoopBackOff")
    first = step(world, hook)
    assert "shop-db-2: CrashLoopBackOff (container db exited 1)" in degraded(first)["message"]
    world.fail_pod("shop-db-2", "crashed, running again, not ready")  # between two back-offs
    assert step(world, hook)["status"] == first["status"]


def test_a_crash_looping_container_that_said_why_is_named_with_its_termination_message(hook: Hook) -> None:
    """A member whose restore refused its archive path writes the field to its termination log; the kubelet keeps
    it on the crash, and the status carries it, the same on every crash."""
    world = available_world(hook)
    world.fail_pod("shop-db-2", "CrashLoopBackOff")
    said = "spec.backup.objectStore.destinationPath: s3://b/shop-db-2 already holds WAL"
    world.pods["shop-db-2"]["status"]["containerStatuses"][0]["lastState"]["terminated"]["message"] = said
    first = step(world, hook)
    assert f"shop-db-2: CrashLoopBackOff (container db exited 1: {said}" in degraded(first)["message"]
    world.fail_pod("shop-db-2", "crashed, running again, not ready")
    world.pods["shop-db-2"]["status"]["containerStatuses"][0]["lastState"]["terminated"]["message"] = said
    assert step(world, hook)["status"] == first["status"]


def test_a_missing_secret_is_named_from_the_kubelet_message(hook: Hook) -> None:
    world = available_world(hook)
    world.fail_pod("shop-db-0", "CreateContainerConfigError")
    message = degraded(step(world, hook))["message"]
    assert 'shop-db-0: CreateContainerConfigError (secret "pg-auth" not found)' in message


def test_an_unschedulable_cache_pod_is_cache_pods_failing(hook: Hook) -> None:
    world = available_world(hook)
    cache_pod = next(name for name in world.pods if name.startswith("shop-cache-"))
    world.fail_pod(cache_pod, "Unschedulable")
    condition = degraded(step(world, hook))
    assert (condition["status"], condition["reason"]) == ("True", "CachePodsFailing")
    assert f"{cache_pod}: Unschedulable (0/3 nodes are available: 3 Insufficient memory." in condition["message"]


def test_a_seed_pod_that_cannot_start_is_seed_pods_failing(hook: Hook) -> None:
    world = seeding_world(hook)
    pod = world.run_seed_pod(3, failure="ImagePullBackOff")
    answer = step(world, hook)
    assert answer["status"]["phase"] == "Seeding"
    condition = degraded(answer)
    assert (condition["status"], condition["reason"]) == ("True", "SeedPodsFailing")
    assert f"{pod}: ImagePullBackOff (postgres:16)" in condition["message"]


def test_degraded_clears_when_the_pod_recovers(hook: Hook) -> None:
    world = available_world(hook)
    world.fail_pod("shop-db-1", "CrashLoopBackOff")
    assert degraded(step(world, hook))["status"] == "True"
    world.run_statefulset()
    condition = degraded(step(world, hook))
    assert (condition["status"], condition["reason"]) == ("False", "AsExpected")


def test_the_status_stays_put_while_a_pod_stays_stuck(hook: Hook) -> None:
    world = available_world(hook)
    world.fail_pod("shop-db-1", "Unschedulable")
    first = step(world, hook)
    world.pods["shop-db-1"]["metadata"]["resourceVersion"] = "9999"  # the kubelet touched it, nothing changed
    assert step(world, hook)["status"] == first["status"]


def test_a_seed_past_its_deadline_is_seed_failed_with_the_jobs_reason() -> None:
    world = seeding_world(direct, seedTimeoutSeconds=60)
    job = world.job(3)
    assert job is not None
    assert job["spec"]["activeDeadlineSeconds"] == 60
    deadline = {"reason": "DeadlineExceeded", "message": "Job was active longer than specified deadline"}
    job["status"] = {"failed": 1, "conditions": [{"type": "Failed", "status": "True", **deadline}]}
    answer = step(world, direct)
    condition = degraded(answer)
    assert (condition["status"], condition["reason"]) == ("True", "SeedFailed")
    expected = "seed Job shop-seed-3 failed: DeadlineExceeded (Job was active longer than specified deadline)"
    assert condition["message"].startswith(expected)
    progressing = next(c for c in answer["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "SeedFailed")


def test_the_seed_job_runs_at_most_an_hour_by_default() -> None:
    world = seeding_world(direct)
    job = world.job(3)
    assert job is not None
    assert job["spec"]["activeDeadlineSeconds"] == 3600


REASONS = {"db": "ShardPodsFailing", "cache": "CachePodsFailing", "seed": "SeedPodsFailing"}
SHOWN_AS = {"ErrImagePull": "ImagePullBackOff", "crashed, running again, not ready": "CrashLoopBackOff"}


def _failing_world(component: str, failure: str) -> tuple[World, str]:
    """A ShardDB at the step where ``component`` has pods, with one of them failing as ``failure``."""
    if component == "seed":
        world = seeding_world(direct)
        return world, world.run_seed_pod(3, failure=failure)
    world = available_world(direct)
    pod = next(name for name in sorted(world.pods) if name.startswith(f"shop-{component}-"))
    world.fail_pod(pod, failure)
    return world, pod


@pytest.mark.parametrize("component", sorted(REASONS))
@pytest.mark.parametrize("failure", FAILURES)
def test_each_failure_of_each_component_is_named_and_said_once(component: str, failure: str) -> None:
    world, pod = _failing_world(component, failure)
    first = step(world, direct)
    condition = degraded(first)
    assert (condition["status"], condition["reason"]) == ("True", REASONS[component])
    assert f"{pod}: {SHOWN_AS.get(failure, failure)}" in condition["message"]
    world.parent["status"] = {**first["status"], "observedGeneration": 1}
    assert step(world, direct)["status"] == first["status"]


def _running_after(world: World, pod: str, restarts: int) -> None:
    """The container runs again, not ready yet, after ``restarts`` crashes."""
    world.fail_pod(pod, "crashed, running again, not ready")
    world.pods[pod]["status"]["containerStatuses"][0]["restartCount"] = restarts


def test_a_shard_running_again_after_one_crash_is_recovering_not_failing() -> None:
    world = available_world(direct)
    _running_after(world, "shop-db-1", restarts=1)
    assert "shop-db-1" not in degraded(step(world, direct))["message"]


def test_a_shard_running_again_after_repeated_crashes_is_a_crash_loop() -> None:
    world = available_world(direct)
    _running_after(world, "shop-db-1", restarts=2)
    assert "shop-db-1: CrashLoopBackOff (container db exited 1)" in degraded(step(world, direct))["message"]
