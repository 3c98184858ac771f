"""Real stack: kube-router's network policy controller as each real node runs it, a firewall only.

kube-router, not sigs.k8s.io/kube-network-policies: that one hands packets to user space
through nfqueue, which a kernel without CONFIG_NFT_QUEUE (as here) cannot do; kube-router's
controller is iptables rules, ipsets and the NFLOG target, and it is the one k3s embeds as its
own NetworkPolicy enforcement. The binary comes from ``build-node-binaries.sh``.

What it needs, read from its source (v2.1.0, ``pkg/controllers/netpol``, ``pkg/utils``):

- its Node, found by the NODE_NAME variable, else the host name, else ``--hostname-override``,
  when it starts (it exits without one), with an IPv4 InternalIP (else an ExternalIP): it guards
  the pods whose ``status.hostIP`` is that address and only those. It does not read podCIDR.
- ``--service-cluster-ip-range`` as the API server's: traffic to it is let through INPUT.
- iptables, iptables-save, iptables-restore and ipset on PATH (ip6tables-* with IPv6), and in
  the kernel ip_set and the set, NFLOG, physdev, conntrack, addrtype, comment, mark, multiport,
  limit and REJECT matches and targets. As a firewall only it does not set
  ``net.bridge.bridge-nf-call-iptables``; the node sets it, or bridged pod traffic skips the rules.
- list and watch of namespaces, pods, services, endpoints, EndpointSlices, nodes and
  NetworkPolicies (it starts an informer of each); it writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

Obj = dict[str, Any]
HEALTH_PORT = 20244  # its default; /healthz answers there once its informers have synced
READ = ["get", "list", "watch"]
# What a firewall-only instance reads, after the ClusterRole of its own daemonset/generic-kuberouter.yaml
# less what only its router, service proxy and load balancer allocator write (leases, services/status).
RULES: list[Obj] = [
    {"apiGroups": [""], "resources": ["namespaces", "pods", "services", "endpoints", "nodes"], "verbs": READ},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": READ},
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": READ},
]


def rbac(user: str, name: str = "kube-router-firewall") -> list[Obj]:
    """A ClusterRole of ``RULES`` and its binding to ``user``."""
    group = "rbac.authorization.k8s.io"
    return [
        {"apiVersion": f"{group}/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": RULES},
        {
            "apiVersion": f"{group}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": group, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": group, "kind": "User", "name": user}],
        },
    ]


def firewall_command(
    binary: Path,
    kubeconfig: Path,
    node: str,
    service_cidr: str,
    health_port: int = HEALTH_PORT,
    sync_period: str = "5m",
) -> list[str]:
    """The command line of one node's instance: network policy only, no routes, proxy or CNI config.

    Start it with NODE_NAME=``node`` in its environment too (``firewall_env``): that comes first,
    so a machine whose host name is another node's cannot mislead it.
    """
    return [
        str(binary),
        "--run-firewall=true",
        "--run-router=false",
        "--run-service-proxy=false",
        "--run-loadbalancer=false",
        "--enable-cni=false",
        f"--kubeconfig={kubeconfig}",
        f"--hostname-override={node}",
        f"--service-cluster-ip-range={service_cidr}",
        f"--health-port={health_port}",
        f"--iptables-sync-period={sync_period}",
        "--metrics-port=0",
    ]


def firewall_env(node: str) -> dict[str, str]:
    return {"NODE_NAME": node}
