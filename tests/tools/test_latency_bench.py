"""The change-latency benchmark's arithmetic and readings (``bench/latency.py``); ``make bench-latency`` runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.latency import CACHE_FLUSH_SECONDS, bursts, hook_calls, percentile, settings, share_waiting, sync_times
from bench.source import working_tree

from ..support.budget import BURST, QPS, RESYNC_SECONDS


def test_the_current_settings_are_read_from_the_partitioned_overlay() -> None:
    current = settings(working_tree(), "current")
    assert (current.resync_seconds, current.qps, current.burst) == (RESYNC_SECONDS, QPS, BURST)


@pytest.mark.parametrize(
    ("values", "share", "expected"),
    [([3.0, 1.0, 2.0], 0.5, 2.0), (list(range(1, 31)), 0.99, 30), (list(range(1, 101)), 0.99, 99), ([4.0], 0.99, 4.0)],
)
def test_percentile_is_the_nearest_rank(values: list[float], share: float, expected: float) -> None:
    assert percentile(values, share) == expected


def test_a_burst_shorter_than_the_target_holds_no_change_longer() -> None:
    assert share_waiting(stall=0.8, period=600) == 0.0


def test_the_share_held_counts_resync_and_cache_flush_bursts() -> None:
    assert share_waiting(stall=5.0, period=600) == pytest.approx(4.0 * (1 / 600 + 1 / CACHE_FLUSH_SECONDS))


def test_a_burst_longer_than_its_period_holds_every_change() -> None:
    assert share_waiting(stall=70.0, period=30) == 1.0


def test_bursts_are_runs_of_calls_closer_than_the_gap() -> None:
    times = [0.0, 0.1, 0.2, 0.3, 10.0, 30.0, 30.2, 30.4, 30.6, 31.3]
    assert bursts(times, size=3) == [pytest.approx(0.3), pytest.approx(0.6)]


def _log(tmp_path: Path, records: list[dict[str, object]]) -> Path:
    path = tmp_path / "hooks.out"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\nnot json\n")
    return path


def test_hook_calls_name_the_sharddb_only_when_answered_and_sync_times_count_304s(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        [
            {"time": "2026-12-01T10:00:00.000Z", "msg": "hook", "hook": "sync", "parent": "ns/a", "status": 200},
            {"time": "2026-12-01T10:00:01.500Z", "msg": "hook", "hook": "sync", "status": 304},
            {"time": "2026-12-01T10:00:02.000Z", "msg": "hook", "hook": "customize", "status": 200},
            {"time": "2026-12-01T10:00:03.000Z", "msg": "ready"},
        ],
    )
    calls = hook_calls(log)
    assert [name for _, name in calls] == ["ns/a"]
    start = calls[0][0]
    assert [round(t - start, 3) for t in sync_times(log, start)] == [0.0, 1.5]
    assert [round(t - start, 3) for t in sync_times(log, start, status=304)] == [1.5]
