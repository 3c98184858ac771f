"""The API server stopped for 30 s and started again on its data: the primary keeps serving (Patroni's failsafe
mode)."""

from __future__ import annotations

import time

import pytest

from ..installs import Install, Obj
from ..invariants import Record, Report
from .disturbances import Disturbed, disturb
from .shard import BroughtUp, patroni_said, patroni_says

API_DOWN_SECONDS = 30


@pytest.fixture(scope="module")
def api_server_down(install: Install, brought_up: BroughtUp) -> Disturbed:
    """The API server stopped for 30 s and started again on its data, as a control plane's outage."""
    _ = brought_up
    plane = install.stack.control_plane

    def outage(_: Obj, __: Obj) -> None:
        plane.kill("kube-apiserver")
        time.sleep(API_DOWN_SECONDS)
        plane.restart("kube-apiserver")

    return disturb(install, f"API server down {API_DOWN_SECONDS} s, 2 members", "apiserver", outage)


def test_with_the_api_server_down_the_primary_stays_primary(
    install: Install, api_server_down: Disturbed, report: Report
) -> None:
    said = patroni_says(install, api_server_down.primary, api_server_down.since)
    report(
        f"API server down: primary changes {api_server_down.changes}; {api_server_down.moments}; its Patroni: {said}"
    )
    assert api_server_down.changes == 0
    every = [line for _, line, _ in patroni_said(install, api_server_down.primary, api_server_down.since)]
    assert any("failsafe" in line for line in every), f"the primary's Patroni never said failsafe: {every}"


def test_no_acknowledged_commit_is_lost_while_the_api_server_is_down(
    api_server_down: Disturbed, outages: Record
) -> None:
    api_server_down.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_while_the_api_server_is_down(api_server_down: Disturbed) -> None:
    api_server_down.seen.never_two_primaries()
