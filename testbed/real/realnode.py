"""Real stack: one real node, containerd and runc, a CNI bridge, the kubelet and kube-proxy, in namespaces of its own.

Several of them make a cluster (``testbed/real/cluster.py``), joined as kind joins its
node containers. Each node lives in network, mount and UTS namespaces of its own
(``testbed/real/nodehost.py``), inside ``testbed.real.sandbox``'s: its own address on the
cluster's bridge, its own iptables, ``/run``, ``/var/log`` and ``/var/lib``. Every
program is a process of the stack, started with the control plane's ``spawn``
through ``nsenter`` (its log beside the others, killed with the test session):

- containerd (Debian's) with a root, state and socket under the node's directory
  and its CRI plugin's ``restrict_oom_score_adj`` on (without ``CAP_SYS_RESOURCE``
  every sandbox fails otherwise); the images imported into it, never pulled;
- the CNI ``bridge`` and ``host-local`` plugins (Debian's): the node's pods on its
  own ``/24`` of ``10.244.0.0/16``, routed (not masqueraded) to the other nodes, so
  a pod's address is what every other pod and the policy agent see;
- the kubelet v1.34.4, cgroupfs driver under a cgroup of its own in the run's,
  anonymous read-only for the API server's ``logs`` and ``exec`` (a test cluster's trust);
- kube-proxy in iptables mode for ClusterIP Services, conntrack limits left alone
  (they are the host's, not the namespace's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

from testbed.images import workloads
from testbed.real import nodehost, sandbox
from testbed.real.controlplane import ControlPlane, ControlPlaneError

CLUSTER_DOMAIN = "cluster.local"
CLUSTER_CIDR = "10.244.0.0/16"
# The cluster's own network, a bridge in the sandbox's namespace: the control plane (API server,
# CoreDNS) answers on its gateway, each node has one address on it.
CLUSTER_BRIDGE = "sdbnet"
CLUSTER_NETWORK = "10.200.0.0/24"
CLUSTER_GATEWAY = "10.200.0.1"
ZONES = ("zone-a", "zone-b", "zone-c")
PROXY_USER = "system:kube-proxy"
# The cluster's image registry, a mirror for the registries the product's images are named after.
REGISTRY = f"{CLUSTER_GATEWAY}:5000"
NODE_BUILD_SCRIPT = Path(__file__).resolve().parent / "build-node-binaries.sh"
Obj = dict[str, Any]


def build_node_binaries(timeout: float = 3600.0) -> Path:
    """CoreDNS, the provisioner and the policy agent (``build-node-binaries.sh``; a no-op when cached)."""
    result = subprocess.run(
        ["bash", str(NODE_BUILD_SCRIPT)], stdout=subprocess.PIPE, stderr=None, text=True, timeout=timeout, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise ControlPlaneError(f"build-node-binaries.sh failed ({result.returncode}); its messages are above")
    return Path(lines[-1])


@dataclass(frozen=True)
class NodeSpec:
    """Where node ``index`` (from 1) sits: its name, address, pod range and zone."""

    index: int

    @property
    def name(self) -> str:
        return f"node-{self.index}"

    @property
    def user(self) -> str:
        return f"system:node:{self.name}"

    @property
    def address(self) -> str:
        return f"10.200.0.{10 + self.index}"

    @property
    def pod_cidr(self) -> str:
        return f"10.244.{self.index}.0/24"

    @property
    def pod_gateway(self) -> str:
        return f"10.244.{self.index}.1"

    @property
    def zone(self) -> str:
        return ZONES[(self.index - 1) % len(ZONES)]


@dataclass
class RealNode:
    """Started by ``start()`` on a running control plane; its processes end with the control plane's, its
    containers with the sandbox's PID namespace, its images and volumes with the run's directory."""

    plane: ControlPlane
    image_set: workloads.ImageSet
    spec: NodeSpec
    dns: str = CLUSTER_GATEWAY
    peers: tuple[NodeSpec, ...] = ()
    extra_archives: tuple[Path, ...] = ()
    mirrored_registries: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not sandbox.inside():
            raise ControlPlaneError(
                "a real node runs only inside its own namespaces: "
                "python -m testbed.real.sandbox -- python -m pytest -m data (make data does this)"
            )
        self.name = self.spec.name
        self.root = self.plane.root / self.name
        self.root.mkdir()
        self.socket = self.root / "containerd.sock"
        self.holder_pid = 0

    # --- start ------------------------------------------------------------------

    def start(self) -> None:
        for step, action in (
            ("namespaces", self._namespaces),
            ("network", self._network),
            ("containerd", self._containerd),
            ("images", self._import_images),
            ("kubelet", self._kubelet),
            ("kube-proxy", self._kube_proxy),
        ):
            began = time.monotonic()
            action()
            self.timings[step] = time.monotonic() - began

    @property
    def enter(self) -> list[str]:
        """The prefix that runs a program in this node's namespaces."""
        return ["nsenter", f"--target={self.holder_pid}", "--net", "--mount", "--uts", "--"]

    def run(self, *command: str, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """One command in the node's namespaces (``ip``, ``iptables-save``); a failure names its words."""
        result = subprocess.run([*self.enter, *command], capture_output=True, text=True, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise ControlPlaneError(f"{self.name}: {' '.join(command)} failed: {result.stderr.strip()}")
        return result

    def spawn(self, program: str, args: list[str], env: dict[str, str] | None = None) -> None:
        self.plane.spawn(f"{self.name}-{program}", [*self.enter, *args], env=env)

    def log(self, program: str) -> Path:
        return self.plane.root / f"{self.name}-{program}.log"

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

    def _namespaces(self) -> None:
        process = self.plane.spawn(
            f"{self.name}-namespaces",
            [
                "unshare",
                "--net",
                "--mount",
                "--uts",
                "--propagation",
                "private",
                "--",
                sys.executable,
                "-m",
                "testbed.real.nodehost",
                self.name,
                str(self.root),
            ],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        self.holder_pid = process.pid
        ready = self.root / nodehost.READY_FILE
        wait_for(f"{self.name}'s namespaces", ready.exists, 30, self.plane, f"{self.name}-namespaces")

    def _network(self) -> None:
        """A veth from the cluster's bridge to the node's ``eth0``; routes to every other node's pods."""
        outside = f"veth-{self.name}"
        must(["ip", "link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", str(self.holder_pid)])
        must(["ip", "link", "set", outside, "master", CLUSTER_BRIDGE, "up"])
        must(["ip", "route", "replace", self.spec.pod_cidr, "via", self.spec.address])
        self.run("ip", "addr", "add", f"{self.spec.address}/24", "dev", "eth0")
        self.run("ip", "link", "set", "eth0", "up")
        self.run("ip", "route", "add", "default", "via", CLUSTER_GATEWAY)
        for peer in self.peers:
            self.run("ip", "route", "add", peer.pod_cidr, "via", peer.address)

    def cut(self) -> None:
        """The node's network cable pulled: its link to the cluster's bridge goes down."""
        must(["ip", "link", "set", f"veth-{self.name}", "down"])

    def mend(self) -> None:
        must(["ip", "link", "set", f"veth-{self.name}", "up"])

    def lose(self) -> None:
        """The node lost as a machine is: its kubelet and containerd killed, its network cut."""
        self.cut()
        for program in ("kubelet", "containerd"):
            self.plane.kill(f"{self.name}-{program}")

    def shut_down(self) -> None:
        """The node lost and its power cut: lost as ``lose`` does, and every container's process killed.

        Only a node known to be off may be declared gone (the out-of-service taint): a database left
        running on it would share its volume with its replacement.
        """
        self.lose()
        killed = sandbox.kill_cgroups(self.cgroup.lstrip("/"))
        if not killed:
            raise ControlPlaneError(f"{self.name}: no container process to stop under {self.cgroup}")

    def restore(self) -> None:
        """The machine back: network first, then containerd and the kubelet on their state, as at boot."""
        self.mend()
        self.plane.restart(f"{self.name}-containerd")
        wait_for("containerd to answer", self._answers, 60, self.plane, f"{self.name}-containerd")
        kubelet = f"{self.name}-kubelet"
        # Heartbeats are whole seconds: one in the second the kubelet starts counts.
        since = datetime.now(UTC).replace(microsecond=0)
        self.plane.restart(kubelet)
        # A kubelet that finds the runtime still cleaning up after the machine's stop (its CRI "not
        # initialized yet") exits; its service manager starts it again, as systemd's Restart=always does.
        # Only the new kubelet's word counts: until the node controller marks the node (its grace), the
        # Ready condition the old kubelet last wrote still says True, and a restore that took it for the
        # new kubelet's once returned while that kubelet was exiting, leaving the node dead for good.
        deadline = time.monotonic() + 120
        while not self.reporting(since):
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{self.name}: no Ready heartbeat 120 s after the restore; see {self.log('kubelet')}"
                )
            if self.plane.named[kubelet].poll() is not None:
                time.sleep(1.0)
                self.plane.restart(kubelet)
            time.sleep(0.5)

    def reporting(self, since: datetime | None = None) -> bool:
        """The kubelet reports the node Ready (whatever taints the node still carries), in a heartbeat at or after
        ``since`` when given: a kubelet's first status after it starts carries a fresh heartbeat."""
        return reports_ready(self.plane.get(f"/api/v1/nodes/{self.name}") or {}, since)

    def _containerd(self) -> None:
        cni = self.root / "cni"
        (cni / "net.d").mkdir(parents=True)
        network = {
            "cniVersion": "0.4.0",
            "name": "sharddb",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": self.spec.pod_cidr, "gateway": self.spec.pod_gateway}]],
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
  sandbox_image = "{workloads.PAUSE}"
  restrict_oom_score_adj = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{self._registry_hosts()}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{sandbox.CNI_BIN}"
    conf_dir = "{cni / "net.d"}"
"""
        )
        self.spawn("containerd", [_which("containerd"), f"--config={config}", "--log-level=info"])
        wait_for("containerd's socket", self.socket.exists, 60, self.plane, f"{self.name}-containerd")
        wait_for("containerd to answer", self._answers, 60, self.plane, f"{self.name}-containerd")

    def _registry_hosts(self) -> Path:
        """Pulls from each mirrored registry go to the cluster's own registry (how kind users run a local one)."""
        hosts = self.root / "registry-hosts"
        for registry in self.mirrored_registries:
            folder = hosts / registry
            folder.mkdir(parents=True)
            (folder / "hosts.toml").write_text(
                f'server = "https://{registry}"\n\n[host."http://{REGISTRY}"]\n  capabilities = ["pull", "resolve"]\n'
            )
        hosts.mkdir(exist_ok=True)
        return hosts

    def task_pid(self, container_id: str) -> int:
        """The PID of a container's first process (``containerd://<id>`` as a pod's status names it)."""
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
        for archive in (*self.image_set.archives, *self.extra_archives):
            self.ctr("images", "import", "--no-unpack", str(archive))
        listed = self.ctr("images", "ls", "-q")
        names = (
            *workloads.POSTGRES_IMAGE.refs,
            *workloads.REDIS_IMAGE.refs,
            workloads.MARIADB,
            workloads.MEMCACHED,
            workloads.PAUSE,
        )
        missing = [name for name in names if name not in listed.split()]
        if missing:
            raise ControlPlaneError(f"images not in containerd after import: {missing}")

    @property
    def cgroup(self) -> str:
        return f"/{sandbox.run_name()}/{self.name}"

    def _kubelet(self) -> None:
        sandbox.make_cgroups(self.cgroup.lstrip("/"))
        resolv = self.root / "resolv.conf"
        resolv.write_text("")  # nothing beyond the cluster: the pods' only nameserver is CoreDNS
        config: Obj = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup,
            "failCgroupV1": False,
            "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "clusterDNS": [self.dns],
            "clusterDomain": CLUSTER_DOMAIN,
            "resolvConf": str(resolv),
            "address": self.spec.address,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248,
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
        self.spawn(
            "kubelet",
            [
                str(self.plane.bin_dir / "kubelet"),
                f"--config={path}",
                f"--kubeconfig={self.plane.kubeconfig_for(self.spec.user, from_node=True)}",
                f"--hostname-override={self.name}",
                f"--node-ip={self.spec.address}",
                f"--node-labels=topology.kubernetes.io/zone={self.spec.zone}",
            ],
        )
        wait_for(f"{self.name} Ready", self.ready, 120, self.plane, f"{self.name}-kubelet")

    def ready(self) -> bool:
        node: Obj = self.plane.get(f"/api/v1/nodes/{self.name}") or {}
        return reports_ready(node) and not node.get("spec", {}).get("taints", [])

    def _kube_proxy(self) -> None:
        config: Obj = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.plane.kubeconfig_for(PROXY_USER, from_node=True))},
            "mode": "iptables",
            "hostnameOverride": self.name,
            "clusterCIDR": CLUSTER_CIDR,
            "bindAddress": self.spec.address,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            # The conntrack table's limits are the host's, not the namespace's: leave them alone.
            "conntrack": {"maxPerCore": 0, "min": 0},
            "iptables": {"syncPeriod": "5s", "minSyncPeriod": "0s"},
        }
        path = self.root / "kube-proxy.yaml"
        path.write_text(yaml.safe_dump(config))
        # At -v=2 each sync of its rules is logged with its time and length: the evidence of when a new
        # Service reached this node (a client's first try can come before it).
        self.spawn("kube-proxy", [str(self.plane.bin_dir / "kube-proxy"), f"--config={path}", "--v=2"])
        wait_for("kube-proxy's rules", self._proxy_rules, 60, self.plane, f"{self.name}-kube-proxy")

    def _proxy_rules(self) -> bool:
        return "KUBE-SERVICES" in self.run("iptables-save", "-t", "nat", check=False).stdout


