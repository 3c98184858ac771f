"""The per-ShardDB series a person alerts on: what a replica's last answer said of each ShardDB, and when.

Each replica sees only the syncs it served, so every series carries that sync's time, and a series
must go when its ShardDB is gone (a finalize that completes) or no longer synced here (the TTL):
otherwise a deleted ShardDB would stay "not Available" in Prometheus forever.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from hooks.service.app import create_app
from hooks.service.settings import Settings
from hooks.service.views import DEGRADED_REASONS, OTHER, view_of
from testbed.models.world import World, bring_up, sharddb, step, tear_down
from testbed.real.server import serve

from ..support.hook import Labels, ManualClock, over_http, series
from ..support.reasons import EMITTED

TTL = 1800


def of(namespace: str, name: str, **extra: str) -> Labels:
    return tuple(sorted({"namespace": namespace, "name": name, **extra}.items()))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def client(clock: ManualClock) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(metrics_view_ttl_seconds=TTL), clock=clock)) as client:
        yield client


def scrape(client: TestClient | httpx.Client) -> str:
    text: str = client.get("/metrics").text
    return text


def available_world(client: TestClient | httpx.Client) -> World:
    world = World(sharddb("shop", namespace="prod"))
    bring_up(world, over_http(client))
    return world


def test_a_sync_exports_the_sharddbs_view(client: TestClient, clock: ManualClock) -> None:
    available_world(client)
    text = scrape(client)
    key = of("prod", "shop")
    assert series(text, "sharddb_available") == {key: 1.0}
    assert series(text, "sharddb_degraded") == {of("prod", "shop", reason="AsExpected"): 0.0}
    assert series(text, "sharddb_phase") == {of("prod", "shop", phase="Available"): 1.0}
    assert series(text, "sharddb_ready_shards") == series(text, "sharddb_desired_shards") == {key: 3.0}
    assert series(text, "sharddb_last_sync_timestamp_seconds") == {key: clock.now.timestamp()}


def test_a_degraded_sharddb_exports_its_reason(client: TestClient) -> None:
    world = available_world(client)
    world.fail_pod("shop-db-1", "ImagePullBackOff")
    step(world, over_http(client))
    text = scrape(client)
    assert series(text, "sharddb_degraded") == {of("prod", "shop", reason="ShardPodsFailing"): 1.0}


def test_each_sharddb_has_series_of_its_own(client: TestClient) -> None:
    for namespace, name in (("prod", "shop"), ("staging", "shop")):
        step(World(sharddb(name, namespace=namespace)), over_http(client))
    phases = series(scrape(client), "sharddb_phase")
    assert phases == {of("prod", "shop", phase="Provisioning"): 1.0, of("staging", "shop", phase="Provisioning"): 1.0}


def test_a_finalize_that_completes_drops_the_series(client: TestClient) -> None:
    world = available_world(client)
    phases = tear_down(world, over_http(client))
    assert phases[-1] == "Finalized"
    text = scrape(client)
    assert [name for name in ("sharddb_available", "sharddb_last_sync_timestamp_seconds") if series(text, name)] == []


def test_a_finalize_that_completes_leaves_the_time_it_did(client: TestClient, clock: ManualClock) -> None:
    """Another replica may hold an older view of the ShardDB; the rules drop views older than this."""
    tear_down(available_world(client), over_http(client))
    assert series(scrape(client), "sharddb_finalized_timestamp_seconds") == {of("prod", "shop"): clock.now.timestamp()}


def test_the_time_of_a_finalize_goes_after_the_ttl(client: TestClient, clock: ManualClock) -> None:
    tear_down(available_world(client), over_http(client))
    clock.advance(TTL + 1)
    assert series(scrape(client), "sharddb_finalized_timestamp_seconds") == {}


def test_a_finalize_in_progress_shows_the_draining_phase(client: TestClient) -> None:
    world = available_world(client)
    world.delete()
    step(world, over_http(client))
    assert series(scrape(client), "sharddb_phase") == {of("prod", "shop", phase="DrainingCache"): 1.0}


def test_the_series_stay_until_the_ttl_after_the_last_sync(client: TestClient, clock: ManualClock) -> None:
    available_world(client)
    clock.advance(TTL)
    assert series(scrape(client), "sharddb_available") == {of("prod", "shop"): 1.0}


def test_the_series_go_once_the_ttl_has_passed_without_a_sync(client: TestClient, clock: ManualClock) -> None:
    available_world(client)
    clock.advance(TTL + 1)
    text = scrape(client)
    assert [name for name in ("sharddb_available", "sharddb_phase", "sharddb_degraded") if series(text, name)] == []


def test_a_304_counts_as_a_sync_of_its_sharddb(client: TestClient, clock: ManualClock) -> None:
    """Metacontroller's ETag cache answers most calls with a 304: the ShardDB was still synced then."""
    world = available_world(client)
    body = json.dumps(world.request())
    tag = client.post("/sync", content=body).headers["etag"]
    clock.advance(TTL)
    assert client.post("/sync", content=body, headers={"If-None-Match": tag}).status_code == 304
    clock.advance(60)
    synced = series(scrape(client), "sharddb_last_sync_timestamp_seconds")
    assert synced == {of("prod", "shop"): clock.now.timestamp() - 60}


