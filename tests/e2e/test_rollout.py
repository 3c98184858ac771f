"""A rollout of both images through the real StatefulSet and Deployment controllers: shards first, Available held."""

from __future__ import annotations

import time

from testbed.audit import tally
from testbed.stack import Stack

from .conftest import Report
from .sharddbs import ShardDBs, is_true, wait_until

NAME = "roll"


def test_a_rollout_of_both_images_rolls_the_shards_first_and_keeps_available(
    stack: Stack, sharddbs: ShardDBs, report: Report
) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    mark = stack.audit.mark()
    with sharddbs.history(NAME) as seen:
        start = time.monotonic()
        start = time.monotonic()
        assert sharddbs.patch(NAME, {"dbImage": "postgres:16.4", "cache": {"image": "redis:7.4"}}).status_code == 200

        def rolled() -> bool:
            pods = sharddbs.pods(NAME, "db") + sharddbs.pods(NAME, "cache")
            images = {
                c["image"] for p in pods if not p["metadata"].get("deletionTimestamp") for c in p["spec"]["containers"]
            }
            return images == {"postgres:16.4", "redis:7.4"}

        wait_until("every pod on the new images", rolled, timeout=150)
        sharddbs.available(NAME)
        seconds = time.monotonic() - start
    assert all(is_true(v, "Available") for v in seen), "Available dropped during the rollout"
    assert not any(is_true(v, "Degraded") for v in seen), "Degraded during a planned rollout"
    assert any(
        next(c for c in v["status"]["conditions"] if c["type"] == "Progressing")["reason"] == "RollingUpdate"
        for v in seen
        if v.get("status", {}).get("conditions")
    )
    log = stack.audit.since(mark, namespace=sharddbs.namespace)
    mine = [w for w in log if w.user.startswith("sharddb-metacontroller")]
    cache_update = next(w for w in mine if w.resource == "deployments" and w.verb in ("update", "patch"))
    last_shard_ready = max(
        w.at
        for w in log
        if w.subresource == "status"
        and w.resource == "pods"
        and w.name.startswith(f"{NAME}-db-")
        and w.at < cache_update.at
    )
    restarted = {
        w.name for w in log if w.resource == "pods" and w.verb == "create" and w.name.startswith(f"{NAME}-db-")
    }
    assert restarted == {f"{NAME}-db-{i}" for i in range(3)}, "not every shard was replaced"
    last_shard_created = max(
        w.at for w in log if w.resource == "pods" and w.verb == "create" and w.name.startswith(f"{NAME}-db-")
    )
    assert last_shard_created < cache_update.at, "the cache rolled before the last shard"
    assert last_shard_ready < cache_update.at
    report(f"3 shards and the cache rolled in {seconds:.1f} s, {len(mine)} writes {dict(tally(mine))}")
