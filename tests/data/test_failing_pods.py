"""Pods that cannot start, in the real kubelet's words, named in ``Degraded`` as docs/api/status.md says.

Each ShardDB has one shard and no start grace, so what the kubelet reports is
reported at once; each is deleted at the end of its test (nothing to drain).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from testbed.images import workloads

from ..support.sharddbs import ShardDBs, condition, wait_until
from .cluster import Cluster

Obj = dict[str, Any]


def spec(**db: Any) -> Obj:
    return {
        "shards": 1,
        "dbImage": workloads.POSTGRES,
        "podStartGraceSeconds": 0,
        "db": {"env": [{"name": "POSTGRES_PASSWORD", "value": "failing-pods"}], **db},
        "cache": {"image": workloads.REDIS, "replicas": 1},
    }


def degraded(sharddbs: ShardDBs, name: str, words: str) -> Obj:
    def check() -> Obj | None:
        found = condition(sharddbs.get(name), "Degraded")
        return found if found.get("status") == "True" and words in found.get("message", "") else None

    result: Obj = wait_until(f"{name} Degraded naming {words!r}", check, 180, 0.5)
    return result


@pytest.fixture(autouse=True)
def deleted_after(sharddbs: ShardDBs) -> Iterator[None]:
    """Each test's ShardDB goes at its end, so no crash loop keeps the node and Metacontroller busy after it."""
    before = {item["metadata"]["name"] for item in sharddbs.items("ShardDB")}
    yield
    for item in sharddbs.items("ShardDB"):
        name = item["metadata"]["name"]
        if name not in before:
            sharddbs.delete(name)
            sharddbs.gone(name, timeout=120)


def test_an_image_that_is_not_there_is_named_image_pull_back_off(sharddbs: ShardDBs) -> None:
    sharddbs.create("noimage", {**spec(), "dbImage": "docker.io/library/postgres:0-not-built"})
    found = degraded(sharddbs, "noimage", "noimage-db-0: ImagePullBackOff")
    assert found["reason"] == "ShardPodsFailing"
    assert "postgres:0-not-built" in found["message"]


def test_a_missing_secret_is_named_create_container_config_error(sharddbs: ShardDBs, cluster: Cluster) -> None:
    secret = {"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "not-yet", "key": "password"}}}
    sharddbs.create("nosecret", spec(env=[secret]))
    found = degraded(sharddbs, "nosecret", "nosecret-db-0: CreateContainerConfigError")
    assert found["reason"] == "ShardPodsFailing"
    cluster.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "not-yet", "namespace": cluster.namespace},
                "stringData": {"password": "late"},
            }
        ]
    )
    sharddbs.available("nosecret", timeout=300)


def test_an_entrypoint_that_exits_non_zero_is_named_crash_loop_back_off(sharddbs: ShardDBs, cluster: Cluster) -> None:
    # The official entrypoint refuses an empty volume without a superuser password, and exits 1.
    sharddbs.create("nopassword", spec(env=[]))
    found = degraded(sharddbs, "nopassword", "nopassword-db-0: CrashLoopBackOff")
    assert found["reason"] == "ShardPodsFailing"
    # The kubelet keeps the last crashed container's log: as the previous one once it restarted again.
    wait_until(
        "the entrypoint's own words in the crashed container's log",
        lambda: any("superuser password is not specified" in said for said in crashed_logs(cluster, "nopassword-db-0")),
        60,
        1.0,
    )


def crashed_logs(cluster: Cluster, pod: str) -> list[str]:
    said = []
    for previous in (False, True):
        try:
            said.append(cluster.logs(pod, "db", previous=previous))
        except httpx.HTTPStatusError:
            continue
    return said
