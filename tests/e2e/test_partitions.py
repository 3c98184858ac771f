"""Two partitions on the real stack, at the shipped settings: each ShardDB served by exactly one Metacontroller.

The stack runs what ``components/partitions-2`` renders, resync period and client
budget included (no test override), so the lifecycle here also shows that no
decision waits on Metacontroller's periodic resync.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from testbed.real import partitions
from testbed.stack import Stack, StackOptions

from ..support.budget import BURST, QPS, RESYNC_SECONDS
from ..support.kube import Kube
from ..support.sharddbs import SPEC, ShardDBs, condition, wait_until
from .conftest import new_namespace, start_stack

LABEL = partitions.LABEL
# name -> partition label (None: unlabelled) and the partition expected to serve it
CASES = {"alpha": ("p0", "p0"), "beta": ("p1", "p1"), "gamma": (None, "p0")}


@pytest.fixture(scope="module")
def split() -> Iterator[Stack]:
    running = start_stack(StackOptions(partitions=2, shipped_budget=True))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def fleet(split: Stack, request: pytest.FixtureRequest) -> Iterator[ShardDBs]:
    """One ShardDB per case, all Available."""
    plane = split.control_plane
    kube = Kube(plane.url, plane.token, plane.ca_file, plane.kubeconfig)
    sharddbs = ShardDBs(kube, new_namespace(kube, request))
    for name, (label, _) in CASES.items():
        sharddbs.create(name, labels={LABEL: label} if label else None)
    for name in CASES:
        sharddbs.available(name)
    try:
        yield sharddbs
    finally:
        kube.close()


def _partition(stack: Stack, name: str) -> str:
    (instance,) = [i for i in stack.instances if i.name == f"metacontroller-{name}"]
    return instance.user


@pytest.mark.parametrize("name", CASES)
def test_each_sharddb_is_written_by_its_own_partitions_metacontroller_only(
    split: Stack, fleet: ShardDBs, name: str
) -> None:
    expected = _partition(split, CASES[name][1])
    writers = {
        w.user
        for w in split.metacontroller_writes(namespace=fleet.namespace)
        if w.name == name or w.name.startswith(f"{name}-")
    }
    assert writers == {expected}


@pytest.mark.parametrize("name", CASES)
def test_each_sharddb_carries_its_own_partitions_finalizer_only(fleet: ShardDBs, name: str) -> None:
    controller = "sharddb" if CASES[name][1] == "p0" else f"sharddb-{CASES[name][1]}"
    assert fleet.get(name)["metadata"]["finalizers"] == [f"metacontroller.io/compositecontroller-{controller}"]


def test_changing_the_partition_of_a_sharddb_is_refused(fleet: ShardDBs) -> None:
    response = fleet.kube.merge_patch("ShardDB", "beta", fleet.namespace, {"metadata": {"labels": {LABEL: "p0"}}})
    assert response.status_code == 422
    assert LABEL in response.json()["message"]


@pytest.mark.parametrize("name", ["beta", "alpha"])
def test_deleting_a_sharddb_in_each_partition_finishes_and_keeps_its_claims(fleet: ShardDBs, name: str) -> None:
    fleet.delete(name)
    fleet.gone(name)
    claims = [c for c in fleet.claims() if c["metadata"]["name"].endswith(tuple(f"{name}-db-{i}" for i in range(3)))]
    assert len(claims) == 3


def test_the_stack_runs_the_shipped_resync_period_and_budget(split: Stack, fleet: ShardDBs) -> None:
    listed = fleet.kube.kubectl("get", "compositecontrollers", "-o", "json")
    stored = json.loads(listed.stdout)["items"]
    assert len(stored) == 2
    assert {c["spec"]["resyncPeriodSeconds"] for c in stored} == {RESYNC_SECONDS}
    assert {(i.qps, i.burst) for i in split.instances} == {(QPS, BURST)}


def test_a_pods_start_grace_running_out_is_noticed_without_a_periodic_resync(fleet: ShardDBs) -> None:
    """The pod sends no event when its grace ends; the hook asked for the call that notices it."""
    env = [{"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "password"}}}]
    fleet.create("late", {**SPEC, "db": {"env": env}, "podStartGraceSeconds": 5}, labels={LABEL: "p1"})
    degraded = wait_until(
        "Degraded=True",
        lambda: (c := condition(fleet.get("late"), "Degraded")).get("status") == "True" and c,
        timeout=60,
    )
    assert "CreateContainerConfigError" in degraded["message"]
    fleet.delete("late")
    fleet.gone("late")
