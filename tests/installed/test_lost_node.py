"""A node lost under a running ShardDB (its kubelet and containerd killed, its network cut), then back.

The node is one that does not run Metacontroller's pod, so the loss is of a node
of the data tier and of one hooks replica, not of the controller itself. Writers of
the user's own, on Metacontroller's node, write through the loss and the return.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator

import pytest
import yaml

from testbed.images import workloads
from testbed.real.realnode import RealNode

from ..support.examples import example
from ..support.sharddbs import wait_until
from .conftest import Record, Report
from .installs import HOOKS_NAMESPACE, METACONTROLLER_NAMESPACE, Install, assert_cache_gone_before_shards
from .writers import Writers

NAMESPACE = "lost"


@pytest.fixture(scope="module")
def install(production: Install) -> Iterator[Install]:
    production.kubectl("create", "namespace", NAMESPACE)
    yield production
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


def conditions(install: Install, name: str) -> dict[str, tuple[str, str]]:
    found = install.get("sharddb", "-n", NAMESPACE, name)
    return {c["type"]: (c["status"], c.get("message", "")) for c in found.get("status", {}).get("conditions", [])}


def bring_up(install: Install, name: str) -> None:
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(example(name, NAMESPACE)))
    wait_until(f"{name} Available", lambda: conditions(install, name).get("Available", ("",))[0] == "True", 300)


def names_lost(install: Install, name: str, node: str) -> bool:
    """``Degraded`` says NodeLost and names the node."""
    found = install.get("sharddb", "-n", NAMESPACE, name)
    degraded = [c for c in found.get("status", {}).get("conditions", []) if c["type"] == "Degraded"]
    return any(c["reason"] == "NodeLost" and node in c.get("message", "") for c in degraded)


def progressing(install: Install, name: str) -> str:
    return conditions(install, name).get("Progressing", ("", ""))[1]


def pick(install: Install, name: str, component: str) -> str:
    """A node that runs a ``component`` pod of ``name`` and not Metacontroller's pod."""
    controller = install.controller_node()
    pods = install.pods(NAMESPACE, f"app.kubernetes.io/instance={name},app.kubernetes.io/component={component}")
    nodes: list[str] = sorted(pod["spec"]["nodeName"] for pod in pods if pod["spec"]["nodeName"] != controller)
    return nodes[0]


@contextlib.contextmanager
def lost(install: Install, node: RealNode) -> Iterator[None]:
    """The node lost until the block ends, then back and Ready."""
    node.lose()
    try:
        wait_until(f"{node.name} NotReady", lambda: install.node_ready(node.name) != "True", 120)
        yield
    finally:
        node.restore()
        wait_until(f"{node.name} Ready", lambda: install.node_ready(node.name) == "True", 120)


def on_node(install: Install, name: str, node: str) -> dict[str, str]:
    """Each pod of ``name`` on ``node``, by name, with its uid."""
    pods = install.pods(NAMESPACE, f"app.kubernetes.io/instance={name}")
    return {pod["metadata"]["name"]: pod["metadata"]["uid"] for pod in pods if pod["spec"].get("nodeName") == node}


def test_a_node_lost_mid_rollout_holds_the_rollout_and_heals_when_it_returns(
    install: Install, report: Report, outages: Record
) -> None:
    bring_up(install, "rolled")
    assert install.stack.cluster is not None
    node = install.stack.cluster.node(pick(install, "rolled", "db"))
    writers = Writers.for_sharddb(install, NAMESPACE, "rolled", 3, node=install.controller_node())
    writers.start()
    since = time.time()
    patch = json.dumps({"spec": {"dbImage": workloads.POSTGRES_ROLLOUT}})
    with lost(install, node):
        install.kubectl("-n", NAMESPACE, "patch", "sharddb", "rolled", "--type=merge", "-p", patch)
        wait_until("the status naming the lost node", lambda: names_lost(install, "rolled", node.name), 120)
        stranded = [
            (pod["metadata"]["name"], pod["status"].get("phase"), bool(pod["metadata"].get("deletionTimestamp")))
            for pod in install.pods(NAMESPACE, "app.kubernetes.io/instance=rolled")
            if pod["spec"].get("nodeName") == node.name
        ]
        report(f"{node.name} lost mid-rollout: its pods {stranded}; status {conditions(install, 'rolled')}")
        assert stranded, "the lost node's pods were removed while it was away"
    began = time.monotonic()
    wait_until(
        "rolled rolled out",
        lambda: (
            all(
                pod["spec"]["containers"][0]["image"] == workloads.POSTGRES_ROLLOUT
                for pod in install.pods(NAMESPACE, "app.kubernetes.io/instance=rolled,app.kubernetes.io/component=db")
            )
            and conditions(install, "rolled").get("Available", ("",))[0] == "True"
        ),
        300,
    )
    report(f"rolled out and Available {time.monotonic() - began:.1f} s after {node.name} was back")
    writers.wait_acknowledged()
    stopped = [int(pod.rsplit("-", 1)[1]) for pod in shards_on(install, "rolled", node.name)]
    outages(writers.outage(f"{node.name} lost mid-rollout, then back", since, stopped))
    writers.assert_none_lost()
    writers.stop()


