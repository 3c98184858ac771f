"""Self-healing through the real Metacontroller and controllers: a deleted child comes back."""

from __future__ import annotations

import time

import pytest

from tests.cluster.kube import path

from .conftest import Report
from .sharddbs import ShardDBs, wait_until

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
