"""The primary's node cut off from its peers and the API server (its link down, its kubelet and PostgreSQL still
running): it stops taking writes before its standby takes over, with no person acting. The clients run on the
standby's node, and a poller beside the old primary hears what the cut-off side could still write."""

from __future__ import annotations

import pytest

from ..installs import Install
from ..invariants import Record, Report
from .disturbances import NodeLost, first_said_primary, last_said_primary, lose_primarys_node, report_node_lost
from .shard import BroughtUp


@pytest.fixture(scope="module")
def cut_off(install: Install, brought_up: BroughtUp) -> NodeLost:
    _ = brought_up
    return lose_primarys_node(
        install, "primary's node cut off from its peers and the API server, 2 members", "cut", power=False
    )


def test_a_primary_cut_off_is_replaced_by_its_standby_with_no_person_acting(cut_off: NodeLost, report: Report) -> None:
    report_node_lost(report, "cut off", cut_off)
    assert cut_off.new != cut_off.old


def test_a_primary_cut_off_stops_taking_writes_before_its_standby_takes_over(cut_off: NodeLost) -> None:
    last = last_said_primary(cut_off.seen.polled, cut_off.old, cut_off.since)
    first = first_said_primary(cut_off.seen.polled, cut_off.new, cut_off.since)
    assert last is not None, "the poller beside the old primary never heard it say f after the cut"
    assert first is not None, "the new primary was never heard saying f"
    assert last < first


def test_no_acknowledged_commit_is_lost_when_the_primarys_node_is_cut_off(cut_off: NodeLost, outages: Record) -> None:
    cut_off.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_when_the_primarys_node_is_cut_off(cut_off: NodeLost) -> None:
    cut_off.seen.never_two_primaries()
