"""A node's life under a running ShardDB, with clients writing: a rollout, a killed postmaster, a deleted
pod, each node drained in turn, a shard that moves, and a node declared gone.

Writers of the user's own (``writers.py``) run through every step and are left
out of the drains (``--pod-selector``), as a user's clients on other machines would
be; after each step every commit they saw acknowledged must be stored, and each
step's client-visible outage goes to the session's table. Beside it, the floor:
the same PostgreSQL, from the same pod template on the same node, stopped and
started with no operator at all.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import time
from collections.abc import Iterator

import pytest
import yaml

from testbed.images import workloads

from ..support.examples import example
from ..support.sharddbs import wait_until
from .conftest import Record, Report
from .installs import Install, Obj
from .writers import LABEL, Outage, Target, Writers

NAMESPACE = "nodes"
NODES = ("node-1", "node-2", "node-3")
SHARDS = 3
FLOOR = "sharddb-test/floor"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


@pytest.fixture(scope="module")
def install(production: Install) -> Iterator[Install]:
    production.kubectl("create", "namespace", NAMESPACE)
    yield production
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


def bring_up(install: Install, name: str, storage_class: str | None = None) -> None:
    documents = example(name, NAMESPACE)
    if storage_class is not None:
        documents[1]["spec"]["storage"]["storageClassName"] = storage_class
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(documents))
    wait_until(f"{name} Available", lambda: condition(install, name, "Available") == "True", 300)


def condition(install: Install, name: str, kind: str) -> str:
    found = install.get("sharddb", "-n", NAMESPACE, name)
    return next((c["status"] for c in found.get("status", {}).get("conditions", []) if c["type"] == kind), "")


def shard_pods(install: Install, name: str) -> list[Obj]:
    return install.pods(NAMESPACE, f"app.kubernetes.io/instance={name},app.kubernetes.io/component=db")


def shard_on(install: Install, name: str, node: str) -> list[str]:
    return [pod["metadata"]["name"] for pod in shard_pods(install, name) if pod["spec"].get("nodeName") == node]


def ordinal(pod: str) -> int:
    return int(pod.rsplit("-", 1)[1])


def settled(install: Install, name: str, writers: Writers) -> None:
    """The ShardDB Available again and every writer acknowledging."""
    wait_until(f"{name} Available", lambda: condition(install, name, "Available") == "True", 300)
    writers.wait_acknowledged()


def record(outages: Record, writers: Writers, step: str, since: float, stopped: list[str] | None = None) -> Outage:
    """The step's outage as the writers saw it from ``since``, in the session's table; ``stopped`` (shard
    pods) are the ones the step stopped, every shard if not told."""
    outage = writers.outage(step, since, None if stopped is None else [ordinal(p) for p in stopped])
    outages(outage)
    return outage


def drain(install: Install, node: str) -> float:
    """``kubectl drain`` as a person runs it, the writers left where they are; the seconds it took."""
    began = time.monotonic()
    command = ["drain", node, "--ignore-daemonsets", "--delete-emptydir-data", f"--pod-selector=!{LABEL},!{FLOOR}"]
    result = install.stack.control_plane.kubectl().run(*command, "--timeout=300s", timeout=330)
    assert result.returncode == 0, f"kubectl drain {node} failed: {result.stderr.strip()}"
    return time.monotonic() - began


def kill_postmaster(install: Install, pod: Obj) -> None:
    """SIGKILL to the database's first process on its node, as the kernel's OOM killer sends it."""
    assert install.stack.cluster is not None
    container = next(c for c in pod["status"]["containerStatuses"] if c["name"] == "db")
    node = install.stack.cluster.node(pod["spec"]["nodeName"])
    os.kill(node.task_pid(container["containerID"]), signal.SIGKILL)


def restarts(install: Install, pod: str) -> int:
    found = install.get("pod", "-n", NAMESPACE, pod)
    return int(next(c["restartCount"] for c in found["status"]["containerStatuses"] if c["name"] == "db"))


# --- a ShardDB on node-bound volumes --------------------------------------------------


@pytest.fixture(scope="module")
def local(install: Install) -> Iterator[Writers]:
    """A ShardDB on node-bound volumes, a writer per shard and one on its cache."""
    bring_up(install, "local")
    writers = Writers.for_sharddb(install, NAMESPACE, "local", SHARDS)
    writers.start()
    yield writers
    writers.stop()


def test_a_rollout_of_the_shards_image_loses_no_acknowledged_write(
    install: Install, local: Writers, outages: Record
) -> None:
    since = time.time()
    patch = json.dumps({"spec": {"dbImage": workloads.POSTGRES_ROLLOUT}})
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", "local", "--type=merge", "-p", patch)
    wait_until(
        "every shard on the new image",
        lambda: all(
            p["spec"]["containers"][0]["image"] == workloads.POSTGRES_ROLLOUT for p in shard_pods(install, "local")
        ),
        300,
    )
    settled(install, "local", local)
    outages(local.outage("rollout of `dbImage`", since))
    local.assert_none_lost()


def test_a_killed_postmaster_loses_no_acknowledged_write(install: Install, local: Writers, outages: Record) -> None:
    before = restarts(install, "local-db-1")
    since = time.time()
    kill_postmaster(install, install.get("pod", "-n", NAMESPACE, "local-db-1"))
    wait_until("local-db-1 restarted by its kubelet", lambda: restarts(install, "local-db-1") > before, 120)
    settled(install, "local", local)
    outages(local.outage("postmaster SIGKILLed", since, affected=[1]))
    local.assert_none_lost()


def test_a_deleted_shard_pod_loses_no_acknowledged_write(install: Install, local: Writers, outages: Record) -> None:
    uid = install.get("pod", "-n", NAMESPACE, "local-db-1")["metadata"]["uid"]
    since = time.time()
    install.kubectl("-n", NAMESPACE, "delete", "pod", "local-db-1", "--wait=false")
    wait_until(
        "a new local-db-1",
        lambda: (
            install.kubectl("-n", NAMESPACE, "get", "pod", "local-db-1", "-o", "jsonpath={.metadata.uid}", check=False)
            not in ("", uid)
        ),
        120,
    )
    settled(install, "local", local)
    outages(local.outage("shard pod deleted", since, affected=[1]))
    local.assert_none_lost()


# --- the floor: the same PostgreSQL with no operator ---------------------------------


def floor_pod(install: Install, node: str) -> Obj:
    """A bare pod of the shards' own template (image, probes, drain, grace) on ``node``, on a volume of its own."""
    statefulset = install.get("statefulset", "-n", NAMESPACE, "local-db")
    template = copy.deepcopy(statefulset["spec"]["template"])
    spec = template["spec"]
    for placement in ("affinity", "topologySpreadConstraints"):
        spec.pop(placement, None)
    claim = statefulset["spec"]["volumeClaimTemplates"][0]["metadata"]["name"]
    spec.update(
        nodeSelector={"kubernetes.io/hostname": node},
        hostname="floor-0",
        subdomain="floor",
        volumes=[*spec.get("volumes", []), {"name": claim, "persistentVolumeClaim": {"claimName": "floor"}}],
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "floor-0", "namespace": NAMESPACE, "labels": {FLOOR: "floor"}},
        "spec": spec,
    }