def reports_ready(node: Obj, since: datetime | None = None) -> bool:
    """Ready is True, in a heartbeat at or after ``since`` when given."""
    for condition in node.get("status", {}).get("conditions", []):
        if condition["type"] != "Ready" or condition["status"] != "True":
            continue
        if since is None:
            return True
        beat = condition.get("lastHeartbeatTime")
        return beat is not None and datetime.fromisoformat(beat.replace("Z", "+00:00")) >= since
    return False


def must(command: list[str]) -> None:
    """One command of the sandbox's own network setup; a failure names its words."""
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ControlPlaneError(f"{' '.join(command)} failed: {result.stderr.strip()}")


def _which(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        raise ControlPlaneError(f"{program} not found on PATH")
    return path


def answers_ok(url: str) -> bool:
    """True when ``url`` answers 200: a plain-HTTP health endpoint, so no trust store is loaded for it.

    With httpx's default, each call parsed the machine's CA bundle (``SSL_CERT_FILE``) into a new TLS context,
    50 ms of CPU, and a poll ten times a second did so for nothing; once, beside the chaos campaign's other
    faults' threads, that raised "[X509] PEM lib" (an ``ssl.SSLError``, not an HTTP error), and a restarted
    Metacontroller was reported as a fault that did not come back (2026-12-07; 6000 such calls from 4 threads
    did not fail again).
    """
    try:
        return httpx.get(url, timeout=1.0, verify=False).status_code == 200
    except httpx.HTTPError:
        return False


def wait_for(what: str, check: Callable[[], bool], timeout: float, plane: ControlPlane, log: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    tail = (plane.root / f"{log}.log").read_text(errors="replace").splitlines()[-40:]
    raise ControlPlaneError(f"timed out after {timeout:.0f}s waiting for {what}; {log}'s log ends:\n" + "\n".join(tail))
