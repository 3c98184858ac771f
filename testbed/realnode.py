"""A real node: containerd and runc, a CNI bridge, the kubelet, kube-proxy, CoreDNS and a volume provisioner.

It runs only inside ``testbed.sandbox``'s namespaces: the bridge, the routes and
kube-proxy's iptables rules are the sandbox's own, and so are the paths these
programs write whatever they are told. Every program is a process of the stack,
started with the control plane's ``spawn`` (its log beside the others, killed
with the test session):

- containerd (Debian's) with a root, state and socket under the run's directory and
  its CRI plugin's ``restrict_oom_score_adj`` on (without ``CAP_SYS_RESOURCE`` every
  sandbox fails otherwise); the test images imported into it, never pulled;
- the CNI ``bridge`` and ``host-local`` plugins (Debian's): pods on ``10.244.0.0/24``,
  the bridge's own address ``10.244.0.1`` is the node's (the kubelet refuses loopback);
- the kubelet v1.34.4, cgroupfs driver under the run's own cgroup, anonymous
  read-only for the API server's ``logs`` and ``exec`` (a test cluster's trust);
- kube-proxy in iptables mode for ClusterIP Services, conntrack limits left alone
  (they are the host's, not the namespace's);
- CoreDNS serving ``cluster.local`` on the node's address, the pods' nameserver;
- rancher's local-path-provisioner, the default StorageClass ``standard``, as kind
  ships it: each volume a directory under the run, made by a helper pod on the node.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from testbed import images, sandbox
from testbed.controlplane import ControlPlane, ControlPlaneError
from testbed.server import free_port

NODE_NAME = "node-1"
NODE_USER = f"system:node:{NODE_NAME}"
PROXY_USER = "system:kube-proxy"
DNS_USER = "system:coredns"
PROVISIONER_USER = "system:local-path-provisioner"
USERS = (NODE_USER, PROXY_USER, DNS_USER, PROVISIONER_USER)
BRIDGE = "sdb0"
POD_CIDR = "10.244.0.0/24"
NODE_IP = "10.244.0.1"
CLUSTER_DOMAIN = "cluster.local"
STORAGE_CLASS = "standard"
PROVISIONER = "rancher.io/local-path"
PROVISIONER_NAMESPACE = "local-path-storage"
NODE_BUILD_SCRIPT = Path(__file__).resolve().parent / "build-node-binaries.sh"
Obj = dict[str, Any]


def build_node_binaries(timeout: float = 3600.0) -> Path:
    """CoreDNS and the provisioner (``build-node-binaries.sh``; a no-op when cached)."""
    result = subprocess.run(
        ["bash", str(NODE_BUILD_SCRIPT)], stdout=subprocess.PIPE, stderr=None, text=True, timeout=timeout, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise ControlPlaneError(f"build-node-binaries.sh failed ({result.returncode}); its messages are above")
    return Path(lines[-1])


@dataclass
class RealNode:
    """Started by ``start()`` on a running control plane; its processes end with the control plane's, its
    containers with the sandbox's PID namespace, its images and volumes with the run's directory."""

    plane: ControlPlane
    node_bin: Path
    image_set: images.ImageSet

    def __post_init__(self) -> None:
        if not sandbox.inside():
            raise ControlPlaneError(
                "a real node runs only inside its own namespaces: "
                "python -m testbed.sandbox -- python -m pytest -m data (make data does this)"
            )
        self.root = self.plane.root / "node"
        self.root.mkdir()
        self.socket = self.root / "containerd.sock"
        self.volumes = self.root / "volumes"
        self.volumes.mkdir()
        self.timings: dict[str, float] = {}

    # --- start ------------------------------------------------------------------

    def start(self) -> None:
        for step, action in (
            ("bridge", self._bridge),
            ("containerd", self._containerd),
            ("images", self._import_images),
            ("coredns", self._coredns),
            ("kubelet", self._kubelet),
            ("kube-proxy", self._kube_proxy),
            ("provisioner", self._provisioner),
        ):
            began = time.monotonic()
            action()
            self.timings[step] = time.monotonic() - began

    def ctr(self, *args: str, timeout: float = 300.0) -> str:
        result = subprocess.run(
            ["ctr", f"--address={self.socket}", "--namespace=k8s.io", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if result.returncode != 0:
            raise ControlPlaneError(f"ctr {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout

    def _bridge(self) -> None:
        for command in (
            ["ip", "link", "add", BRIDGE, "type", "bridge"],
            ["ip", "addr", "add", f"{NODE_IP}/24", "dev", BRIDGE],
            ["ip", "link", "set", BRIDGE, "up"],
        ):
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise ControlPlaneError(f"{' '.join(command)} failed: {result.stderr.strip()}")

    def _containerd(self) -> None:
        cni = self.root / "cni"
        (cni / "net.d").mkdir(parents=True)
        network = {
            "cniVersion": "0.4.0",
            "name": "sharddb",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    "ipMasq": True,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_CIDR, "gateway": NODE_IP}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(cni / "ipam"),
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }
        (cni / "net.d" / "10-sharddb.conflist").write_text(json.dumps(network, indent=2))
        config = self.root / "containerd.toml"
        config.write_text(
            f"""version = 2
