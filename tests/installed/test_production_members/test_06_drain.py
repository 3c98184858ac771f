"""A drain of the primary's node, as a person runs ``kubectl drain``: the standby takes over, the evicted member
comes back on its node once uncordoned (its volume is node-bound)."""

from __future__ import annotations

import pytest

from ..installs import Install
from ..invariants import Record, Report
from .disturbances import HandOver, drain_node, report_hand_over, stop_primary
from .shard import BroughtUp


@pytest.fixture(scope="module")
def drained(install: Install, brought_up: BroughtUp) -> HandOver:
    _ = brought_up
    return stop_primary(
        install,
        "drain of the primary's node, 2 members (node-bound volumes)",
        "drain",
        lambda pod: drain_node(install, pod),
    )


def test_draining_the_primarys_node_makes_the_standby_primary(drained: HandOver, report: Report) -> None:
    report_hand_over(report, "drain", drained)
    assert drained.new != drained.old


def test_no_acknowledged_commit_is_lost_when_the_primarys_node_is_drained(drained: HandOver, outages: Record) -> None:
    drained.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_during_a_drain(drained: HandOver) -> None:
    drained.seen.never_two_primaries(handed_to=drained.new)
