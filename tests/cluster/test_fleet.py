"""A short fleet run on the session's API server, so ``make bench-fleet`` keeps working.

Two ShardDBs, short delays, a few idle seconds, the working tree's hooks as a
real ``python -m hooks``: every ShardDB must become and stay Available, and the
harness must have counted Metacontroller's writes and hook calls. Every count is
on ``FleetResult`` (``result.bringup.noop_updates``, ``result.idle.writes``, ...),
so a stricter check is one line; this test keeps to what any correct hook shows.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.fleet import FleetResult, Options, run_fleet
from bench.sim.api import Endpoint
from bench.sim.cluster import Timings
from bench.sim.hookserver import serve, working_tree
from bench.sim.metacontroller import LoopSettings
from testbed.controlplane import ControlPlane

from .kube import Kube

pytestmark = pytest.mark.cluster

SIZE = 2
# A faster client than Metacontroller's QPS 5 keeps this run short; the budget itself is the benchmark's subject.
OPTIONS = Options(
    sizes=(SIZE,),
    idle_seconds=3.0,
    scale=None,
    settings=LoopSettings(qps=20.0, burst=20),
    timings=Timings(pod_start_seconds=0.3, job_seconds=0.3),
    timeout_seconds=40.0,
)


@pytest.fixture(scope="module")
def fleet(control_plane: ControlPlane, kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetResult]:
    """Depends on ``kube`` for the installed CRD; the harness makes its own namespace."""
    del kube
    endpoint = Endpoint(control_plane.url, control_plane.token, control_plane.ca_file)
    logs = Path(tmp_path_factory.mktemp("fleet"))
    with serve(working_tree(), logs) as hooks_url:
        namespace = f"fleet-smoke-{os.getpid() % 1000}"
        yield asyncio.run(run_fleet(endpoint, hooks_url, namespace, SIZE, OPTIONS))


def test_fleet_every_sharddb_becomes_and_stays_available(fleet: FleetResult) -> None:
    assert fleet.seconds > 0
    assert fleet.phases == {"db-000": "Available", "db-001": "Available"}
    assert fleet.cluster_errors == {}


def test_fleet_counts_the_children_created_and_the_status_written(fleet: FleetResult) -> None:
    writes = fleet.bringup.writes
    assert writes["create"] >= SIZE * 4, writes  # Service, StatefulSet, seed Job, cache Deployment each
    assert writes["status"] >= SIZE * 2, writes  # at least the first phase and Available
    assert writes["finalizer"] >= SIZE, writes
    assert fleet.bringup.total_writes == sum(writes.values())


def test_fleet_counts_hook_calls(fleet: FleetResult) -> None:
    calls = fleet.bringup.hook_calls
    assert calls["customize"] == SIZE, calls  # once per parent generation
    assert calls["sync"] >= SIZE * 2, calls
    assert calls["finalize"] == 0, calls


def test_fleet_idle_window_is_measured_apart(fleet: FleetResult) -> None:
    assert fleet.idle.seconds >= OPTIONS.idle_seconds
    assert fleet.bringup.seconds == fleet.seconds
    assert fleet.bringup.failed_syncs == 0


def test_fleet_bring_up_sends_no_update_that_changes_nothing(fleet: FleetResult) -> None:
    assert fleet.bringup.noop_updates == 0


def test_fleet_held_idle_writes_nothing(fleet: FleetResult) -> None:
    assert fleet.idle.total_writes == 0
