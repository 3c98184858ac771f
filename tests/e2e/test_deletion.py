"""Deletion through the real Metacontroller's finalizer: cache gone first, then the shards; volumes kept."""

from __future__ import annotations

import time

from testbed.real.audit import tally
from testbed.stack import NODE, Stack

from ..support.sharddbs import ShardDBs
from .conftest import Report

NAME = "bye"


def test_deletion_stops_every_cache_pod_before_any_shard_and_keeps_the_claims(
    stack: Stack, sharddbs: ShardDBs, report: Report
) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    mark = stack.audit.mark()
    start = time.monotonic()
    sharddbs.delete(NAME)
    sharddbs.gone(NAME, timeout=90)
    seconds = time.monotonic() - start
    log = stack.audit.since(mark, namespace=sharddbs.namespace)
    cache_gone = max(w.at for w in log if w.user == NODE and w.verb == "delete" and w.name.startswith(f"{NAME}-cache-"))
    shard_deletes = [w for w in log if w.resource == "pods" and w.verb == "delete" and w.name.startswith(f"{NAME}-db-")]
    assert shard_deletes, "the shard pods were never stopped"
    assert cache_gone < min(w.at for w in shard_deletes), "a shard began to stop while a cache pod was still there"
    assert len(sharddbs.claims()) == 3, "a volume claim went with the ShardDB"
    mine = [w for w in log if w.user.startswith("sharddb-metacontroller")]
    report(f"finalized in {seconds:.1f} s, {len(mine)} Metacontroller writes {dict(tally(mine))}")


def test_a_hook_outage_during_deletion_is_held_by_the_finalizer(stack: Stack, sharddbs: ShardDBs) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    stack.stop_hooks()
    try:
        sharddbs.delete(NAME)
        time.sleep(8)
        held = sharddbs.get(NAME)
        assert held["metadata"].get("deletionTimestamp")
        assert held["metadata"]["finalizers"], "the finalizer went without the finalize hook"
        pods = sharddbs.pods(NAME, "db") + sharddbs.pods(NAME, "cache")
        assert len(pods) == 5
        assert not any(p["metadata"].get("deletionTimestamp") for p in pods), "a pod stopped while the hooks were down"
    finally:
        stack.start_hooks()
    sharddbs.gone(NAME, timeout=120)
    assert len(sharddbs.claims()) == 3
