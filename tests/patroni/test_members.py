"""Real Patroni, with the hooks' rendered configuration and exactly their RBAC, against the real API server.

Each test runs on both images (the recipe users build, and the same made from Debian packages).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import httpx
import pytest

from hooks.names import FOLLOWER_LABEL_VALUE, LEADER_LABEL_VALUE, ROLE_LABEL, SCOPE_LABEL
from hooks.replication import config as patroni_config
from hooks.replication import tls
from hooks.replication.health import MemberState, member_states
from hooks.replication.marks import Failover, MemberPod

from .members import DB_PORT, LOCAL_CLIENT, PASSWORDS, Member, Shard, podman, wait_for


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


MERGE = {"Content-Type": "application/merge-patch+json"}


def test_the_members_account_may_patch_only_its_own_sharddbs_pods_and_configmaps(shard: Shard, leader: Member) -> None:
    """Patroni runs on the Role's names alone (it holds the leader lock), and another ShardDB's names are refused."""
    wait_for(f"{leader.name} holds {shard.scope}-leader", lambda: shard.holder("leader") == leader.name, [leader])
    base = f"/api/v1/namespaces/{shard.namespace}"
    relabel = {"metadata": {"labels": {SCOPE_LABEL: shard.scope, ROLE_LABEL: LEADER_LABEL_VALUE}}}
    with shard.as_members() as client:
        assert client.patch(f"{base}/pods/other-db-0-0", json=relabel, headers=MERGE).status_code == 403
        assert client.patch(f"{base}/configmaps/other-db-0-leader", json={}, headers=MERGE).status_code == 403
        assert client.get(f"{base}/configmaps/other-db-0-config").status_code == 403
        assert client.patch(f"{base}/pods/{leader.name}", json={}, headers=MERGE).status_code == 200


def config_patch(member: Member, *, auth: tuple[str, str] | None, source: str = LOCAL_CLIENT) -> int:
    """A ``PATCH /config`` that changes nothing (``ttl`` as it is), from ``source``: its answer's status."""
    transport = httpx.HTTPTransport(local_address=source, verify=False)  # a member's own certificate: no CA
    url = f"https://{member.address}:{patroni_config.PATRONI_PORT}/config"
    with httpx.Client(transport=transport, timeout=10) as client:
        if auth is None:
            return client.patch(url, json=SAME).status_code
        return client.patch(url, json=SAME, auth=httpx.BasicAuth(*auth)).status_code


SAME = {"ttl": patroni_config.TTL}
RESTAPI = (PASSWORDS["PATRONI_RESTAPI_USERNAME"], PASSWORDS["PATRONI_RESTAPI_PASSWORD"])


def test_an_unsafe_call_without_the_rest_apis_credentials_is_refused(leader: Member) -> None:
    assert config_patch(leader, auth=None) == 401
    assert config_patch(leader, auth=(RESTAPI[0], "guessed")) == 401


def test_an_unsafe_call_with_the_rest_apis_credentials_is_answered(leader: Member) -> None:
    assert config_patch(leader, auth=RESTAPI) == 200


def test_an_unsafe_call_from_an_address_that_is_no_member_is_refused_even_with_the_credentials(
    leader: Member,
) -> None:
    """The members' allowlist (``allowlist_include_members``): here every member and the host's loopback."""
    assert config_patch(leader, auth=RESTAPI, source="127.0.0.9") == 403


# --- TLS between members, and to them (``hooks/replication/tls.py``) ----------------------------------------


def test_the_standby_streams_from_the_primary_over_tls(leader: Member, standby: Member) -> None:
    wait_for(f"{standby.name} streams", lambda: bool(leader.streams_to(standby.name)), [leader, standby])
    assert leader.streams_to(standby.name) == "t"


