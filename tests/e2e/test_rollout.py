"""A rollout of both images through the real StatefulSet and Deployment controllers: shards first, Available held."""

from __future__ import annotations

import signal
import time

from testbed.real.audit import tally
from testbed.stack import Stack

from ..support.sharddbs import ShardDBs, condition, is_true, wait_until
from .conftest import Report

NAME = "roll"
UNREAD = "unread"
CONTROLLER_MANAGER = "kube-controller-manager"


def test_a_rollout_of_both_images_rolls_the_shards_first_and_keeps_available(
    stack: Stack, sharddbs: ShardDBs, report: Report
) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    mark = stack.audit.mark()
    with sharddbs.history(NAME) as seen:
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


def test_a_template_the_statefulset_controller_has_not_read_is_no_complete_rollout(
    stack: Stack, sharddbs: ShardDBs
) -> None:
    """Its status still shows the last template on every shard: Complete waits for the controller to read it."""
    sharddbs.create(UNREAD)
    sharddbs.available(UNREAD)
    plane = stack.control_plane
    plane.kill(CONTROLLER_MANAGER, signal.SIGKILL)
    try:
        assert sharddbs.patch(UNREAD, {"dbImage": "postgres:16.4"}).status_code == 200

        wait_until("the new template stored", lambda: _shard_image(sharddbs, UNREAD) == "postgres:16.4", 60)
        reason = wait_until("an answer on the stored template", lambda: _after_the_write(sharddbs, UNREAD), 60)
    finally:
        plane.restart(CONTROLLER_MANAGER)
    assert reason == "StatefulSetUpdated"
    wait_until(f"{UNREAD}'s rollout to complete", lambda: _progressing(sharddbs, UNREAD) == "Complete", 150)
    images = {p["spec"]["containers"][0]["image"] for p in sharddbs.pods(UNREAD, "db")}
    assert images == {"postgres:16.4"}, "Complete before every shard runs the new template"


def _after_the_write(sharddbs: ShardDBs, name: str) -> str:
    """Progressing's reason once an answer read the template stored: the one that wrote it said RollingUpdate."""
    reason = _progressing(sharddbs, name)
    return "" if reason in ("Complete", "RollingUpdate") else reason


def _progressing(sharddbs: ShardDBs, name: str) -> str:
    return str(condition(sharddbs.get(name), "Progressing").get("reason", ""))


def _shard_image(sharddbs: ShardDBs, name: str) -> str:
    template = sharddbs.child("StatefulSet", f"{name}-db")["spec"]["template"]
    return str(template["spec"]["containers"][0]["image"])
