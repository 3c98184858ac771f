"""Members given ``PGPASSWORD`` (the superuser's password), as ``spec.db.env`` from the example would give them.

Patroni writes the replication user's password to its password file and hands ``pg_basebackup`` the
file (``PGPASSFILE``) but keeps the rest of its own environment; libpq reads ``PGPASSWORD`` before
any password file. Seen here on both images rather than taken from the source: the cause of the
hooks' ``ReplicationPasswordRefused`` (``hooks.replication``). The same members without it clone and
stream (``test_members.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .members import PASSWORDS, Member, Shard, start_member, wait_for

PGPASSWORD = {"PGPASSWORD": PASSWORDS["PATRONI_SUPERUSER_PASSWORD"]}
REFUSED = 'password authentication failed for user "replicator"'


@pytest.fixture(scope="module")
def leader_with_pgpassword(shard: Shard) -> Iterator[Member]:
    member = start_member(shard, 0, PGPASSWORD)
    try:
        yield member
    finally:
        member.remove()


@pytest.fixture(scope="module")
def standby_with_pgpassword(shard: Shard, leader_with_pgpassword: Member) -> Iterator[Member]:
    leader = leader_with_pgpassword
    wait_for(f"{leader.name} holds {shard.scope}-leader", lambda: shard.holder("leader") == leader.name, [leader])
    member = start_member(shard, 1, PGPASSWORD)
    try:
        yield member
    finally:
        member.remove()


def test_a_lone_member_given_pgpassword_still_leads(shard: Shard, leader_with_pgpassword: Member) -> None:
    leader = leader_with_pgpassword
    wait_for(f"{leader.name} holds {shard.scope}-leader", lambda: shard.holder("leader") == leader.name, [leader])
    assert leader.sql("SELECT pg_is_in_recovery()") == "f"


def test_a_second_member_given_pgpassword_cannot_clone_as_the_replication_user(
    shard: Shard, leader_with_pgpassword: Member, standby_with_pgpassword: Member
) -> None:
    leader, standby = leader_with_pgpassword, standby_with_pgpassword
    wait_for(
        f"{standby.name}'s pg_basebackup refused: {REFUSED}",
        lambda: REFUSED in standby.logs(400),
        [leader, standby],
    )
    assert leader.sql("SELECT count(*) FROM pg_stat_replication") == "0"
    assert shard.holder("sync", "sync_standby") is None
