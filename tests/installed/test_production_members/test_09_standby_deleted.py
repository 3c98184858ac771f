"""The standby pod deleted: writes go on, the primary stays where it is, the standby is made anew."""

from __future__ import annotations

import pytest

from ..installs import Install, Obj
from ..invariants import Record, Report
from .disturbances import Disturbed, disturb, watched
from .shard import BroughtUp, delete_pod


@pytest.fixture(scope="module")
def standby_deleted(install: Install, brought_up: BroughtUp) -> Disturbed:
    _ = brought_up

    def delete_standby(_: Obj, standby: Obj) -> None:
        delete_pod(install, standby)

    return disturb(install, "standby pod deleted, 2 members (writes go on)", "standby", delete_standby, "standby")


def test_deleting_the_standby_moves_no_primary(standby_deleted: Disturbed, report: Report) -> None:
    report(f"standby deleted: back in {standby_deleted.seconds:.1f} s; polled {watched(standby_deleted.seen.polled)}")
    assert standby_deleted.changes == 0


def test_a_standby_made_anew_starts_no_rollout_job(standby_deleted: Disturbed) -> None:
    assert standby_deleted.jobs == []


def test_no_acknowledged_commit_is_lost_when_the_standby_is_deleted(
    standby_deleted: Disturbed, outages: Record
) -> None:
    standby_deleted.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_when_the_standby_is_deleted(standby_deleted: Disturbed) -> None:
    standby_deleted.seen.never_two_primaries()
