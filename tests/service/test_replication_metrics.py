"""The per-shard series of a ShardDB with members: each shard's health as the answer gave it, its streaming
standbys and each standby's lag, which the replication alerts read (``rules.yaml``, group sharddb-replication).

A shard's health is exported as the status says it, before the grace the Degraded condition waits, and
per shard: one shard's missing standby is never hidden behind another shard's or another reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from hooks import names
from hooks.service.app import create_app
from hooks.service.views import OTHER, view_of

from ..support import replication as members
from ..support.hook import Labels, ManualClock, series

Obj = dict[str, Any]
MIB = 1024 * 1024


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(clock=ManualClock())) as client:
        yield client


def synced(client: TestClient, related: list[Obj]) -> str:
    """One sync of the running ShardDB with members (``demo`` in ``shop``) beside ``related``, then a scrape."""
    running = members.stages()["running"]
    request = members.request(members.parent(), members.applied(running["children"]), related)
    answered = client.post("/sync", json=request)
    assert answered.status_code == 200, answered.text
    text: str = client.get("/metrics").text
    return text


def of(**extra: str) -> Labels:
    return tuple(sorted({"namespace": "shop", "name": "demo", **extra}.items()))


def healthy() -> list[Obj]:
    return members.healthy() + [members.sync_record(s) for s in range(2)] + [members.primary_slice(s) for s in range(2)]


def test_each_shard_with_members_exports_its_health(client: TestClient) -> None:
    text = synced(client, healthy())
    assert series(text, "sharddb_shard_health") == {
        of(shard="0", reason="Ready"): 1.0,
        of(shard="1", reason="Ready"): 1.0,
    }
    assert series(text, "sharddb_replication_members") == {of(): 2.0}


def test_a_shard_whose_standby_does_not_stream_exports_no_sync_standby_beside_a_healthy_one(
    client: TestClient,
) -> None:
    marks = [
        members.member_pod(0, 0, names.LEADER_LABEL_VALUE),
        members.member_pod(0, 1, names.FOLLOWER_LABEL_VALUE, streaming=False),
        members.member_pod(1, 0, names.LEADER_LABEL_VALUE),
        members.member_pod(1, 1, names.FOLLOWER_LABEL_VALUE),
        *[members.sync_record(s) for s in range(2)],
        *[members.primary_slice(s) for s in range(2)],
    ]
    text = synced(client, marks)
    assert series(text, "sharddb_shard_health") == {
        of(shard="0", reason="NoSyncStandby"): 1.0,
        of(shard="1", reason="Ready"): 1.0,
    }
    assert series(text, "sharddb_shard_streaming_standbys") == {of(shard="0"): 0.0, of(shard="1"): 1.0}


def test_two_members_labelled_primary_export_two_primaries(client: TestClient) -> None:
    marks = [members.member_pod(0, 0, names.LEADER_LABEL_VALUE), members.member_pod(0, 1, names.LEADER_LABEL_VALUE)]
    text = synced(client, [*marks, members.member_pod(1, 0, names.LEADER_LABEL_VALUE), members.sync_record(1)])
    assert series(text, "sharddb_shard_health")[of(shard="0", reason="TwoPrimaries")] == 1.0


def test_a_standbys_lag_is_exported_in_bytes_of_whole_mib_under_its_name(client: TestClient) -> None:
    marks = [
        members.member_pod(0, 0, names.LEADER_LABEL_VALUE),
        members.member_pod(0, 1, names.FOLLOWER_LABEL_VALUE, behind=3 * MIB + 5),
        members.member_pod(1, 0, names.LEADER_LABEL_VALUE),
        members.member_pod(1, 1, names.FOLLOWER_LABEL_VALUE),
        *[members.sync_record(s) for s in range(2)],
    ]
    text = synced(client, marks)
    standby = names.member_name("demo", 0, 1)
    assert series(text, "sharddb_standby_replay_lag_bytes")[of(shard="0", member=standby)] == 3 * MIB
    assert series(text, "sharddb_standby_receive_lag_bytes")[of(shard="0", member=standby)] == 3 * MIB
    primary = names.member_name("demo", 0, 0)
    assert of(shard="0", member=primary) not in series(text, "sharddb_standby_replay_lag_bytes")


def test_a_sharddb_of_single_copies_exports_no_replication_series() -> None:
    status = {"phase": "Available", "readyShards": 3, "shards": 3, "conditions": conditions()}
    view = view_of({"status": status}, "digest", ManualClock().now)
    assert (view.members, view.shards) == (None, ())


def test_a_shard_health_not_in_the_closed_set_is_exported_as_other() -> None:
    replication = {"members": 2, "synchronous": True, "shards": [shard_entry("SomethingNew")]}
    status = {
        "phase": "Available",
        "readyShards": 1,
        "shards": 1,
        "conditions": conditions(),
        "replication": replication,
    }
    (shard,) = view_of({"status": status}, "digest", ManualClock().now).shards
    assert shard.health == OTHER


def conditions() -> list[Obj]:
    return [
        {"type": "Available", "status": "True", "reason": "AsExpected"},
        {"type": "Degraded", "status": "False", "reason": "AsExpected"},
    ]


def shard_entry(reason: str) -> Obj:
    return {"shard": 0, "ready": False, "reason": reason, "message": "shard 0: ?"}
