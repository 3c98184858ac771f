"""Real stack: a cluster of real nodes on one machine, joined as kind joins its node containers.

The control plane runs in ``testbed.real.sandbox``'s network namespace and answers on
the cluster bridge's gateway; each node (``testbed.real.realnode``) has namespaces of
its own, an address on that bridge and its own pod range, with routes to every
other node's pods. Beside the nodes, the parts every cluster runs:

- CoreDNS serving ``cluster.local`` on the gateway, every pod's nameserver;
- rancher's local-path-provisioner with two StorageClasses: ``standard`` (the
  default, as kind ships it), each volume a directory on the one node its pod runs
  on; and ``shared``, the provisioner's shared-filesystem mode over a directory
  every node mounts. ``shared`` stands in for network storage (NFS, a cloud disk
  that follows its pod): any node can mount any of its volumes;
- a NetworkPolicy agent on every node (kube-router's policy controller alone: the
  iptables and ipset firewall k3s embeds; this kernel has no ``nft_queue``, which
  the nftables-based kube-network-policies needs), so a policy is enforced.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from testbed.images import workloads
from testbed.real import kube_router
from testbed.real.controlplane import ControlPlane, ControlPlaneError
from testbed.real.realnode import (
    CLUSTER_BRIDGE,
    CLUSTER_DOMAIN,
    CLUSTER_GATEWAY,
    PROXY_USER,
    REGISTRY,
    NodeSpec,
    RealNode,
    answers_ok,
    must,
    wait_for,
)
from testbed.real.server import free_port

DNS_USER = "system:coredns"
PROVISIONER_USER = "system:local-path-provisioner"
POLICY_USER = "system:kube-router"
SERVICE_CIDR = "10.0.0.0/20"  # the API server's --service-cluster-ip-range
STORAGE_CLASS = "standard"
SHARED_STORAGE_CLASS = "shared"
PROVISIONER = "rancher.io/local-path"
SHARED_PROVISIONER = "rancher.io/local-path-shared"
PROVISIONER_NAMESPACE = "local-path-storage"
# Where node-bound volumes live: a path every node has, under its own /var/lib.
NODE_VOLUMES = "/var/lib/local-path-provisioner"
Obj = dict[str, Any]


def users(nodes: int) -> tuple[str, ...]:
    """Every identity a cluster of ``nodes`` nodes uses (declared before the API server starts)."""
    return (*(NodeSpec(i).user for i in range(1, nodes + 1)), PROXY_USER, DNS_USER, PROVISIONER_USER, POLICY_USER)


@dataclass
class Cluster:
    """``nodes`` real nodes on a running control plane whose ``pod_address`` is the bridge's gateway."""

    plane: ControlPlane
    node_bin: Path
    image_set: workloads.ImageSet
    nodes: int = 3
    extra_archives: tuple[Path, ...] = ()
    # Images (in ``extra_archives``) also served by the cluster's registry, for pods that always pull.
    mirrored: tuple[str, ...] = ()
    network_policy: bool = True
    members: list[RealNode] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.plane.pod_address != CLUSTER_GATEWAY:
            raise ControlPlaneError(f"a cluster's control plane must serve pods on {CLUSTER_GATEWAY}")
        self.shared = self.plane.root / "shared-volumes"

    def node(self, name: str) -> RealNode:
        return next(member for member in self.members if member.name == name)

    def start(self) -> None:
        began = time.monotonic()
        must(["ip", "link", "add", CLUSTER_BRIDGE, "type", "bridge"])
        must(["ip", "addr", "add", f"{CLUSTER_GATEWAY}/24", "dev", CLUSTER_BRIDGE])
        must(["ip", "link", "set", CLUSTER_BRIDGE, "up"])
        self._coredns()
        self._registry()
        specs = [NodeSpec(i) for i in range(1, self.nodes + 1)]
        for spec in specs:
            member = RealNode(
                self.plane,
                self.image_set,
                spec,
                peers=tuple(peer for peer in specs if peer != spec),
                extra_archives=self.extra_archives,
                mirrored_registries=tuple(sorted({name.split("/", 1)[0] for name in self.mirrored})),
            )
            member.start()
            if not self.members:
                self._push(member)
            self.members.append(member)
            if self.network_policy:
                self._policy_agent(member)
        self._provisioner()
        self.timings["cluster"] = time.monotonic() - began

    # --- cluster services ---------------------------------------------------------

    def _coredns(self) -> None:
        health, ready = free_port(), free_port()
        corefile = self.plane.root / "Corefile"
        corefile.write_text(
            f""".:53 {{
    bind {CLUSTER_GATEWAY}
    errors
    health 127.0.0.1:{health}
    ready 127.0.0.1:{ready}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {self.plane.kubeconfig_for(DNS_USER)}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    cache 5
}}
"""
        )
        self.plane.spawn("coredns", [str(self.node_bin / "coredns"), f"-conf={corefile}"])
        wait_for("CoreDNS ready", lambda: answers_ok(f"http://127.0.0.1:{ready}/ready"), 60, self.plane, "coredns")

    def _registry(self) -> None:
        """Debian's docker-registry (the distribution project's registry) on the gateway, plain HTTP."""
        config = self.plane.root / "registry.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "version": 0.1,
                    "log": {"level": "warn"},
                    "storage": {"filesystem": {"rootdirectory": str(self.plane.root / "registry")}},
                    "http": {"addr": REGISTRY},
                }
            )
        )
        self.plane.spawn("registry", [_which_registry(), "serve", str(config)])
        wait_for("the registry", lambda: answers_ok(f"http://{REGISTRY}/v2/"), 30, self.plane, "registry")

    def _push(self, member: RealNode) -> None:
        """Each mirrored image from a node's containerd into the registry, under its path on its own registry."""
        for name in self.mirrored:
            target = f"{REGISTRY}/{name.split('/', 1)[1]}"
            member.ctr("images", "tag", "--force", name, target)
            member.ctr("images", "push", "--plain-http", target)

    def _policy_agent(self, member: RealNode) -> None:
        """kube-router's NetworkPolicy controller alone, in the node's namespaces (its iptables)."""
        kubeconfig = self.plane.kubeconfig_for(POLICY_USER, from_node=True)
        command = kube_router.firewall_command(self.node_bin / "kube-router", kubeconfig, member.name, SERVICE_CIDR)
        member.spawn("kube-router", command, env={**kube_router.firewall_env(member.name), "PATH": os.environ["PATH"]})

    def _provisioner(self) -> None:
        """local-path-provisioner twice, as kind runs it: node-bound ``standard`` (default) and ``shared``."""
        self.shared.mkdir()
        helper_pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "helper-pod"},
            "spec": {
                "priorityClassName": "system-node-critical",
                "tolerations": [
                    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"}
                ],
                "containers": [{"name": "helper-pod", "image": workloads.POSTGRES, "imagePullPolicy": "IfNotPresent"}],
            },
        }
        setup = '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n'
        teardown = '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n'
        flavours: list[tuple[str, str, str, Obj, str]] = [
            (
                STORAGE_CLASS,
                PROVISIONER,
                "local-path-config",
                {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [NODE_VOLUMES]}]},
                "WaitForFirstConsumer",
            ),
            (
                SHARED_STORAGE_CLASS,
                SHARED_PROVISIONER,
                "local-path-shared-config",
                {"sharedFileSystemPath": str(self.shared), "nodePathMap": []},
                "Immediate",
            ),
        ]
        objects: list[Obj] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROVISIONER_NAMESPACE}},
            # Its helper pods run as this account, as its own manifests make it (they need no API access).
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "local-path-provisioner-service-account", "namespace": PROVISIONER_NAMESPACE},
            },
        ]
        for name, provisioner, configmap, config, binding in flavours:
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": configmap, "namespace": PROVISIONER_NAMESPACE},
                    "data": {
                        "config.json": json.dumps(config),
                        "setup": setup,
                        "teardown": teardown,
                        "helperPod.yaml": yaml.safe_dump(helper_pod),
                    },
                }
            )
            annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if name == STORAGE_CLASS else {}
            objects.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "metadata": {"name": name, "annotations": annotations},
                    "provisioner": provisioner,
                    "volumeBindingMode": binding,
                    "reclaimPolicy": "Delete",
                }
            )
        self.plane.apply(objects)
        for name, provisioner, configmap, _config, _binding in flavours:
            self.plane.spawn(
                f"local-path-provisioner-{name}",
                [
                    str(self.node_bin / "local-path-provisioner"),
                    "start",
                    f"--kubeconfig={self.plane.kubeconfig_for(PROVISIONER_USER)}",
                    f"--namespace={PROVISIONER_NAMESPACE}",
                    f"--configmap-name={configmap}",
                    f"--provisioner-name={provisioner}",
                    f"--helper-image={workloads.POSTGRES}",
                ],
                env={"POD_NAMESPACE": PROVISIONER_NAMESPACE, "PATH": "/usr/bin:/bin"},
            )


def _which_registry() -> str:
    path = shutil.which("docker-registry")
    if path is None:
        raise ControlPlaneError("the cluster's registry needs docker-registry: apt-get install docker-registry")
    return path
