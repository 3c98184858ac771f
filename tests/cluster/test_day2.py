"""Pause and hibernation against a real API server, with Metacontroller's writes.

A paused ShardDB's answer must reproduce every stored child so exactly that
Metacontroller neither updates nor deletes anything; hibernation must take the
children down in the teardown order and wake on the same volumes without a seed.
"""

from __future__ import annotations

import pytest

from .kube import Kube, path
from .loop import Loop
from .samples import SPEC

pytestmark = pytest.mark.cluster


@pytest.fixture
def loop(kube: Kube, namespace: str) -> Loop:
    driver = Loop(kube, namespace)
    driver.create(SPEC)
    driver.until("Available")
    return driver


def _stored(loop: Loop) -> dict[tuple[str, str], str]:
    """Every child's resourceVersion: any write changes one, any delete drops one."""
    found = {}
    for kind in ("Service", "StatefulSet", "Deployment", "Job", "PodDisruptionBudget"):
        for name in ("demo-db", "demo-cache", "demo-seed-3"):
            response = loop.kube.http.get(path(kind, name, loop.namespace))
            if response.status_code == 200:
                found[(kind, name)] = response.json()["metadata"]["resourceVersion"]
    return found


def test_paused_sharddb_changes_no_stored_child(loop: Loop) -> None:
    loop.edit({"paused": True, "shards": 5, "dbImage": "postgres:17", "cache": {"replicas": 3}})
    before = _stored(loop)
    updates = len(loop.updates)
    answer = loop.round()
    loop.round()
    assert loop.updates[updates:] == []
    assert _stored(loop) == before
    progressing = next(c for c in answer["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "Paused")


def test_unpaused_sharddb_carries_out_what_waited(loop: Loop) -> None:
    loop.edit({"paused": True, "cache": {"replicas": 3}})
    loop.round()
    loop.edit({"paused": False})
    loop.round()
    assert loop.kube.get("Deployment", "demo-cache", loop.namespace)["spec"]["replicas"] == 3


def test_hibernation_keeps_the_statefulset_at_zero_and_wakes_without_a_seed(loop: Loop) -> None:
    loop.edit({"hibernated": True})
    for _ in range(8):
        if loop.round()["status"]["phase"] == "Hibernated":
            break
        loop.world.run_cache()
        loop.world.remove_pods("cache")
        loop.world.run_statefulset()
    else:
        raise AssertionError(f"not Hibernated: {loop.answers[-1]['status']}")
    assert loop.kube.get("StatefulSet", "demo-db", loop.namespace)["spec"]["replicas"] == 0
    assert loop.kube.exists("Service", "demo-db", loop.namespace)
    assert loop.kube.exists("Job", "demo-seed-3", loop.namespace)
    for kind, name in (("Deployment", "demo-cache"), ("Service", "demo-cache"), ("PodDisruptionBudget", "demo-db")):
        assert not loop.kube.exists(kind, name, loop.namespace), f"{kind}/{name} outlived hibernation"

    loop.edit({"hibernated": False})
    answer = loop.until("Available")
    assert answer["status"]["seededShards"] == 3
    assert [c["metadata"]["name"] for c in answer["children"] if c["kind"] == "Job"] == ["demo-seed-3"]