root = "{self.root / "containerd" / "root"}"
state = "{self.root / "containerd" / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{self.socket}"

[ttrpc]
  address = "{self.socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{self.root / "containerd" / "opt"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{images.PAUSE}"
  restrict_oom_score_adj = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{sandbox.CNI_BIN}"
    conf_dir = "{cni / "net.d"}"
"""
        )
        self.plane.spawn("containerd", [_which("containerd"), f"--config={config}", "--log-level=info"])
        _wait("containerd's socket", lambda: self.socket.exists(), 60, self.plane, "containerd")
        _wait("containerd to answer", lambda: self._answers(), 60, self.plane, "containerd")

    def task_pid(self, container_id: str) -> int:
        """The host PID of a container's first process (``containerd://<id>`` as a pod's status names it)."""
        wanted = container_id.removeprefix("containerd://")
        for line in self.ctr("tasks", "ls").splitlines()[1:]:
            task, pid, *_ = line.split()
            if task == wanted:
                return int(pid)
        raise ControlPlaneError(f"no running task {wanted}")

    def _answers(self) -> bool:
        try:
            self.ctr("version", timeout=10)
        except (ControlPlaneError, subprocess.TimeoutExpired):
            return False
        return True

    def _import_images(self) -> None:
        for archive in self.image_set.archives:
            self.ctr("images", "import", "--no-unpack", str(archive))
        listed = self.ctr("images", "ls", "-q")
        names = (images.POSTGRES, images.POSTGRES_ROLLOUT, images.REDIS, images.REDIS_ROLLOUT, images.PAUSE)
        missing = [name for name in names if name not in listed.split()]
        if missing:
            raise ControlPlaneError(f"images not in containerd after import: {missing}")

    def _coredns(self) -> None:
        health, ready = free_port(), free_port()
        corefile = self.root / "Corefile"
        corefile.write_text(
            f""".:53 {{
    bind {NODE_IP}
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
        _wait("CoreDNS ready", lambda: _ok(f"http://127.0.0.1:{ready}/ready"), 60, self.plane, "coredns")

    def _kubelet(self) -> None:
        resolv = self.root / "resolv.conf"
        resolv.write_text("")  # nothing beyond the cluster: the pods' only nameserver is CoreDNS
        config: Obj = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": f"/{sandbox.run_name()}",
            "failCgroupV1": False,
            "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "clusterDNS": [NODE_IP],
            "clusterDomain": CLUSTER_DOMAIN,
            "resolvConf": str(resolv),
            "address": NODE_IP,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": free_port(),
            "serializeImagePulls": False,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "rotateCertificates": False,
            "serverTLSBootstrap": False,
            "registerNode": True,
            "nodeStatusUpdateFrequency": "5s",
            "syncFrequency": "10s",
            "fileCheckFrequency": "20s",
            "staticPodPath": "",
            "logging": {"verbosity": 1},
        }
        path = self.root / "kubelet.yaml"
        path.write_text(yaml.safe_dump(config))
        self.plane.spawn(
            "kubelet",
            [
                str(self.plane.bin_dir / "kubelet"),
                f"--config={path}",
                f"--kubeconfig={self.plane.kubeconfig_for(NODE_USER)}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={NODE_IP}",
                "--node-labels=topology.kubernetes.io/zone=zone-a",
            ],
        )
        _wait("node-1 Ready", self._node_ready, 120, self.plane, "kubelet")

    def _node_ready(self) -> bool:
        node: Obj = self.plane.get(f"/api/v1/nodes/{NODE_NAME}") or {}
        conditions = node.get("status", {}).get("conditions", [])
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        taints = node.get("spec", {}).get("taints", [])
        return ready and not taints

    def _kube_proxy(self) -> None:
        config: Obj = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.plane.kubeconfig_for(PROXY_USER))},
            "mode": "iptables",
            "hostnameOverride": NODE_NAME,
            "clusterCIDR": POD_CIDR,
            "bindAddress": NODE_IP,
            "healthzBindAddress": f"127.0.0.1:{free_port()}",
            "metricsBindAddress": f"127.0.0.1:{free_port()}",
            # The conntrack table's limits are the host's, not the namespace's: leave them alone.
            "conntrack": {"maxPerCore": 0, "min": 0},
            "iptables": {"syncPeriod": "5s", "minSyncPeriod": "0s"},
        }
        path = self.root / "kube-proxy.yaml"
        path.write_text(yaml.safe_dump(config))
        self.plane.spawn("kube-proxy", [str(self.plane.bin_dir / "kube-proxy"), f"--config={path}"])
        _wait("kube-proxy's rules", self._proxy_rules, 60, self.plane, "kube-proxy")

    def _proxy_rules(self) -> bool:
        result = subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True, check=False)
        return "KUBE-SERVICES" in result.stdout

    def _provisioner(self) -> None:
        """local-path-provisioner as kind runs it: its ConfigMap, the default StorageClass, the controller."""
        helper_pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "helper-pod"},
            "spec": {
                "priorityClassName": "system-node-critical",
                "tolerations": [
                    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"}
                ],
                "containers": [{"name": "helper-pod", "image": images.POSTGRES, "imagePullPolicy": "IfNotPresent"}],
            },
        }
        setup = '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n'
        teardown = '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n'
        config = {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": [str(self.volumes)]}]}
        objects: list[Obj] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROVISIONER_NAMESPACE}},
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "local-path-config", "namespace": PROVISIONER_NAMESPACE},
                "data": {
                    "config.json": json.dumps(config),
                    "setup": setup,
                    "teardown": teardown,
                    "helperPod.yaml": yaml.safe_dump(helper_pod),
                },
            },
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {
                    "name": STORAGE_CLASS,
                    "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                },
                "provisioner": PROVISIONER,
                "volumeBindingMode": "WaitForFirstConsumer",
                "reclaimPolicy": "Delete",
            },
        ]
        self.plane.apply(objects)
        self.plane.spawn(
            "local-path-provisioner",
            [
                str(self.node_bin / "local-path-provisioner"),
                "start",
                f"--kubeconfig={self.plane.kubeconfig_for(PROVISIONER_USER)}",
                f"--namespace={PROVISIONER_NAMESPACE}",
                "--configmap-name=local-path-config",
                f"--provisioner-name={PROVISIONER}",
                f"--helper-image={images.POSTGRES}",
            ],
            env={"POD_NAMESPACE": PROVISIONER_NAMESPACE, "PATH": "/usr/bin:/bin"},
        )


def _which(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        raise ControlPlaneError(f"{program} not found on PATH")
    return path


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def _wait(what: str, check: Callable[[], bool], timeout: float, plane: ControlPlane, log: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    tail = (plane.root / f"{log}.log").read_text(errors="replace").splitlines()[-40:]
    raise ControlPlaneError(f"timed out after {timeout:.0f}s waiting for {what}; {log}'s log ends:\n" + "\n".join(tail))
