"""A planned switchover, run as ``docs/runbooks/switchover.md`` writes it: the primary moves once, under both
invariants, and the runbook's own check then names the new primary the leader."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ...support.sharddbs import wait_until
from ..installs import Install, Obj
from ..invariants import Record, Report
from ..steps import ROOT, runbook
from .disturbances import HandOver, report_hand_over, stop_primary
from .shard import NAME, NAMESPACE, RUNBOOK_SETTINGS, BroughtUp, leader_changes, members

RUNBOOK = ROOT / "docs" / "runbooks" / "switchover.md"


def switch_over(install: Install, pod: Obj) -> str:
    """The runbook's settings, then its switchover: it names this primary and the other member as the candidate."""
    said = install.run(runbook(RUNBOOK, ("switchover-set", "switchover"), RUNBOOK_SETTINGS))
    old = pod["metadata"]["name"]
    candidate = next(p["metadata"]["name"] for p in members(install) if p["metadata"]["name"] != old)
    assert f"primary: {old}, to promote: {candidate}" in said, said
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


def test_the_runbooks_check_shows_the_new_primary_as_patronis_leader(install: Install, switched: HandOver) -> None:
    """Once the status names the old primary the synchronous standby again (a loop after it streams): the runbook
    reads its candidate from there."""

    def synchronous_again() -> bool:
        (shard,) = install.get("sharddb", "-n", NAMESPACE, NAME)["status"]["replication"]["shards"]
        return bool(shard.get("syncStandby") == switched.old)

    wait_until(f"{switched.old} the synchronous standby in the status", synchronous_again, 60, every=1)
    said = install.run(runbook(RUNBOOK, ("switchover-set", "switchover-check"), RUNBOOK_SETTINGS))
    assert f"primary: {switched.new}, to promote: {switched.old}" in said, said
    assert [line for line in said.splitlines() if switched.new in line and "Leader" in line], said
