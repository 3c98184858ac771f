"""The log line's changes are read off the rendered answer against the observed children."""

from __future__ import annotations

import json

from hooks import handler
from testbed.models.world import World, bring_up, sharddb

from ..support.hook import direct


def logged(world: World, finalize: bool = False) -> list[str]:
    return handler.sync(json.dumps(world.request()).encode(), finalize=finalize).changes


def test_a_new_sharddb_logs_each_child_it_creates() -> None:
    assert logged(World(sharddb("shop"))) == [
        "create Service/shop-db",
        "create StatefulSet/shop-db replicas=3",
        "create PodDisruptionBudget/shop-db",
    ]


def test_an_available_sharddb_with_nothing_to_do_logs_nothing() -> None:
    world = World(sharddb("shop"))
    bring_up(world, direct)
    assert logged(world) == []


def test_a_scale_up_logs_the_old_and_new_replicas() -> None:
    world = World(sharddb("shop"))
    bring_up(world, direct)
    world.edit_spec(shards=5)
    assert logged(world) == ["scale StatefulSet/shop-db 3->5"]


def test_teardown_logs_what_it_deletes_and_scales() -> None:
    world = World(sharddb("shop"))
    bring_up(world, direct)
    world.delete()
    assert logged(world, finalize=True) == [
        "scale Deployment/shop-cache 2->0",
        "delete PodDisruptionBudget/shop-cache",
        "delete PodDisruptionBudget/shop-db",
        "delete Service/shop-cache",
    ]


def test_a_paused_sharddb_logs_no_change() -> None:
    world = World(sharddb("shop"))
    bring_up(world, direct)
    world.edit_spec(shards=5, paused=True)
    assert logged(world) == []
