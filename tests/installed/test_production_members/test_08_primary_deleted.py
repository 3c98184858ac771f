"""The primary pod deleted: Patroni hands over as it stops, the StatefulSet makes the pod anew as a standby; the
failover runbook's questions, run as written, then name the promotion."""

from __future__ import annotations

import pytest

from ..installs import Install
from ..invariants import Record, Report
from ..steps import ROOT, runbook
from .disturbances import HandOver, report_hand_over, stop_primary
from .shard import PRIMARY_SERVICE, RUNBOOK_SETTINGS, BroughtUp, delete_pod, endpoints_of

RUNBOOK = ROOT / "docs" / "runbooks" / "failover-happened.md"


@pytest.fixture(scope="module")
def failover(install: Install, brought_up: BroughtUp) -> HandOver:
    _ = brought_up
    return stop_primary(
        install,
        "primary pod deleted, 2 members (Patroni hands over as it stops)",
        "failover",
        lambda pod: delete_pod(install, pod),
    )


def test_deleting_the_primary_pod_makes_the_standby_primary(failover: HandOver) -> None:
    assert failover.new != failover.old


def test_a_failover_starts_no_rollout_job(failover: HandOver) -> None:
    assert failover.jobs == []


def test_after_the_failover_the_primary_service_reaches_the_new_primary(install: Install, failover: HandOver) -> None:
    assert endpoints_of(install, PRIMARY_SERVICE) == [failover.new]


def test_no_acknowledged_commit_is_lost_when_the_primary_pod_is_deleted(failover: HandOver, outages: Record) -> None:
    failover.seen.no_acknowledged_commit_lost(outages)


def test_the_two_members_never_both_answer_that_they_accept_writes(failover: HandOver, report: Report) -> None:
    report_hand_over(report, "failover", failover)
    failover.seen.never_two_primaries(handed_to=failover.new)


def test_the_failover_runbooks_questions_name_the_new_primary_and_its_promotion(
    install: Install, failover: HandOver
) -> None:
    blocks = ("failover-set", "failover-status", "failover-patroni", "failover-history")
    said = install.run(runbook(RUNBOOK, blocks, RUNBOOK_SETTINGS))
    assert f"primary now: {failover.new}, before: {failover.old}" in said, said
    # The status block: one line per shard, its number, its primary and its last failover.
    (shard,) = [line.split("\t", 2) for line in said.splitlines() if line.startswith("0\t")]
    assert shard[1] == failover.new, said
    assert f'"newPrimary":"{failover.new}"' in shard[2], said
    assert [line for line in said.splitlines() if failover.new in line and "Leader" in line], said
