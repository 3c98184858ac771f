"""Strict mode (``spec.replication.strict``): with its only standby away, the primary acknowledges no commit until a
standby is back, rather than acknowledge it on one copy (the default shape's window, on the replication page).

The standby's container is stopped (its Patroni shuts PostgreSQL down, as a pod's SIGTERM does) while a commit is
made on the primary; the standby's container is then started again, clones the primary anew (its data directory
was memory) and is named synchronous, and only then is the commit acknowledged.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from testbed.real.machine import podman_runtime

from .members import DB_PORT, SOCKET_DIR, Member, PodmanError, Shard, podman, wait_for

TABLE = "strict"
# Three of Patroni's loops (5 s): time for the primary to drop a standby from synchronous_standby_names, were
# it not strict.
AWAY_SECONDS = 15.0
STRICT = True  # the tier's shard fixture makes this module's shard strict


@dataclass(frozen=True)
class Waited:
    while_away: int | None  # the commit's exit status while the standby was away; None: still waiting
    seen_while_away: str  # the row count another session saw meanwhile
    status: int  # the commit's exit status once the standby was back
    waited: float  # seconds from the commit to its acknowledgement
    away: float  # seconds from the commit to the standby's start


def insert(member: Member) -> subprocess.Popen[str]:
    """An INSERT in its own session on the member's socket, left running: its exit is the acknowledgement."""
    psql = ["psql", "-h", SOCKET_DIR, "-p", str(DB_PORT), "-U", "postgres", "-XqAtc"]
    psql.append(f"INSERT INTO public.{TABLE} VALUES (1)")
    return subprocess.Popen(
        ["podman", "--runtime", podman_runtime(), "exec", member.container, *psql],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.fixture(scope="module")
def waited(shard: Shard, leader: Member, standby: Member) -> Iterator[Waited]:
    wait_for(f"{standby.name} is synchronous", lambda: shard.promotable(standby.name), [leader, standby])
    leader.sql(f"CREATE TABLE public.{TABLE} (n int PRIMARY KEY)")
    podman("stop", "--time", "30", standby.container)
    commit = insert(leader)
    began = time.monotonic()
    try:
        time.sleep(AWAY_SECONDS)
        while_away = commit.poll()
        seen = leader.sql(f"SELECT count(*) FROM public.{TABLE}")
        started = time.monotonic()
        podman("start", standby.container)
        commit.wait(timeout=300)
        acknowledged = time.monotonic()
        yield Waited(while_away, seen, commit.returncode, acknowledged - began, started - began)
    finally:
        if commit.poll() is None:
            commit.kill()


def test_a_commit_is_not_acknowledged_while_the_only_standby_is_away(waited: Waited) -> None:
    assert waited.while_away is None, f"the commit ended (exit {waited.while_away}) with no standby running"


def test_the_waiting_commit_is_invisible_to_other_sessions(waited: Waited) -> None:
    assert waited.seen_while_away == "0"


def test_the_commit_is_acknowledged_once_the_standby_is_back_and_holds_it(
    waited: Waited, leader: Member, standby: Member
) -> None:
    assert waited.status == 0
    print(f"strict: the commit waited {waited.waited:.1f} s, of which {waited.away:.1f} s before the standby started")
    assert leader.sql(f"SELECT count(*) FROM public.{TABLE}") == "1"
    wait_for(f"{standby.name} answers, holding the row", lambda: holds_the_row(standby), [standby], timeout=60.0)


def holds_the_row(member: Member) -> bool:
    """The standby may be restarting PostgreSQL after its clone when its first commit has been acknowledged."""
    try:
        return member.sql(f"SELECT count(*) FROM public.{TABLE}") == "1"
    except PodmanError:
        return False
