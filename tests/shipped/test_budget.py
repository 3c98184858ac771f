"""The resync period and client budget every shipped overlay and partition carries.

Chosen from ``make bench-latency`` (docs/operating/write-budgets.md):
each resync queues every ShardDB of an instance at once behind one GET each, so a
change waits about N / QPS seconds when it lands in one. The values below are the
specification; the rendered manifests and the guide's settings table are held
to them.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from testbed.real import partitions

from ..support.budget import BURST, QPS, RESYNC_SECONDS

Obj = dict[str, Any]

# client-go's default controller rate limiter: a failed sync is retried after at most this.
METACONTROLLER_MAX_BACKOFF_SECONDS = 1000

OVERLAYS = sorted(path.parent for path in (partitions.DEPLOY / "overlays").glob("*/kustomization.yaml"))
TARGETS = [partitions.DEPLOY / "base", *OVERLAYS]
BUDGETS_PAGE = (partitions.ROOT / "docs" / "operating" / "write-budgets.md").read_text()


@cache
def rendered(target: Path, count: int = 0) -> list[Obj]:
    return partitions.render_objects(target, count) if count else partitions.kustomize(target)


def installs() -> list[tuple[str, list[Obj]]]:
    """Every overlay as shipped, and the dev and production overlays with every partitions component."""
    found = [(path.name, rendered(path)) for path in TARGETS]
    for overlay in ("dev", "production"):
        path = partitions.DEPLOY / "overlays" / overlay
        found += [(f"{overlay}+{n}", rendered(path, n)) for n in partitions.counts()]
    return found


def instance_args(objects: list[Obj]) -> list[list[str]]:
    sets = [o for o in objects if o["kind"] == "StatefulSet" and o["metadata"]["name"].startswith("metacontroller")]
    return [s["spec"]["template"]["spec"]["containers"][0]["args"] for s in sets]


@pytest.mark.parametrize(("name", "objects"), installs(), ids=[name for name, _ in installs()])
def test_every_compositecontroller_resyncs_at_the_chosen_period(name: str, objects: list[Obj]) -> None:
    periods = {o["spec"].get("resyncPeriodSeconds") for o in objects if o["kind"] == "CompositeController"}
    assert periods == {RESYNC_SECONDS}, name


@pytest.mark.parametrize(("name", "objects"), installs(), ids=[name for name, _ in installs()])
def test_every_metacontroller_shipped_runs_the_chosen_budget(name: str, objects: list[Obj]) -> None:
    for args in instance_args(objects):
        assert f"--client-go-qps={QPS}" in args, (name, args)
        assert f"--client-go-burst={BURST}" in args, (name, args)


def test_the_partitioned_overlay_ships_a_metacontroller_per_partition() -> None:
    assert len(instance_args(rendered(partitions.DEPLOY / "overlays" / "partitioned"))) == 4


def test_the_period_still_shortens_the_longest_retry_after_a_hook_outage() -> None:
    """What the resync guards against: a sync whose retries backed off, or an event never delivered."""
    assert RESYNC_SECONDS < METACONTROLLER_MAX_BACKOFF_SECONDS


def test_the_guide_settings_table_states_the_shipped_values() -> None:
    rows = {row.split("|")[1].strip(): row for row in BUDGETS_PAGE.splitlines() if row.startswith("| `")}
    budget = rows["`--client-go-qps` / `--client-go-burst`"]
    assert re.search(rf"\b{QPS} / {BURST}\b", budget), budget
    assert re.search(rf"\b{RESYNC_SECONDS}\b", rows["`resyncPeriodSeconds` (CompositeController)"])
