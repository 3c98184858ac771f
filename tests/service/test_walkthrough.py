"""The whole life of a ShardDB through the hooks, each answer fed back as the next observed state.

Runs over real HTTP against a uvicorn server on loopback, and in-process
against the ASGI app, so both paths keep the same contract.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from testbed.models.world import Obj, World, sharddb, step

from ..support.hook import over_http

pytestmark = pytest.mark.http


def kinds(answer: Obj) -> list[str]:
    return sorted(f"{c['kind']}/{c['metadata']['name']}" for c in answer["children"])


def conditions(answer: Obj) -> dict[str, Any]:
    return {c["type"]: c["status"] for c in answer["status"]["conditions"]}


def test_sharddb_lives_from_create_to_finalized(client: httpx.Client) -> None:
    hook = over_http(client)
    world = World(sharddb("shop", shards=3))

    answer = step(world, hook)  # created: shards and their disruption budget, nothing else
    assert kinds(answer) == ["PodDisruptionBudget/shop-db", "Service/shop-db", "StatefulSet/shop-db"]
    assert answer["status"]["phase"] == "Provisioning"

    world.run_statefulset(ready=2)
    answer = step(world, hook)  # not every shard ready: no seed yet
    assert world.job(3) is None
    assert answer["status"]["readyShards"] == 2

    world.run_statefulset()
    answer = step(world, hook)  # all shards ready: seed once
    assert world.job(3) is not None
    assert answer["status"]["phase"] == "Seeding"

    world.finish_job(3)
    world.publish_endpoints(only={0, 1})
    answer = step(world, hook)  # seeded, but shard 2 is not in discovery yet
    assert world.cache() is None
    assert answer["status"]["phase"] == "Registering"
    assert answer["status"]["seededShards"] == 3

    world.publish_endpoints()
    answer = step(world, hook)  # registered: the cache starts, with its Service and budget (2 replicas)
    assert world.cache() is not None
    assert answer["status"]["phase"] == "StartingCache"
    assert {"Service/shop-cache", "PodDisruptionBudget/shop-cache"} <= set(kinds(answer))

    world.run_cache()
    answer = step(world, hook)
    assert answer["status"]["phase"] == "Available"
    assert conditions(answer) == {"Available": "True", "Progressing": "False", "Degraded": "False"}
    assert answer["status"]["cacheReady"] is True

    world.edit_spec(shards=5)  # scale up: new shards, a new seed for 5, cache untouched
    answer = step(world, hook)
    assert world.statefulset()["spec"]["replicas"] == 5  # type: ignore[index]
    assert world.cache() is not None
    world.run_statefulset()
    step(world, hook)
    assert world.job(5) is not None
    world.finish_job(5)
    answer = step(world, hook)
    assert answer["status"]["phase"] == "Available"
    assert answer["status"]["seededShards"] == 5

    world.delete()  # teardown: budgets and the cache Service go, the cache scales to zero
    answer = step(world, hook)
    assert world.cache()["spec"]["replicas"] == 0  # type: ignore[index]
    assert world.statefulset()["spec"]["replicas"] == 5  # type: ignore[index]
    assert answer["finalized"] is False
    assert sorted(world.deleted) == [
        "PodDisruptionBudget.policy/v1:default/shop-cache",
        "PodDisruptionBudget.policy/v1:default/shop-db",
        "Service.v1:default/shop-cache",
    ]
    world.deleted.clear()

    world.terminate_pods("cache")  # flushing on the way out: shards must wait
    answer = step(world, hook)
    assert world.statefulset()["spec"]["replicas"] == 5  # type: ignore[index]
    assert answer["status"]["phase"] == "DrainingCache"

    world.remove_pods("cache")
    world.run_cache()
    answer = step(world, hook)  # cache gone: shards drain
    assert world.statefulset()["spec"]["replicas"] == 0  # type: ignore[index]
    assert answer["status"]["phase"] == "DrainingShards"
    assert answer["finalized"] is False

    world.terminate_pods("db")
    answer = step(world, hook)
    assert answer["finalized"] is False

    world.run_statefulset()
    answer = step(world, hook)
    assert answer["finalized"] is True
    assert answer["status"]["phase"] == "Finalized"
    assert world.deleted == []  # nothing else was ever left out of an answer
