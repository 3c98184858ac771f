"""Pause, hibernation and wake through the real Metacontroller and controllers."""

from __future__ import annotations

import time

from testbed.real.audit import tally
from testbed.stack import NODE, Stack

from ..support.sharddbs import ShardDBs, condition, wait_until
from .conftest import Report

NAME = "ops"
CHILD_RESOURCES = frozenset({"services", "statefulsets", "deployments", "jobs", "poddisruptionbudgets"})


def test_a_paused_sharddb_writes_no_child(stack: Stack, sharddbs: ShardDBs, report: Report) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    mark = stack.audit.mark()
    edit = {"paused": True, "shards": 5, "dbImage": "postgres:17", "cache": {"replicas": 3}}
    assert sharddbs.patch(NAME, edit).status_code == 200
    wait_until(
        "Progressing=False Paused", lambda: condition(sharddbs.get(NAME), "Progressing").get("reason") == "Paused"
    )
    time.sleep(10)  # two resyncs
    writes = stack.metacontroller_writes(mark, namespace=sharddbs.namespace)
    assert [w for w in writes if w.resource in CHILD_RESOURCES] == []
    assert sharddbs.child("StatefulSet", f"{NAME}-db")["spec"]["replicas"] == 3
    report(f"paused with an edit pending: no child written in 10 s, {len(writes)} writes {dict(tally(writes))}")


def test_hibernation_stops_the_cache_then_the_shards_and_keeps_the_volumes(
    stack: Stack, sharddbs: ShardDBs, report: Report
) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    mark = stack.audit.mark()
    assert sharddbs.patch(NAME, {"hibernated": True}).status_code == 200
    asked = stack.audit.since(mark, namespace=sharddbs.namespace)[0].at
    wait_until("Hibernated", lambda: sharddbs.phase(NAME) == "Hibernated", timeout=60)
    log = stack.audit.since(mark, namespace=sharddbs.namespace)
    cache_gone = max(w.at for w in log if w.user == NODE and w.verb == "delete" and w.name.startswith(f"{NAME}-cache-"))
    shards_down = min(w.at for w in log if w.user == NODE and w.verb == "delete" and w.name.startswith(f"{NAME}-db-"))
    assert cache_gone < shards_down, "a shard stopped while a cache pod was still there"
    shards_gone = max(w.at for w in log if w.user == NODE and w.verb == "delete" and w.name.startswith(f"{NAME}-db-"))
    report(
        f"last cache pod gone {(cache_gone - asked).total_seconds():.1f} s after the edit, "
        f"last shard {(shards_gone - asked).total_seconds():.1f} s"
    )
    assert sharddbs.child("StatefulSet", f"{NAME}-db")["spec"]["replicas"] == 0
    assert sharddbs.exists("Service", f"{NAME}-db")
    assert sharddbs.exists("Job", f"{NAME}-seed-3")
    assert not sharddbs.exists("Deployment", f"{NAME}-cache")
    assert len(sharddbs.claims()) == 3
    assert sharddbs.pods(NAME, "db") == []


def test_waking_brings_the_shards_back_on_their_volumes_without_a_new_seed(
    stack: Stack, sharddbs: ShardDBs, report: Report
) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    assert sharddbs.patch(NAME, {"hibernated": True}).status_code == 200
    wait_until("Hibernated", lambda: sharddbs.phase(NAME) == "Hibernated", timeout=60)
    volumes = {c["metadata"]["name"]: c["spec"]["volumeName"] for c in sharddbs.claims()}
    mark = stack.audit.mark()
    start = time.monotonic()
    assert sharddbs.patch(NAME, {"hibernated": False}).status_code == 200
    sharddbs.available(NAME, timeout=60)
    seconds = time.monotonic() - start
    log = stack.audit.since(mark, namespace=sharddbs.namespace)
    assert [w for w in log if w.resource == "jobs" and w.verb == "create"] == [], "waking ran a seed again"
    assert {c["metadata"]["name"]: c["spec"]["volumeName"] for c in sharddbs.claims()} == volumes
    mine = [w for w in log if w.user.startswith("sharddb-metacontroller")]
    report(f"Available again in {seconds:.1f} s, {len(mine)} Metacontroller writes {dict(tally(mine))}")