@pytest.fixture(scope="module")
def floor(install: Install, local: Writers) -> Iterator[tuple[Writers, Obj]]:
    """The floor's pod on shard 1's node, found by DNS as a shard is (a headless Service), and its writer."""
    assert local.started, "the floor copies the running shards' template"
    node = install.get("pod", "-n", NAMESPACE, "local-db-1")["spec"]["nodeName"]
    pod = floor_pod(install, node)
    objects: list[Obj] = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "floor", "namespace": NAMESPACE},
            "spec": {"clusterIP": "None", "selector": {FLOOR: "floor"}, "ports": [{"name": "db", "port": 5432}]},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "floor", "namespace": NAMESPACE},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
        pod,
    ]
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    writers = Writers(install, NAMESPACE, "floor", (Target("floor-0.floor", "floor-0"),))
    writers.start()
    yield writers, pod
    writers.stop()
    install.kubectl("-n", NAMESPACE, "delete", "pod", "floor-0", "--ignore-not-found", "--wait=false")


def test_the_floor_of_a_killed_postmaster_loses_no_acknowledged_write(
    install: Install, floor: tuple[Writers, Obj], outages: Record
) -> None:
    writers, _ = floor
    before = restarts(install, "floor-0")
    since = time.time()
    kill_postmaster(install, install.get("pod", "-n", NAMESPACE, "floor-0"))
    wait_until("floor-0 restarted by its kubelet", lambda: restarts(install, "floor-0") > before, 120)
    writers.wait_acknowledged()
    outages(writers.outage("floor: postmaster SIGKILLed, no operator", since))
    writers.assert_none_lost()


