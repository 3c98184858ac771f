"""The primary's node powered off (its kubelet, containerd and every container's process killed, its link down):
the standby takes over with no person acting, and the old member rejoins once the node is back. The clients run
on the standby's node."""

from __future__ import annotations

import pytest

from ..installs import Install
from ..invariants import Record, Report
from .disturbances import NodeLost, lose_primarys_node, report_node_lost
from .shard import BroughtUp


@pytest.fixture(scope="module")
def powered_off(install: Install, brought_up: BroughtUp) -> NodeLost:
    _ = brought_up
    return lose_primarys_node(install, "primary's node powered off, 2 members", "power", power=True)


def test_a_primary_whose_node_loses_power_is_replaced_by_its_standby_with_no_person_acting(
    powered_off: NodeLost, report: Report
) -> None:
    report_node_lost(report, "powered off", powered_off)
    assert powered_off.new != powered_off.old


def test_no_acknowledged_commit_is_lost_when_the_primarys_node_loses_power(
    powered_off: NodeLost, outages: Record
) -> None:
    powered_off.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_when_the_primarys_node_loses_power(powered_off: NodeLost) -> None:
    powered_off.seen.never_two_primaries()
