"""Day-2 operations through the hooks, each answer fed back: rollouts, pause, hibernation.

Like the create-to-finalized walk-through, these run over a real uvicorn server on
loopback and in-process against the ASGI app.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from testbed.models.world import Hook, Obj, World, bring_up, sharddb, step, tear_down

from ..support.hook import over_http

pytestmark = pytest.mark.http


def condition(answer: Obj, kind: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in answer["status"]["conditions"] if c["type"] == kind)
    return found


def image(obj: Obj | None) -> str:
    assert obj is not None
    found: str = obj["spec"]["template"]["spec"]["containers"][0]["image"]
    return found


@pytest.fixture
def hook(client: httpx.Client) -> Hook:
    call: Hook = over_http(client)
    return call


@pytest.fixture
def world(hook: Hook) -> World:
    """An Available ShardDB: 3 shards, 2 cache replicas."""
    live = World(sharddb("shop", shards=3))
    bring_up(live, hook)
    return live


def test_shard_rollout_keeps_available_true_and_its_transition_time(world: World, hook: Hook) -> None:
    since = condition(step(world, hook), "Available")["lastTransitionTime"]
    world.edit_spec(dbImage="postgres:17")
    answer = step(world, hook)
    assert image(world.statefulset()) == "postgres:17"
    assert condition(answer, "Progressing")["reason"] == "RollingUpdate"
    for updated in (1, 2):  # one shard restarting at a time
        world.roll_statefulset(updated=updated)
        answer = step(world, hook)
        assert condition(answer, "Available")["status"] == "True"
        assert condition(answer, "Available")["lastTransitionTime"] == since
        assert condition(answer, "Degraded")["status"] == "False"
        assert condition(answer, "Progressing")["message"].startswith(f"{updated}/3 shards updated")
    world.run_statefulset()
    answer = step(world, hook)
    assert condition(answer, "Progressing")["reason"] == "Complete"
    assert answer["status"]["updatedShards"] == 3


def test_cache_only_change_rolls_at_once(world: World, hook: Hook) -> None:
    world.edit_spec(cache={"image": "redis:8", "replicas": 2})
    answer = step(world, hook)
    assert image(world.cache()) == "redis:8"
    assert condition(answer, "Progressing")["reason"] == "RollingUpdate"
    world.run_cache()
    assert condition(step(world, hook), "Progressing")["reason"] == "Complete"


def test_shards_roll_before_the_cache(world: World, hook: Hook) -> None:
    world.edit_spec(dbImage="postgres:17", cache={"image": "redis:8", "replicas": 2})
    answer = step(world, hook)
    assert image(world.statefulset()) == "postgres:17"
    assert image(world.cache()) == "redis:7"
    assert "the cache rolls after them" in condition(answer, "Progressing")["message"]
    world.roll_statefulset(updated=2)
    step(world, hook)
    assert image(world.cache()) == "redis:7", "the cache moved while shards were still rolling"
    world.run_statefulset()
    step(world, hook)
    assert image(world.cache()) == "redis:8"


def test_pause_mid_provisioning_freezes_then_resume_carries_on(hook: Hook) -> None:
    world = World(sharddb("shop", shards=3))
    step(world, hook)
    world.edit_spec(paused=True, shards=5)
    world.run_statefulset()
    answer = step(world, hook)
    assert world.statefulset()["spec"]["replicas"] == 3  # type: ignore[index]
    assert world.job(3) is None
    assert world.job(5) is None
    assert world.deleted == []
    assert (condition(answer, "Progressing")["status"], condition(answer, "Progressing")["reason"]) == (
        "False",
        "Paused",
    )
    world.edit_spec(paused=False)
    step(world, hook)
    assert world.statefulset()["spec"]["replicas"] == 5  # type: ignore[index]
    assert bring_up(world, hook)["status"]["seededShards"] == 5


def test_pause_keeps_a_child_a_person_edited(world: World, hook: Hook) -> None:
    world.edit_spec(paused=True)
    world.statefulset()["spec"]["replicas"] = 7  # type: ignore[index]
    answer = step(world, hook)
    (sts,) = [c for c in answer["children"] if c["kind"] == "StatefulSet"]
    assert sts["spec"]["replicas"] == 7


def test_hibernate_then_wake_an_available_sharddb(world: World, hook: Hook) -> None:
    world.edit_spec(hibernated=True)
    answer = step(world, hook)
    assert answer["status"]["phase"] == "Hibernating"
    assert world.cache()["spec"]["replicas"] == 0  # type: ignore[index]
    assert world.statefulset()["spec"]["replicas"] == 3  # type: ignore[index]
    world.run_cache()
    world.remove_pods("cache")
    step(world, hook)
    assert world.cache() is None
    step(world, hook)
    assert world.statefulset()["spec"]["replicas"] == 0  # type: ignore[index]
    world.run_statefulset()
    answer = step(world, hook)
    assert answer["status"]["phase"] == "Hibernated"
    assert answer["status"]["seededShards"] == 3
    assert world.job(3) is not None  # the finished seed is kept: it is memory

    world.edit_spec(hibernated=False)
    answer = bring_up(world, hook)
    assert world.job(3) is not None
    assert len(world.jobs()) == 1
    assert world.statefulset()["spec"]["replicas"] == 3  # type: ignore[index]
    assert world.cache() is not None
    assert answer["status"]["phase"] == "Available"


def test_delete_while_paused_tears_down_in_order(world: World, hook: Hook) -> None:
    world.edit_spec(paused=True)
    step(world, hook)
    phases = tear_down(world, hook)
    assert phases[0] == "DrainingCache"
    assert phases[-1] == "Finalized"


def test_delete_while_hibernated_finalizes_at_once(world: World, hook: Hook) -> None:
    world.edit_spec(hibernated=True)
    for _ in range(6):
        if step(world, hook)["status"]["phase"] == "Hibernated":
            break
        world.run_cache()
        world.remove_pods("cache")
        world.run_statefulset()
    assert tear_down(world, hook) == ["Finalized"]


def test_a_spec_edited_during_deletion_rolls_no_pod(world: World, hook: Hook) -> None:
    world.delete()
    world.edit_spec(dbImage="postgres:17", cache={"image": "redis:8", "replicas": 2})
    step(world, hook)
    assert image(world.statefulset()) == "postgres:16"
    assert image(world.cache()) == "redis:7"


def test_a_spec_edited_while_hibernating_is_rolled_out_on_waking(world: World, hook: Hook) -> None:
    world.edit_spec(hibernated=True, dbImage="postgres:17")
    step(world, hook)
    assert image(world.statefulset()) == "postgres:16"
    world.edit_spec(hibernated=False)
    step(world, hook)
    assert image(world.statefulset()) == "postgres:17"