def test_the_floor_of_a_pod_stopped_and_started_loses_no_acknowledged_write(
    install: Install, floor: tuple[Writers, Obj], outages: Record, report: Report
) -> None:
    writers, pod = floor
    uid = install.get("pod", "-n", NAMESPACE, "floor-0")["metadata"]["uid"]
    since = time.time()
    install.kubectl("-n", NAMESPACE, "delete", "pod", "floor-0", "--wait", "--timeout=120s")
    stopped = time.time() - since
    install.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
    writers.wait_acknowledged()
    assert install.get("pod", "-n", NAMESPACE, "floor-0")["metadata"]["uid"] != uid
    seen = writers.tally(0, since)
    report(f"floor stopped in {stopped:.1f} s; {seen.failed} failed attempts; longest gap {seen.longest_gap:.1f} s")
    assert seen.failed > 0, "the floor's writer never failed: its server did not stop"
    outages(writers.outage("floor: pod stopped and started on its node, no operator", since))
    writers.assert_none_lost()


# --- drains ----------------------------------------------------------------------------


@pytest.mark.parametrize("node", NODES)
def test_draining_a_node_in_turn_loses_no_acknowledged_write(
    install: Install, local: Writers, node: str, report: Report, outages: Record
) -> None:
    since = time.time()
    waiting = shard_on(install, "local", node)
    try:
        took = drain(install, node)
        # The shard's volume is on the cordoned node: its pod waits for the node, which is no damage yet.
        assert condition(install, "local", "Degraded") == "False"
    finally:
        install.kubectl("uncordon", node)
    settled(install, "local", local)
    outage = record(outages, local, f"drain of {node} (node-bound volumes; until uncordoned)", since, waiting)
    report(f"drained in {took:.1f} s; shard pods that waited for it {waiting}; longest gap per shard (s) {outage.gaps}")
    local.assert_none_lost()


# --- a ShardDB on shared volumes ---------------------------------------------------------


@pytest.fixture(scope="module")
def shared(install: Install) -> Iterator[Writers]:
    """A ShardDB on the shared-filesystem class (network storage's stand-in), its writers on Metacontroller's
    node (a node this module never stops)."""
    bring_up(install, "shared", storage_class="shared")
    writers = Writers.for_sharddb(install, NAMESPACE, "shared", SHARDS, node=install.controller_node())
    writers.start()
    yield writers
    writers.stop()


def test_a_drained_shard_on_shared_volumes_starts_on_another_node_with_its_rows(
    install: Install, shared: Writers, report: Report, outages: Record
) -> None:
    since = time.time()
    node = NODES[0]
    moved = shard_on(install, "shared", node)
    took = drain(install, node)
    try:
        settled(install, "shared", shared)
        assert shard_on(install, "shared", node) == []
        outage = record(outages, shared, f"drain of {node} (shared volumes; moved)", since, moved)
        report(f"drained {node} in {took:.1f} s; moved {moved} while it stays cordoned; gaps (s) {outage.gaps}")
        shared.assert_none_lost()
    finally:
        install.kubectl("uncordon", node)


def test_a_node_declared_gone_moves_its_shard_on_shared_volumes_with_its_rows(
    install: Install, shared: Writers, report: Report, outages: Record
) -> None:
    assert install.stack.cluster is not None
    controller = install.controller_node()
    name = next(n for n in NODES if n != controller and shard_on(install, "shared", n))
    node = install.stack.cluster.node(name)
    moved = shard_on(install, "shared", name)
    since = time.time()
    node.shut_down()
    try:
        wait_until(f"{name} NotReady", lambda: install.node_ready(name) != "True", 120)
        # What a person runs once the node is known to be off (Kubernetes' non-graceful node shutdown).
        install.kubectl("taint", "node", name, f"{OUT_OF_SERVICE}=nodeshutdown:NoExecute")
        wait_until(
            f"{moved} running on another node",
            lambda: (
                len(pods := shard_pods(install, "shared")) == SHARDS
                and all(p["spec"].get("nodeName") not in (None, name) for p in pods)
            ),
            300,
        )
        settled(install, "shared", shared)
        outage = record(outages, shared, f"{name} shut down and declared gone (shared volumes)", since, moved)
        report(f"{name} declared gone: {moved} moved with its rows; gaps (s) {outage.gaps}")
        shared.assert_none_lost()
    finally:
        node.restore()
        wait_until(f"{name} Ready", lambda: install.node_ready(name) == "True", 120)
        install.kubectl("taint", "node", name, f"{OUT_OF_SERVICE}-")
