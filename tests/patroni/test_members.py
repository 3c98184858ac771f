"""Real Patroni, with the hooks' rendered configuration and exactly their RBAC, against the real API server.

Each test runs on both images (the recipe users build, and the same made from Debian packages).
"""

from __future__ import annotations

from hooks.replication import LEADER_LABEL_VALUE, ROLE_LABEL

from .members import Member, Shard, wait_for


def test_a_lone_member_takes_the_shards_leader_lock(shard: Shard, leader: Member) -> None:
    wait_for(f"{leader.name} holds {shard.scope}-leader", lambda: shard.holder("leader") == leader.name, [leader])


def test_the_leader_is_a_primary_that_commits_a_write(shard: Shard, leader: Member) -> None:
    wait_for(f"{leader.name} holds {shard.scope}-leader", lambda: shard.holder("leader") == leader.name, [leader])
    assert leader.sql("SELECT pg_is_in_recovery()") == "f"
    leader.sql("CREATE TABLE orders (id int PRIMARY KEY)")
    assert leader.sql("INSERT INTO orders VALUES (1) RETURNING id") == "1"
    assert leader.sql("SELECT count(*) FROM orders") == "1"


def test_the_leader_labels_its_pod_for_the_primary_service(shard: Shard, leader: Member) -> None:
    wait_for(
        f"{leader.name}'s pod labelled {ROLE_LABEL}={LEADER_LABEL_VALUE}",
        lambda: shard.pod(leader.name)["metadata"].get("labels", {}).get(ROLE_LABEL) == LEADER_LABEL_VALUE,
        [leader],
    )


def test_a_second_member_becomes_the_synchronous_standby_named_in_the_sync_configmap(
    shard: Shard, leader: Member, standby: Member
) -> None:
    wait_for(
        f"{shard.scope}-sync names {standby.name}",
        lambda: shard.holder("sync", "sync_standby") == standby.name,
        [leader, standby],
    )
    assert leader.sql("SELECT application_name, state, sync_state FROM pg_stat_replication") == (
        f"{standby.name}|streaming|sync"
    )
    assert standby.sql("SELECT pg_is_in_recovery()") == "t"


def test_the_members_account_is_refused_what_the_hooks_role_does_not_grant(shard: Shard, leader: Member) -> None:
    wait_for(f"{leader.name} holds {shard.scope}-leader", lambda: shard.holder("leader") == leader.name, [leader])
    base = f"/api/v1/namespaces/{shard.namespace}"
    with shard.as_members() as client:
        assert client.get(f"{base}/configmaps/{shard.scope}-leader").status_code == 200
        assert client.get(f"{base}/secrets").status_code == 403
        assert client.get(f"{base}/endpoints").status_code == 403
        assert client.delete(f"{base}/configmaps/{shard.scope}-leader").status_code == 403
        assert client.delete(f"{base}/pods/{leader.name}").status_code == 403
