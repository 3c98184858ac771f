"""Growing and refusing to shrink, through the real Metacontroller and StatefulSet controller."""

from __future__ import annotations

import time

from testbed.real.audit import tally
from testbed.stack import CONTROLLER_MANAGER, Stack

from ..support.sharddbs import ShardDBs, condition, is_true, wait_until
from .conftest import Report

NAME = "grow"


def test_scale_up_keeps_available_and_seeds_the_new_count(stack: Stack, sharddbs: ShardDBs, report: Report) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    mark = stack.audit.mark()
    with sharddbs.history(NAME) as seen:
        start = time.monotonic()
        assert sharddbs.patch(NAME, {"shards": 16}).status_code == 200
        wait_until("16 shards ready", lambda: sharddbs.get(NAME)["status"].get("readyShards") == 16, timeout=120)
        ready = time.monotonic() - start
        wait_until("the seed for 16", lambda: sharddbs.get(NAME)["status"].get("seededShards") == 16, timeout=60)
        sharddbs.available(NAME)
    assert sharddbs.exists("Job", f"{NAME}-seed-16")
    assert all(is_true(v, "Available") for v in seen), "Available dropped during the scale-up"
    assert not any(is_true(v, "Degraded") for v in seen), "Degraded during a healthy scale-up"
    log = stack.audit.since(mark, namespace=sharddbs.namespace)
    created = [
        w.at for w in log if w.user == CONTROLLER_MANAGER and w.verb == "create" and w.name.startswith(f"{NAME}-db-")
    ]
    assert len(created) == 13
    assert (max(created) - min(created)).total_seconds() < 2.0, "the new shard pods were not created together"
    writes = stack.metacontroller_writes(mark, namespace=sharddbs.namespace)
    report(f"3->16 shards ready in {ready:.1f} s, {len(writes)} Metacontroller writes {dict(tally(writes))}")


def test_shrinking_is_refused_naming_the_field(sharddbs: ShardDBs) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    response = sharddbs.patch(NAME, {"shards": 2})
    assert response.status_code == 422
    assert "spec.shards" in response.json()["message"]
    assert sharddbs.child("StatefulSet", f"{NAME}-db")["spec"]["replicas"] == 3
    assert not is_true(sharddbs.get(NAME), "Degraded")


def test_a_bad_spec_is_refused_and_touches_no_child(stack: Stack, sharddbs: ShardDBs) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    mark = stack.audit.mark()
    for patch, field in (
        ({"shards": 0}, "spec.shards"),
        ({"dbImage": ""}, "spec.dbImage"),
        ({"cache": {"replicas": -1}}, "spec.cache.replicas"),
        ({"storage": {"size": "5Gi"}}, "spec.storage"),
    ):
        response = sharddbs.patch(NAME, patch)
        assert response.status_code == 422, (patch, response.text)
        assert field in response.json()["message"], response.json()["message"]
    assert stack.metacontroller_writes(mark, namespace=sharddbs.namespace) == []
    assert condition(sharddbs.get(NAME), "Available")["status"] == "True"
