"""kube-router's firewall-only command line and role (``testbed.real.kube_router``); the data tier runs them."""

from __future__ import annotations

from pathlib import Path

from testbed.real import kube_router


def command() -> list[str]:
    return kube_router.firewall_command(Path("/bin/kube-router"), Path("/etc/kc"), "node-2", "10.0.0.0/20")


def test_only_the_firewall_runs() -> None:
    flags = set(command()[1:])
    assert {"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--enable-cni=false"} <= flags
    assert "--run-loadbalancer=false" in flags


def test_it_is_told_its_node_cluster_and_service_range() -> None:
    flags = command()
    assert flags[0] == "/bin/kube-router"
    told = {"--kubeconfig=/etc/kc", "--hostname-override=node-2", "--service-cluster-ip-range=10.0.0.0/20"}
    assert told <= set(flags)
    assert kube_router.firewall_env("node-2") == {"NODE_NAME": "node-2"}


def test_its_role_only_reads() -> None:
    role, binding = kube_router.rbac("system:kube-router")
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-router"}
    ]
