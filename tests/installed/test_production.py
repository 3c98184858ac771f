"""The production overlay as users install it: three hooks replicas over HTTPS with the token, on three nodes."""

from __future__ import annotations

import pytest

from ..support.sharddbs import wait_until
from .installs import HOOKS_NAMESPACE, METACONTROLLER_NAMESPACE, Install, assert_cache_gone_before_shards, nodes_of

NAME = "demo"
# One TCP connection to the hooks' Service, as a client outside the cluster's policy sees it.
HOOKS = "/dev/tcp/sharddb-hooks.sharddb-system.svc/443"
CONNECT = f"timeout 5 bash -c 'echo > {HOOKS}' 2>/dev/null && echo reached || echo refused"


@pytest.fixture(scope="module")
def install(production: Install) -> Install:
    return production.settled()


@pytest.fixture(scope="module")
def available(install: Install) -> str:
    """The README's example step: the ShardDB brought to Available; what ``kubectl get`` printed."""
    return install.step("example")


def test_metacontroller_runs_from_its_release_manifests_as_its_service_account(install: Install) -> None:
    pods = install.active_pods(METACONTROLLER_NAMESPACE, "app.kubernetes.io/name=metacontroller")
    assert len(pods) == 1
    spec = pods[0]["spec"]
    assert spec["serviceAccountName"] == "metacontroller"
    assert spec["containers"][0]["image"] == "ghcr.io/metacontroller/metacontroller:v4.17.2"
    assert all(status["ready"] for status in pods[0]["status"]["containerStatuses"])


def test_the_hooks_run_three_replicas_one_per_node(install: Install) -> None:
    pods = install.hooks_pods()
    assert len(pods) == 3
    assert nodes_of(pods) == ["node-1", "node-2", "node-3"]
    assert all(status["ready"] for pod in pods for status in pod["status"]["containerStatuses"])


def test_the_hooks_run_as_uid_65532_on_a_read_only_root(install: Install) -> None:
    pod = install.hooks_pods()[0]["metadata"]["name"]
    script = "import os; print(os.getuid(), os.getgid()); open('/probe', 'w')"
    result = install.stack.kubectl("exec", "-n", HOOKS_NAMESPACE, pod, "-c", "hooks", "--", "python", "-c", script)
    assert result.stdout.split() == ["65532", "65532"]
    assert "Read-only file system" in result.stderr


def test_a_sharddb_from_examples_becomes_available_through_hooks_served_over_https(
    install: Install, available: str
) -> None:
    sharddb = install.get("sharddb", NAME)
    conditions = {c["type"]: c["status"] for c in sharddb["status"]["conditions"]}
    assert conditions == {"Available": "True", "Progressing": "False", "Degraded": "False"}
    assert NAME in available
    assert install.events("default", "SyncError") == []


@pytest.mark.usefixtures("available")
def test_shards_and_cache_spread_over_the_three_nodes(install: Install) -> None:
    shards = install.pods("default", f"app.kubernetes.io/instance={NAME},app.kubernetes.io/component=db")
    cache = install.pods("default", f"app.kubernetes.io/instance={NAME},app.kubernetes.io/component=cache")
    assert nodes_of(shards) == ["node-1", "node-2", "node-3"]
    assert len(set(nodes_of(cache))) == len(cache) > 1


@pytest.mark.usefixtures("available")
def test_a_pod_outside_metacontrollers_namespace_cannot_reach_the_hooks(install: Install) -> None:
    script = CONNECT
    phase, log = install.run_pod("probe-outside", "default", script)
    assert (phase, log.strip()) == ("Succeeded", "refused")


@pytest.mark.usefixtures("available")
def test_a_pod_in_metacontrollers_namespace_reaches_the_hooks(install: Install) -> None:
    script = CONNECT
    phase, log = install.run_pod("probe-inside", METACONTROLLER_NAMESPACE, script)
    assert (phase, log.strip()) == ("Succeeded", "reached")


@pytest.mark.usefixtures("available")
def test_deletion_removes_every_cache_pod_before_any_shard_pod_stops(install: Install) -> None:
    mark = install.stack.audit.mark()
    install.step("delete")
    wait_until("the shard pods gone", lambda: not install.pods("default", f"app.kubernetes.io/instance={NAME}"), 300)
    assert_cache_gone_before_shards(install, mark, "default", NAME)
