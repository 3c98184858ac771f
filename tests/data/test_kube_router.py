"""kube-router as each real node runs it, a firewall only: what it programs, for which pods, and what it writes.

Each test module's probe runs in a sandbox of its own inside this tier's (namespaces nest),
so its rules land in namespaces of their own, never beside the real node's
(``tests/data/kube_router_probe.py``). No kubelet: Pod objects carry the status a kubelet would set.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from testbed.real.controlplane import ControlPlaneError
from testbed.real.realnode import build_node_binaries

from .kube_router_probe import ELSEWHERE, GUARDED, POLICY


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    try:
        binary = build_node_binaries() / "kube-router"
    except ControlPlaneError as error:
        pytest.fail(f"kube-router: {error}", pytrace=False)
    out = tmp_path_factory.mktemp("kube-router") / "report.json"
    command = [sys.executable, "-m", "testbed.real.sandbox", "--", sys.executable, "-m", "tests.data.kube_router_probe"]
    done = subprocess.run([*command, str(binary), str(out)], capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0 or not out.exists():
        pytest.fail(f"the kube-router probe exited {done.returncode}:\n{done.stdout}{done.stderr}", pytrace=False)
    found: dict[str, Any] = json.loads(out.read_text())
    return found


def rules(report: dict[str, Any], chain: str) -> list[str]:
    return [line for line in report["iptables"].splitlines() if line.startswith(f"-A {chain} ")]


def test_it_runs_and_answers_its_health_check(report: dict[str, Any]) -> None:
    assert report["alive"], report["log"]
    assert report["health"] == 200, report["log"]


def test_it_guards_the_pods_whose_host_is_its_nodes_internal_ip_only(report: dict[str, Any]) -> None:
    forward = rules(report, "KUBE-ROUTER-FORWARD")
    assert any(f"-d {GUARDED[1]}/32" in rule and "-j KUBE-POD-FW-" in rule for rule in forward), forward
    assert ELSEWHERE[1] not in report["iptables"]


def test_the_policy_rejects_what_it_does_not_allow(report: dict[str, Any]) -> None:
    name, namespace = POLICY["metadata"]["name"], POLICY["metadata"]["namespace"]
    text = report["iptables"]
    assert f"run through nw policy {name}" in text
    assert f"REJECT traffic destined for POD name:{GUARDED[0]} namespace: {namespace}" in text
    assert "-j NFLOG --nflog-group 100" in text  # what it drops, it logs
    assert GUARDED[1] in report["ipsets"]  # the selected pods, as an ipset


def test_traffic_to_services_passes_its_input_chain(report: dict[str, Any]) -> None:
    assert any(f"-d {report['service_cidr']}" in rule for rule in rules(report, "KUBE-ROUTER-INPUT"))


def test_it_writes_nothing_and_reads_with_a_read_only_role(report: dict[str, Any]) -> None:
    assert report["writes"] == []
    assert "forbidden" not in report["log"].lower(), report["log"]


def test_it_programs_the_rules_within_seconds(report: dict[str, Any]) -> None:
    assert report["seconds"] < 30, report["log"]
