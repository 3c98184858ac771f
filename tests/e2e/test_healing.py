"""Self-healing through the real Metacontroller and controllers: a deleted child comes back."""

from __future__ import annotations

import time

import pytest

from testbed.faults.invariants import unmarked_deletions
from testbed.stack import Stack
from tests.support.kube import path

from ..support.sharddbs import SPEC, ShardDBs, wait_until
from .conftest import Report

NAME = "heal"


@pytest.fixture
def running(sharddbs: ShardDBs) -> ShardDBs:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    return sharddbs


@pytest.mark.parametrize(
    ("kind", "child"),
    [("Deployment", f"{NAME}-cache"), ("PodDisruptionBudget", f"{NAME}-db"), ("Service", f"{NAME}-cache")],
)
def test_a_deleted_child_is_created_again(running: ShardDBs, kind: str, child: str, report: Report) -> None:
    uid = running.child(kind, child)["metadata"]["uid"]
    start = time.monotonic()
    response = running.kube.http.delete(path(kind, child, running.namespace))
    assert response.status_code == 200, response.text
    wait_until(
        f"{kind}/{child} back",
        lambda: running.exists(kind, child) and running.child(kind, child)["metadata"]["uid"] != uid,
        timeout=30,
        every=0.05,
    )
    report(f"{kind} back in {time.monotonic() - start:.1f} s")
    running.available(NAME)


def test_a_deleted_shard_pod_comes_back_on_its_volume(running: ShardDBs) -> None:
    claims = {c["metadata"]["name"]: c["spec"]["volumeName"] for c in running.claims()}
    response = running.kube.http.delete(f"/api/v1/namespaces/{running.namespace}/pods/{NAME}-db-1")
    assert response.status_code == 200, response.text
    running.available(NAME, timeout=60)
    wait_until(
        "shard pod 1 running again",
        lambda: any(
            p["metadata"]["name"] == f"{NAME}-db-1" and p.get("status", {}).get("phase") == "Running"
            for p in running.pods(NAME, "db")
        ),
    )
    assert {c["metadata"]["name"]: c["spec"]["volumeName"] for c in running.claims()} == claims


def test_every_shard_pod_deleted_at_once_is_replaced_once_and_only_its_node_finalizes_it(
    stack: Stack, sharddbs: ShardDBs
) -> None:
    """The stand-in once finalized a pod's replacement too (a removal queued by name), in a loop: not again."""
    shards = 12
    sharddbs.create(NAME, {**SPEC, "shards": shards})
    sharddbs.available(NAME)
    mark = stack.audit.mark()
    deleted = 0
    for _ in range(3):
        for pod in sharddbs.pods(NAME, "db"):
            if pod["metadata"].get("deletionTimestamp"):
                continue
            name = pod["metadata"]["name"]
            response = sharddbs.kube.http.delete(f"/api/v1/namespaces/{sharddbs.namespace}/pods/{name}")
            assert response.status_code in (200, 404), response.text  # 404: gone since it was listed
            deleted += response.status_code == 200
        time.sleep(3.0)

    def made() -> int:
        writes = stack.audit.since(mark, namespace=sharddbs.namespace)
        return sum(1 for w in writes if w.resource == "pods" and w.verb == "create" and not w.subresource)

    def running() -> bool:
        pods = sharddbs.pods(NAME, "db")
        return len(pods) == shards and all(p.get("status", {}).get("phase") == "Running" for p in pods)

    wait_until(f"{deleted} replacements running", lambda: made() >= deleted and running(), timeout=60)
    time.sleep(5.0)  # a stale removal would strike now
    assert made() == deleted, f"{made()} shard pods made for {deleted} deleted"
    assert unmarked_deletions(stack.audit.since(mark, namespace=sharddbs.namespace)) == []