def psql_from(member: Member, to: Member, sslmode: str) -> subprocess.CompletedProcess[str]:
    """The superuser's password, from ``member``'s container to ``to``'s address, asking for ``sslmode``."""
    password = f"PGPASSWORD={PASSWORDS['PATRONI_SUPERUSER_PASSWORD']}"
    target = f"host={to.address} port={DB_PORT} user=postgres dbname=postgres sslmode={sslmode}"
    command = ["podman", "exec", "--env", password, member.container, "psql", target, "-XqAtc", "SELECT 1"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_a_session_without_tls_is_refused_even_with_the_password(leader: Member, standby: Member) -> None:
    refused = psql_from(standby, leader, "disable")
    assert refused.returncode != 0
    assert "no encryption" in refused.stderr, refused.stderr
    assert psql_from(standby, leader, "require").stdout.strip() == "1"  # the refusal is TLS's, not the password's


def test_the_rest_api_answers_https_only(leader: Member) -> None:
    transport = httpx.HTTPTransport(local_address=LOCAL_CLIENT, verify=False)
    with httpx.Client(transport=transport, timeout=10) as client:
        with pytest.raises(httpx.TransportError):
            client.get(f"http://{leader.address}:{patroni_config.PATRONI_PORT}/patroni")
        assert client.get(f"https://{leader.address}:{patroni_config.PATRONI_PORT}/patroni").status_code == 200


def test_a_members_key_is_readable_by_its_owner_alone(leader: Member) -> None:
    assert podman("exec", leader.container, "stat", "-c", "%a %U", tls.KEY).strip() == "600 postgres"


# --- what the hooks read of the members' marks, held to real Patroni -------------------------------------


def read(shard: Shard, *members: Member) -> dict[str, MemberState]:
    """The members as the status shows them, read from their pods' annotations exactly as the hooks read them."""
    return {state.name: state for state in member_states([MemberPod.from_pod(shard.pod(m.name)) for m in members])}


def test_the_hooks_read_the_primary_without_lag_and_a_paused_standby_with_the_lag_postgresql_reports(
    shard: Shard, leader: Member, standby: Member
) -> None:
    wait_for(
        f"{standby.name} streams from {leader.name}",
        lambda: read(shard, leader, standby)[standby.name].streams,
        [leader, standby],
    )
    # Patroni resumes a paused replay every loop on PostgreSQL 14+, except in maintenance mode.
    leader.patronictl("pause", shard.scope, "--wait")
    standby.sql("SELECT pg_catalog.pg_wal_replay_pause()")
    try:
        leader.sql("CREATE TABLE lagged AS SELECT generate_series(1, 1000) AS id")
        seen: dict[str, MemberState] = {}
        expected: list[int] = []

        def settled() -> bool:
            # Patroni writes a position once a loop: wait until both annotations show what PostgreSQL says now.
            head, replayed = leader.lsn("pg_current_wal_flush_lsn"), standby.lsn("pg_last_wal_replay_lsn")
            pods = {m.name: MemberPod.from_pod(shard.pod(m.name)) for m in (leader, standby)}
            if pods[leader.name].xlog_location != head or pods[standby.name].replay_lsn != replayed:
                return False
            seen.update({state.name: state for state in member_states(list(pods.values()))})
            expected[:] = [head - replayed]
            return True

        wait_for("both members' annotations to show PostgreSQL's positions", settled, [leader, standby])
    finally:
        standby.sql("SELECT pg_catalog.pg_wal_replay_resume()")
        leader.patronictl("resume", shard.scope, "--wait")
    primary, follower = seen[leader.name], seen[standby.name]
    assert (primary.role, primary.state, primary.timeline) == (LEADER_LABEL_VALUE, "running", 1)
    assert (primary.receive_lag, primary.replay_lag) == (None, None)
    assert (follower.role, follower.replication_state, follower.timeline) == (FOLLOWER_LABEL_VALUE, "streaming", 1)
    assert expected[0] > 0
    assert follower.replay_lag == expected[0]
    assert follower.receive_lag is not None
    assert follower.receive_lag < expected[0]  # what it received meanwhile, it has not replayed


def test_a_switchover_by_patronictl_is_read_as_the_last_failover_naming_the_new_primary(
    shard: Shard, leader: Member, standby: Member
) -> None:
    wait_for(
        f"{shard.scope}-sync names {standby.name}",
        lambda: shard.holder("sync", "sync_standby") == standby.name,
        [leader, standby],
    )
    assert Failover.from_config_map(shard.configmap("config")) is None
    leader.patronictl("switchover", shard.scope, "--leader", leader.name, "--candidate", standby.name, "--force")
    wait_for(
        f"{shard.scope}-config records the switchover to {standby.name}",
        lambda: Failover.from_config_map(shard.configmap("config")) is not None,
        [leader, standby],
    )
    last = Failover.from_config_map(shard.configmap("config"))
    assert last is not None
    assert (last.timeline, last.new_primary) == (2, standby.name)
    assert last.at is not None
    assert last.reason
    assert standby.name in standby.patronictl("history", shard.scope)
    wait_for(
        f"{leader.name} streams from {standby.name} on timeline 2",
        lambda: (state := read(shard, leader, standby)[leader.name]).streams and state.timeline == 2,
        [leader, standby],
    )


def test_a_standby_rebuilt_by_patronictl_reinit_streams_again(shard: Shard, leader: Member, standby: Member) -> None:
    """The runbook's command, flags as Patroni 4.1.5 takes them; after the switchover above, the first member is
    the standby, and the second the primary."""
    wait_for(
        f"{standby.name} holds {shard.scope}-leader",
        lambda: shard.holder("leader") == standby.name,
        [leader, standby],
    )
    standby.patronictl("reinit", shard.scope, leader.name, "--force", "--wait")
    wait_for(
        f"{leader.name} streams again from {standby.name}",
        lambda: read(shard, leader, standby)[leader.name].streams,
        [leader, standby],
    )
    assert leader.name in standby.patronictl("list", "-e", shard.scope)


# --- the replication page's edit-config, for a shard made before failsafe_mode ---------------------------

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reliability" / "replication.md"
TIMING = ("ttl", "loop_wait", "retry_timeout", "failsafe_mode")


def documented_edit_config() -> list[str]:
    """The arguments after ``edit-config`` in the page's command, as a user pastes it."""
    line = next(line for line in PAGE.read_text().splitlines() if "patronictl" in line and " edit-config " in line)
    return ["edit-config", *shlex.split(line.split(" edit-config ", 1)[1])]


def timing(shard: Shard) -> dict[str, object]:
    found = shard.configmap("config")
    assert found is not None
    config: dict[str, object] = json.loads(found["metadata"]["annotations"]["config"])
    return {key: config.get(key) for key in TIMING}


def test_the_documented_edit_config_gives_a_shard_made_before_failsafe_mode_todays_timing(
    shard: Shard, leader: Member, standby: Member
) -> None:
    wait_for(f"{shard.scope} has a leader", lambda: shard.holder("leader") is not None, [leader, standby])
    bootstrapped = timing(shard)
    leader.patronictl(
        "edit-config", "--force", "-s", "ttl=30", "-s", "loop_wait=10", "-s", "retry_timeout=10", "-s",
        "failsafe_mode=false",
    )  # fmt: skip
    assert timing(shard) == {"ttl": 30, "loop_wait": 10, "retry_timeout": 10, "failsafe_mode": False}
    leader.patronictl(*documented_edit_config())
    assert timing(shard) == bootstrapped == {"ttl": 20, "loop_wait": 5, "retry_timeout": 7, "failsafe_mode": True}
