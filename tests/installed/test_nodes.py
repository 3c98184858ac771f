"""A node's life under a running ShardDB, with clients writing: each node drained in turn, and a shard that moves.

Writers of the user's own (``writers.py``) run through every step and are left
out of the drains (``--pod-selector``), as a user's clients on other machines would
be; after each step every commit they saw acknowledged must be stored.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
import yaml

from ..data.cluster import example
from ..e2e.sharddbs import wait_until
from .conftest import Report
from .installs import Install
from .writers import LABEL, Writers

pytestmark = pytest.mark.installed
NAMESPACE = "nodes"
NODES = ("node-1", "node-2", "node-3")
SHARDS = 3


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


def shard_on(install: Install, name: str, node: str) -> list[str]:
    pods = install.pods(NAMESPACE, f"app.kubernetes.io/instance={name},app.kubernetes.io/component=db")
    return [pod["metadata"]["name"] for pod in pods if pod["spec"].get("nodeName") == node]


def drain(install: Install, node: str) -> float:
    """``kubectl drain`` as a person runs it, the writers left where they are; the seconds it took."""
    began = time.monotonic()
    command = ["drain", node, "--ignore-daemonsets", "--delete-emptydir-data", f"--pod-selector=!{LABEL}"]
    result = subprocess.run(
        ["kubectl", f"--kubeconfig={install.stack.control_plane.kubeconfig}", *command, "--timeout=300s"],
        capture_output=True,
        text=True,
        timeout=330,
        check=False,
    )
    assert result.returncode == 0, f"kubectl drain {node} failed: {result.stderr.strip()}"
    return time.monotonic() - began


@pytest.fixture(scope="module")
def local(install: Install) -> Iterator[Writers]:
    """A ShardDB on node-bound volumes, a writer per shard."""
    bring_up(install, "local")
    writers = Writers(install, NAMESPACE, "local", SHARDS)
    writers.start()
    yield writers
    writers.stop()


@pytest.mark.parametrize("node", NODES)
def test_draining_a_node_in_turn_loses_no_acknowledged_write(
    install: Install, local: Writers, node: str, report: Report
) -> None:
    since = time.time()
    waiting = shard_on(install, "local", node)
    try:
        took = drain(install, node)
        # The shard's volume is on the cordoned node: its pod waits for the node, which is no damage yet.
        assert condition(install, "local", "Degraded") == "False"
    finally:
        install.kubectl("uncordon", node)
    wait_until("local Available", lambda: condition(install, "local", "Available") == "True", 300)
    wait_until("every shard acknowledging", lambda: all(local.writing(s) for s in range(SHARDS)), 120)
    tallies = [local.tally(shard, since) for shard in range(SHARDS)]
    outages = ", ".join(f"{t.longest_gap:.1f}" for t in tallies)
    report(f"drained in {took:.1f} s; shard pods that waited for it {waiting}; longest gap per shard (s) {outages}")
    assert [local.lost(shard) for shard in range(SHARDS)] == [frozenset()] * SHARDS


@pytest.fixture(scope="module")
def shared(install: Install) -> Iterator[Writers]:
    """A ShardDB on the shared-filesystem class (network storage's stand-in), a writer per shard."""
    bring_up(install, "shared", storage_class="shared")
    writers = Writers(install, NAMESPACE, "shared", SHARDS)
    writers.start()
    yield writers
    writers.stop()


def test_a_drained_shard_on_shared_volumes_starts_on_another_node_with_its_rows(
    install: Install, shared: Writers, report: Report
) -> None:
    since = time.time()
    node = NODES[0]
    moved = shard_on(install, "shared", node)
    took = drain(install, node)
    try:
        wait_until("shared Available", lambda: condition(install, "shared", "Available") == "True", 300)
        wait_until("every shard acknowledging", lambda: all(shared.writing(s) for s in range(SHARDS)), 120)
        assert shard_on(install, "shared", node) == []
        tallies = [shared.tally(shard, since) for shard in range(SHARDS)]
        report(
            f"drained {node} in {took:.1f} s; moved {moved} while it stays cordoned; longest gap per shard (s) "
            + ", ".join(f"{t.longest_gap:.1f}" for t in tallies)
        )
        assert [shared.lost(shard) for shard in range(SHARDS)] == [frozenset()] * SHARDS
    finally:
        install.kubectl("uncordon", node)