def restarted(install: Install, uid: str) -> bool:
    """Metacontroller's pod is a new one (not ``uid``), and Ready."""
    found = install.kubectl("get", "pod", "-n", METACONTROLLER_NAMESPACE, "metacontroller-0", "-o", "json", check=False)
    if not found:
        return False
    pod = json.loads(found)
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))
    return bool(pod["metadata"]["uid"] != uid and ready)


def shards_on(install: Install, name: str, node: str) -> list[str]:
    return sorted(pod for pod in on_node(install, name, node) if pod.startswith(f"{name}-db-"))


def test_metacontroller_and_the_hooks_restarted_while_a_node_is_lost_delete_nothing_and_still_name_it(
    install: Install, report: Report
) -> None:
    bring_up(install, "twice")
    assert install.stack.cluster is not None
    node = install.stack.cluster.node(pick(install, "twice", "db"))
    with lost(install, node):
        wait_until("the status naming the lost node", lambda: names_lost(install, "twice", node.name), 120)
        stranded = on_node(install, "twice", node.name)
        controller = install.get("pod", "-n", METACONTROLLER_NAMESPACE, "metacontroller-0")["metadata"]["uid"]
        # The second fault: every controller pod that can restart does (those on the lost node cannot).
        install.kubectl("-n", METACONTROLLER_NAMESPACE, "delete", "pod", "metacontroller-0", "--wait=false")
        install.kubectl(
            "-n", HOOKS_NAMESPACE, "delete", "pod", "-l", "app.kubernetes.io/name=sharddb-hooks",
            f"--field-selector=spec.nodeName!={node.name}", "--wait=false",
        )  # fmt: skip
        wait_until("a new Metacontroller pod Ready", lambda: restarted(install, controller), 180)
        wait_until("the new Metacontroller syncing", lambda: install.hook_calls().get("sync 200", 0) > 0, 120)
        wait_until("the status naming the lost node", lambda: names_lost(install, "twice", node.name), 120)
        report(f"{node.name} lost, Metacontroller and hooks restarted: status {conditions(install, 'twice')}")
        assert on_node(install, "twice", node.name) == stranded, "a pod on the lost node was replaced or removed"
        assert len(install.pods(NAMESPACE, "app.kubernetes.io/instance=twice,app.kubernetes.io/component=cache")) == 2
        shards = install.get("statefulset", "-n", NAMESPACE, "twice-db")
        assert shards["spec"]["replicas"] == 3
    wait_until("twice Available", lambda: conditions(install, "twice").get("Available", ("",))[0] == "True", 300)


def test_a_deletion_waits_for_a_cache_pod_on_a_lost_node_and_keeps_its_order(install: Install, report: Report) -> None:
    bring_up(install, "left")
    assert install.stack.cluster is not None
    node = install.stack.cluster.node(pick(install, "left", "cache"))
    mark = install.stack.audit.mark()
    with lost(install, node):
        install.kubectl("-n", NAMESPACE, "delete", "sharddb", "left", "--wait=false")
        wait_until("the status naming what blocks", lambda: "out-of-service" in progressing(install, "left"), 120)
        shards = install.pods(NAMESPACE, "app.kubernetes.io/instance=left,app.kubernetes.io/component=db")
        report(f"deletion with a cache pod on lost {node.name}: status {conditions(install, 'left')}")
        assert len(shards) == 3, "a shard stopped while a cache pod on the lost node may still be flushing"
        assert not any(pod["metadata"].get("deletionTimestamp") for pod in shards)
    wait_until("left gone", lambda: not install.kubectl("-n", NAMESPACE, "get", "sharddb", "left", check=False), 300)
    assert_cache_gone_before_shards(install, mark, NAMESPACE, "left")
