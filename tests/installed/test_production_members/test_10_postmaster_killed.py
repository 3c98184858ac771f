"""The primary's postmaster SIGKILLed, as the OOM killer would: Patroni, still leading, starts PostgreSQL again."""

from __future__ import annotations

import pytest

from ..installs import Install, Obj
from ..invariants import Record, Report
from .disturbances import Disturbed, disturb, watched
from .shard import NAMESPACE, BroughtUp


def kill_postmaster(install: Install, pod: Obj) -> None:
    """SIGKILL to the primary's postmaster (its pid is the first line of ``postmaster.pid``), as the OOM killer."""
    pid_file = "/var/lib/postgresql/data/pgdata/postmaster.pid"
    name = pod["metadata"]["name"]
    install.kubectl("exec", "-n", NAMESPACE, name, "-c", "db", "--", "sh", "-c", f'kill -KILL "$(head -1 {pid_file})"')


@pytest.fixture(scope="module")
def postmaster_killed(install: Install, brought_up: BroughtUp) -> Disturbed:
    _ = brought_up

    def kill(primary: Obj, _: Obj) -> None:
        kill_postmaster(install, primary)

    return disturb(install, "primary's postmaster SIGKILLed, 2 members", "postmaster", kill)


def test_a_killed_postmaster_loses_no_acknowledged_commit(postmaster_killed: Disturbed, outages: Record) -> None:
    postmaster_killed.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_when_the_postmaster_is_killed(
    postmaster_killed: Disturbed, report: Report
) -> None:
    report(
        f"postmaster killed: primary changes {postmaster_killed.changes}; "
        f"polled {watched(postmaster_killed.seen.polled)}"
    )
    postmaster_killed.seen.never_two_primaries()
