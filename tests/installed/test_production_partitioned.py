"""The production install grown into the partitioned overlay, as its page says: a Metacontroller per partition."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from ..support.examples import example
from ..support.sharddbs import wait_until
from .installs import HOOKS_NAMESPACE, METACONTROLLER_NAMESPACE, Install, assert_cache_gone_before_shards

NAMESPACE = "partitioned"
PARTITION_LABEL = "mygroup.example.com/partition"


@pytest.fixture(scope="module")
def install(production: Install) -> Iterator[Install]:
    """After the production modules: the README's partitions step over the running production install."""
    production.step("partitions")
    production.kubectl("create", "namespace", NAMESPACE)
    yield production
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


def create(install: Install, name: str, partition: str | None) -> None:
    documents = example(name, NAMESPACE)
    if partition is not None:
        documents[1]["metadata"]["labels"] = {PARTITION_LABEL: partition}
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(documents))


def available(install: Install, name: str) -> bool:
    found = install.get("sharddb", "-n", NAMESPACE, name)
    return any(
        c["type"] == "Available" and c["status"] == "True" for c in found.get("status", {}).get("conditions", [])
    )


def test_each_partition_runs_its_own_metacontroller_and_the_release_one_is_gone(install: Install) -> None:
    pods = install.active_pods(HOOKS_NAMESPACE, "app.kubernetes.io/name=metacontroller")
    assert sorted(pod["metadata"]["name"] for pod in pods) == [f"metacontroller-p{k}-0" for k in range(4)]
    assert install.pods(METACONTROLLER_NAMESPACE, "app.kubernetes.io/name=metacontroller") == []  # no pod at all


@pytest.mark.parametrize(("name", "partition"), [("labelled", "p2"), ("unlabelled", None)])
def test_a_sharddb_is_served_by_its_partitions_metacontroller_alone(
    install: Install, name: str, partition: str | None
) -> None:
    mark = install.stack.audit.mark()
    create(install, name, partition)
    wait_until(f"{name} Available", lambda: available(install, name), 300)
    served = partition or "p0"
    writers = {
        w.user
        for w in install.stack.audit.since(mark, namespace=NAMESPACE)
        if w.user.startswith("system:serviceaccount:") and w.name.startswith(name)
    }
    assert writers == {f"system:serviceaccount:{HOOKS_NAMESPACE}:metacontroller-{served}"}
    controller = "sharddb" if served == "p0" else f"sharddb-{served}"
    finalizers = install.get("sharddb", "-n", NAMESPACE, name)["metadata"]["finalizers"]
    assert finalizers == [f"metacontroller.io/compositecontroller-{controller}"]


@pytest.mark.parametrize("name", ["labelled", "unlabelled"])
def test_a_partitioned_sharddb_is_deleted_in_order(install: Install, name: str) -> None:
    mark = install.stack.audit.mark()
    install.kubectl("-n", NAMESPACE, "delete", "sharddb", name, "--wait", "--timeout=5m")
    assert_cache_gone_before_shards(install, mark, NAMESPACE, name)
