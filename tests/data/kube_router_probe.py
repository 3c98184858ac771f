"""Run inside a sandbox of its own: one firewall-only kube-router against a real API server; report as JSON.

    python -m testbed.real.sandbox -- python -m tests.data.kube_router_probe KUBE_ROUTER REPORT

A control plane, one Node with an InternalIP, a pod on it and one elsewhere (Pod objects
with their status set: no kubelet runs), a NetworkPolicy over both; then kube-router with
``testbed.real.kube_router``'s command line and role. The report holds what it programmed
(``iptables-save``, ``ipset list``), its health answer, its log and every write it made.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from testbed.real import kube_router
from testbed.real.controlplane import ControlPlane, ControlPlaneError, build_binaries

USER = "system:kube-router"
NODE = "node-probe"
NODE_IP = "10.99.0.1"
GUARDED = ("guarded", "10.99.0.5", NODE_IP)  # name, pod IP, host IP
ELSEWHERE = ("elsewhere", "10.99.1.5", "10.99.1.1")
NAMESPACE = "netpol"
POLICY: dict[str, Any] = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {"name": "only-clients", "namespace": NAMESPACE},
    "spec": {
        "podSelector": {"matchLabels": {"app": "db"}},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": [{"port": 5432}]}],
    },
}


def kubectl(plane: ControlPlane, *args: str, body: object = None) -> None:
    done = plane.kubectl().run(*args, stdin=None if body is None else json.dumps(body), timeout=60)
    if done.returncode != 0:
        raise ControlPlaneError(f"kubectl {' '.join(args[:3])}: {done.stderr.strip()}")


def set_status(plane: ControlPlane, kind: str, name: str, status: object, *namespace: str) -> None:
    patch = json.dumps({"status": status})
    kubectl(plane, "patch", kind, name, *namespace, "--subresource=status", "--type=merge", "-p", patch)


def world(plane: ControlPlane) -> None:
    kubectl(plane, "create", "-f", "-", body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
    set_status(plane, "node", NODE, {"addresses": [{"type": "InternalIP", "address": NODE_IP}]})
    kubectl(plane, "create", "namespace", NAMESPACE)
    for name, pod_ip, host_ip in (GUARDED, ELSEWHERE):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "db"}},
            "spec": {"nodeName": NODE, "containers": [{"name": "db", "image": "db"}]},
        }
        kubectl(plane, "create", "-f", "-", body=pod)
        status = {"phase": "Running", "hostIP": host_ip, "podIP": pod_ip, "podIPs": [{"ip": pod_ip}]}
        set_status(plane, "pod", name, status, "-n", NAMESPACE)
    kubectl(plane, "create", "-f", "-", body=POLICY)
    kubectl(plane, "create", "-f", "-", body={"apiVersion": "v1", "kind": "List", "items": kube_router.rbac(USER)})


def service_cidr(plane: ControlPlane) -> str:
    arguments, _ = plane.commands["kube-apiserver"]
    return next(arg.split("=", 1)[1] for arg in arguments if arg.startswith("--service-cluster-ip-range="))


def programmed() -> str:
    return subprocess.run(["iptables-save", "-t", "filter"], capture_output=True, text=True, check=False).stdout


def probe(binary: Path) -> dict[str, Any]:
    plane = ControlPlane(build_binaries())
    plane.identity(USER, ())
    plane.start()
    try:
        world(plane)
        command = kube_router.firewall_command(binary, plane.kubeconfig_for(USER), NODE, service_cidr(plane))
        router = plane.spawn("kube-router", command, env={**os.environ, **kube_router.firewall_env(NODE)})
        started = time.monotonic()
        while "KUBE-POD-FW-" not in programmed() and router.poll() is None and time.monotonic() - started < 60:
            time.sleep(0.2)
        seconds = time.monotonic() - started
        try:
            health = httpx.get(f"http://127.0.0.1:{kube_router.HEALTH_PORT}/healthz", timeout=5).status_code
        except httpx.HTTPError:
            health = 0
        report = {
            "seconds": seconds,
            "alive": router.poll() is None,
            "health": health,
            "iptables": programmed(),
            "ipsets": subprocess.run(["ipset", "list"], capture_output=True, text=True, check=False).stdout,
            "service_cidr": service_cidr(plane),
        }
        plane.kill("kube-router", signal.SIGTERM)
        report["log"] = (plane.root / "kube-router.log").read_text(errors="replace")[-4000:]
        events = [json.loads(line) for line in plane.audit_log.read_text().splitlines() if line.strip()]
        report["writes"] = [event["verb"] for event in events if event["user"]["username"] == USER]
        return report
    finally:
        plane.stop()


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(json.dumps(probe(Path(sys.argv[1]))))