def test_a_customize_call_exports_no_sharddb(client: TestClient) -> None:
    request = {"controller": {}, "parent": World(sharddb("shop", namespace="prod")).parent}
    assert client.post("/customize", json=request).status_code == 200
    assert series(scrape(client), "sharddb_last_sync_timestamp_seconds") == {}


@pytest.fixture(scope="module")
def live() -> Iterator[httpx.Client]:
    with serve() as base, httpx.Client(base_url=base, timeout=5) as client:
        yield client


@pytest.mark.http
def test_the_live_server_exports_the_view_of_a_sync(live: httpx.Client) -> None:
    step(World(sharddb("live", namespace="prod")), over_http(live))
    text = scrape(live)
    assert series(text, "sharddb_phase")[of("prod", "live", phase="Provisioning")] == 1.0
    assert of("prod", "live") in series(text, "sharddb_last_sync_timestamp_seconds")


@pytest.mark.http
def test_the_live_server_drops_the_series_of_a_finalized_sharddb(live: httpx.Client) -> None:
    world = World(sharddb("gone", namespace="prod"))
    bring_up(world, over_http(live))
    tear_down(world, over_http(live))
    text = scrape(live)
    assert of("prod", "gone") not in series(text, "sharddb_last_sync_timestamp_seconds")
    assert of("prod", "gone") in series(text, "sharddb_finalized_timestamp_seconds")


def test_a_sync_forgets_what_the_ttl_dropped_though_nobody_scrapes(clock: ManualClock) -> None:
    """A replica nobody scrapes must not keep every ShardDB it ever served."""
    app = create_app(Settings(metrics_view_ttl_seconds=TTL), clock=clock)
    with TestClient(app) as client:
        available_world(client)
        clock.advance(TTL + 60)
        step(World(sharddb("other", namespace="prod")), over_http(client))
    assert len(app.state.metrics.views) == 1


def test_the_degraded_reasons_are_every_reason_the_hooks_give_degraded() -> None:
    """The ``reason`` label is a closed set; a reason added to the hooks must be added to it, not dropped as Other."""
    assert EMITTED[("Degraded", True)] | EMITTED[("Degraded", False)] == DEGRADED_REASONS


def test_a_reason_not_in_the_closed_set_is_exported_as_other() -> None:
    conditions: list[dict[str, Any]] = [
        {"type": "Available", "status": "False", "reason": "ShardsUnavailable"},
        {"type": "Degraded", "status": "True", "reason": "SomethingNew"},
    ]
    status = {"phase": "Available", "readyShards": 1, "shards": 3, "conditions": conditions}
    view = view_of({"status": status}, "digest", ManualClock().now)
    assert (view.reason, view.degraded, view.available) == (OTHER, True, False)
