"""The old primary rejoins by ``pg_rewind`` after a failover, and a commit only it had is gone.

The primary's Patroni is stopped and the standby frozen (``podman pause``) while the primary commits one row
with ``synchronous_commit = local``: acknowledged on one copy only, the window the replication page names.
The primary's PostgreSQL is then shut down and the standby thawed: Patroni promotes it onto the next
timeline. Its Patroni continued, the old primary finds another member leading, rewinds its data
directory to the fork (``use_pg_rewind``, with the data checksums ``initdb`` enabled) and follows the new
primary. Both members then hold the same rows in every table.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from .members import Member, PodmanError, Shard, podman, wait_for

TABLE = "rejoin"


@dataclass(frozen=True)
class Rejoined:
    old: Member
    new: Member
    log: str  # the old primary's log since it was thawed


def tables(member: Member) -> dict[str, str]:
    """Every table of the ``public`` schema and a checksum of its rows, in a stable order."""
    names = member.sql("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = 'public' ORDER BY 1").split()
    return {
        name: member.sql(f"SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM public.{name} t")
        for name in names
    }


def streams_from(member: Member, primary: Member) -> bool:
    """The member is in recovery, receiving from ``primary``, and has replayed all ``primary`` has written."""
    try:
        if member.sql("SELECT pg_catalog.pg_is_in_recovery()") != "t":
            return False
        if member.sql("SELECT status FROM pg_catalog.pg_stat_wal_receiver") != "streaming":
            return False
        return member.lsn("pg_last_wal_replay_lsn") >= primary.lsn("pg_current_wal_flush_lsn")
    except Exception:  # psql refused while PostgreSQL restarts as a standby
        return False


# The daemon's PID: a child of PID 1 whose command line names patroni. As PID 1, Patroni forks its daemon and
# stays as the container's init, forwarding the signals it can catch: SIGSTOP to PID 1 would stop only the init.
DAEMON = (
    'for stat in /proc/[0-9]*/stat; do set -- $(cat "$stat"); '
    '[ "$4" = 1 ] && tr "\\0" " " < "/proc/$1/cmdline" | grep -q patroni && echo "$1"; done; true'
)


def patroni_signal(member: Member, signal: str) -> None:
    """Stop or continue the member's Patroni daemon alone; its PostgreSQL runs on."""
    pids = podman("exec", member.container, "sh", "-c", DAEMON).split()
    assert len(pids) == 1, f"{member.name}: Patroni's daemon not found alone among PID 1's children: {pids}"
    podman("exec", member.container, "sh", "-c", f'kill -{signal} "$1"', "sh", pids[0])


def shut_down(member: Member) -> None:
    """PostgreSQL's fast shutdown (SIGINT to the postmaster), waited for: a clean stop that ``pg_rewind`` takes as
    its target, while the member's Patroni, stopped, does not start it again."""
    data = member.sql("SHOW data_directory")
    podman("exec", member.container, "sh", "-c", f'kill -INT "$(head -n 1 {data}/postmaster.pid)"')
    wait_for(f"{member.name}'s PostgreSQL stopped", lambda: not running(member), [member], timeout=60.0)


def running(member: Member) -> bool:
    try:
        member.sql("SELECT 1")
    except PodmanError:
        return False
    return True


@pytest.fixture(scope="module")
def rejoined(shard: Shard, leader: Member, standby: Member) -> Rejoined:
    """Row 1 on both members; row 2 acknowledged by the primary alone; then a failover and the old primary back.

    The primary's Patroni is stopped first, so nothing takes the standby out of ``<scope>-sync`` and it
    may still be promoted; the standby is frozen before the primary's walsender is ended, so it cannot
    connect again and receive row 2. The old primary's PostgreSQL is shut down (not frozen) before the
    standby is thawed: a frozen postmaster's listen backlog would take the standby's reconnection in,
    and stream row 2 to it the moment it was thawed, so no fork would be left to rewind.
    """
    wait_for(
        f"{standby.name} named in {shard.scope}-sync and in its leader's failsafe topology",
        lambda: shard.promotable(standby.name),
        [leader, standby],
    )
    leader.sql(f"CREATE TABLE public.{TABLE} (n int PRIMARY KEY)")
    leader.sql(f"INSERT INTO public.{TABLE} VALUES (1)")
    wait_for(f"{standby.name} has row 1", lambda: streams_from(standby, leader), [leader, standby])
    patroni_signal(leader, "STOP")
    podman("pause", standby.container)
    try:
        leader.sql("SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_replication")
        leader.sql(f"SET synchronous_commit = local; INSERT INTO public.{TABLE} VALUES (2)")
        assert leader.sql(f"SELECT count(*) FROM public.{TABLE}") == "2"
        shut_down(leader)
    finally:
        podman("unpause", standby.container)
    try:
        wait_for(f"{standby.name} leads", lambda: shard.holder("leader") == standby.name, [standby])
    finally:
        patroni_signal(leader, "CONT")
    wait_for(f"{leader.name} streams from {standby.name}", lambda: streams_from(leader, standby), [leader, standby])
    return Rejoined(leader, standby, leader.logs(400))


def test_the_standby_is_promoted_onto_the_next_timeline(rejoined: Rejoined) -> None:
    assert rejoined.new.sql("SELECT pg_catalog.pg_is_in_recovery()") == "f"
    timeline = "SELECT timeline_id FROM pg_catalog.pg_control_checkpoint()"
    assert int(rejoined.new.sql(timeline)) >= 2


def test_the_old_primary_rejoins_by_pg_rewind(rejoined: Rejoined) -> None:
    assert "pg_rewind" in rejoined.log, rejoined.log[-3000:]


def test_a_commit_only_the_old_primary_had_is_gone(rejoined: Rejoined) -> None:
    for member in (rejoined.old, rejoined.new):
        assert member.sql(f"SELECT string_agg(n::text, ',' ORDER BY n) FROM public.{TABLE}") == "1"


def test_both_members_hold_the_same_rows_in_every_table(rejoined: Rejoined) -> None:
    assert tables(rejoined.old) == tables(rejoined.new)
    assert TABLE in tables(rejoined.new)
