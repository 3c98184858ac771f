"""A short fleet run on the session's stack, so ``make bench-fleet`` keeps working on the real Metacontroller.

Two ShardDBs of ``examples/sharddb.yaml`` at once through ``bench.fleet``'s own
scenario: both become Available, the audit log yields Metacontroller's writes,
and an idle window costs none. The benchmark's numbers themselves are never
asserted here (``make bench-fleet`` measures them, side by side with a baseline).
"""

from __future__ import annotations

from bench.fleet import Options, bring_up
from bench.source import ROOT
from testbed.stack import Stack


def test_a_small_fleet_comes_up_and_idles_without_writes(stack: Stack) -> None:
    result = bring_up(stack, ROOT, 2, Options(idle_seconds=6.0, timeout_seconds=120.0))
    assert result.bringup.writes["create"] >= 2 * 7, result.bringup.writes
    assert result.bringup.writes["status"] >= 2, result.bringup.writes
    assert result.bringup.hook_calls > 0
    assert result.idle.total == 0, result.idle.writes
