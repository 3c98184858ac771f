"""A planned switchover, as the runbook asks Patroni for one: the primary moves once, under both invariants."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ..installs import Install, Obj
from ..invariants import Record, Report
from .disturbances import HandOver, report_hand_over, stop_primary
from .shard import NAMESPACE, SHARD, BroughtUp, leader_changes, members


def switch_over(install: Install, pod: Obj) -> str:
    """``patronictl switchover`` in the primary's pod, with docs/runbooks/switchover.md's flags."""
    old = pod["metadata"]["name"]
    candidate = next(p["metadata"]["name"] for p in members(install) if p["metadata"]["name"] != old)
    install.kubectl(
        "exec", "-n", NAMESPACE, old, "-c", "db", "--", "patronictl", "-c", "/etc/patroni/patroni.yml",
        "switchover", SHARD, "--leader", old, "--candidate", candidate, "--force",
    )  # fmt: skip
    return ""


@pytest.fixture(scope="module")
def switched(install: Install, brought_up: BroughtUp) -> HandOver:
    _ = brought_up
    changes = leader_changes(install)
    step = stop_primary(
        install,
        "planned switchover (`patronictl switchover`), 2 members",
        "switchover",
        lambda pod: switch_over(install, pod),
        recreated=False,
    )
    return replace(step, done=f"history +{leader_changes(install) - changes}; ")


def test_a_switchover_moves_the_primary_once(switched: HandOver, report: Report) -> None:
    report_hand_over(report, "switchover", switched)
    assert switched.new != switched.old
    assert switched.done == "history +1; "


def test_no_acknowledged_commit_is_lost_in_a_switchover(switched: HandOver, outages: Record) -> None:
    switched.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_during_a_switchover(switched: HandOver) -> None:
    switched.seen.never_two_primaries(handed_to=switched.new)
