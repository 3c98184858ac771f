"""The fault campaign's invariants, each shown to catch what it names and to pass a lifecycle that keeps it.

Histories are written change by change as the API server would store them
(``testbed.faults.history.Change``, revision order); the campaign itself runs in
``tests/e2e/test_chaos.py``.
"""

from __future__ import annotations

import itertools
from typing import Any

from testbed.faults.history import Change, facts
from testbed.faults.invariants import check, degraded_after, longest_unavailable

Obj = dict[str, Any]
NS = "fleet"


class Record:
    """A history being written: each ``add`` is the next revision, a second later."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self._revision = itertools.count(100)
        self._uids = itertools.count(1)
        self._uid: dict[tuple[str, str], str] = {}

    def add(self, kind: str, name: str, type_: str = "MODIFIED", **found: Any) -> None:
        revision = next(self._revision)
        uid = self._uid.setdefault((kind, name), f"uid-{next(self._uids)}")
        if type_ == "ADDED" and self.changes and any(c.type == "DELETED" and c.name == name for c in self.changes):
            uid = self._uid[(kind, name)] = f"uid-{next(self._uids)}"
        base: Obj = {"deleting": False}
        self.changes.append(Change(revision, float(revision), type_, kind, NS, name, uid, {**base, **found}))


def sharddb(record: Record, type_: str = "MODIFIED", **found: Any) -> None:
    state = {"shards": 3, "hibernated": False, "available": False, "degraded": False, **found}
    record.add("ShardDB", "db", type_, **state)


def ready_shards(record: Record, shards: int = 3, ready: int = 3) -> None:
    record.add("StatefulSet", "db-db", "ADDED", instance="db", replicas=shards, ready=ready)
    for ordinal in range(shards):
        record.add("Pod", f"db-db-{ordinal}", "ADDED", instance="db", component="db", phase="Running")
    record.add("EndpointSlice", "db-db-x", "ADDED", service="db-db", ready=ready)


def seeded(record: Record, shards: int = 3) -> None:
    record.add("Job", f"db-seed-{shards}", "ADDED", instance="db", complete=False)
    record.add("Job", f"db-seed-{shards}", instance="db", complete=True)


def cache(record: Record, type_: str = "ADDED", replicas: int = 2) -> None:
    record.add("Deployment", "db-cache", type_, instance="db", component="cache", replicas=replicas)
    if type_ == "ADDED":
        for index in range(replicas):
            record.add("Pod", f"db-cache-{index}", "ADDED", instance="db", component="cache", phase="Running")


def lifecycle() -> Record:
    """Created, seeded, cached, then deleted in order: cache pods gone before any shard pod is marked."""
    record = Record()
    sharddb(record, "ADDED")
    ready_shards(record)
    seeded(record)
    cache(record)
    sharddb(record, available=True)
    sharddb(record, available=True, deleting=True)
    record.add("Deployment", "db-cache", "MODIFIED", instance="db", component="cache", replicas=0)
    for index in range(2):
        record.add("Pod", f"db-cache-{index}", "DELETED", instance="db", component="cache")
    record.add("StatefulSet", "db-db", instance="db", replicas=0, ready=3)
    for ordinal in range(3):
        record.add("Pod", f"db-db-{ordinal}", instance="db", component="db", deleting=True)
        record.add("Pod", f"db-db-{ordinal}", "DELETED", instance="db", component="db", deleting=True)
    sharddb(record, "DELETED", deleting=True)
    return record


def rules(record: Record) -> list[str]:
    return [violation.rule for violation in check(record.changes)]


def test_an_ordered_lifecycle_breaks_no_rule() -> None:
    assert rules(lifecycle()) == []


def test_a_seed_job_made_twice_for_one_shard_count_is_caught() -> None:
    record = lifecycle()
    record.add("Job", "db-seed-3", "DELETED", instance="db", complete=True)
    record.add("Job", "db-seed-3", "ADDED", instance="db", complete=False)
    assert rules(record) == ["seed-once"]


def test_a_cache_before_every_shard_is_ready_is_caught() -> None:
    record = Record()
    sharddb(record, "ADDED")
    ready_shards(record, ready=2)
    seeded(record)
    cache(record)
    assert rules(record) == ["cache-gates"]


def test_a_cache_before_the_seed_finished_is_caught() -> None:
    record = Record()
    sharddb(record, "ADDED")
    ready_shards(record)
    record.add("Job", "db-seed-3", "ADDED", instance="db", complete=False)
    cache(record)
    assert rules(record) == ["cache-gates"]


def test_a_cache_before_the_shards_are_in_discovery_is_caught() -> None:
    record = Record()
    sharddb(record, "ADDED")
    record.add("StatefulSet", "db-db", "ADDED", instance="db", replicas=3, ready=3)
    seeded(record)
    cache(record)
    violations = check(record.changes)
    assert [v.rule for v in violations] == ["cache-gates"]
    assert "0 of 3 shards registered" in violations[0].detail


def test_a_cache_scaled_up_from_none_is_held_to_the_same_gates() -> None:
    record = Record()
    sharddb(record, "ADDED")
    ready_shards(record, ready=1)
    cache(record, replicas=0)
    cache(record, "MODIFIED", replicas=2)
    assert rules(record) == ["cache-gates"]


def test_a_shard_marked_for_deletion_beside_a_cache_pod_while_stopping_is_caught() -> None:
    record = Record()
    sharddb(record, "ADDED")
    ready_shards(record)
    seeded(record)
    cache(record)
    sharddb(record, hibernated=True)
    record.add("Pod", "db-db-2", instance="db", component="db", deleting=True)
    assert rules(record) == ["shards-after-cache"]


def test_a_shard_replaced_beside_the_cache_in_a_rollout_breaks_no_rule() -> None:
    record = Record()
    sharddb(record, "ADDED")
    ready_shards(record)
    seeded(record)
    cache(record)
    record.add("Pod", "db-db-2", instance="db", component="db", deleting=True)
    record.add("Pod", "db-db-2", "DELETED", instance="db", component="db", deleting=True)
    assert rules(record) == []


def test_a_claim_deleted_is_caught() -> None:
    record = lifecycle()
    record.add("PersistentVolumeClaim", "data-db-db-0", "MODIFIED", deleting=True)
    violations = check(record.changes)
    assert [(v.rule, v.sharddb) for v in violations] == [("claims-kept", f"{NS}/db")]


def test_lowering_the_shard_count_is_caught_but_stopping_is_not() -> None:
    record = Record()
    record.add("StatefulSet", "db-db", "ADDED", instance="db", replicas=4, ready=0)
    record.add("StatefulSet", "db-db", instance="db", replicas=0, ready=0)
    record.add("StatefulSet", "db-db", instance="db", replicas=4, ready=0)
    assert rules(record) == []
    record.add("StatefulSet", "db-db", instance="db", replicas=3, ready=0)
    assert rules(record) == ["shards-never-lowered"]


def test_degraded_after_recovery_is_caught_and_before_it_is_not() -> None:
    record = Record()
    sharddb(record, "ADDED", degraded=True)
    recovered = record.changes[-1].at + 0.5
    assert degraded_after(record.changes, recovered) == []
    sharddb(record, degraded=True)
    assert [v.rule for v in degraded_after(record.changes, recovered)] == ["never-degraded-after-recovery"]


def test_unavailability_counts_only_after_the_first_available_and_outside_planned_windows() -> None:
    record = Record()
    sharddb(record, "ADDED")  # 100: not yet Available: a bring-up, not an outage
    sharddb(record, available=True)  # 101
    sharddb(record)  # 102: down
    sharddb(record, available=True)  # 103: up after 1 s
    sharddb(record)  # 104: down (planned from 104 to 110)
    sharddb(record, available=True)  # 105
    assert longest_unavailable(record.changes, []) == (1.0, f"{NS}/db")
    assert longest_unavailable(record.changes, [(102.0, 102.5), (104.0, 110.0)]) == (0.5, f"{NS}/db")


def test_facts_read_ready_endpoints_as_discovery_does() -> None:
    endpoints = [{"conditions": {"ready": True}}, {"conditions": {}}, {"conditions": {"ready": False}}]
    meta = {"labels": {"kubernetes.io/service-name": "x"}}
    found = facts("EndpointSlice", {"metadata": meta, "endpoints": endpoints})
    assert found == {"deleting": False, "service": "x", "ready": 2}
