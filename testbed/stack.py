"""Assembly: the whole stack on loopback, the real control plane, controllers, scheduler, Metacontroller, our hooks.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and Metacontroller
are the real binaries (``real/build-binaries.sh``); the hooks run as ``python -m
hooks`` from a checkout (the working tree, or a revision for the fleet
benchmark's baseline); the CompositeController comes from that checkout's
``metacontroller/`` manifests with only the hook URLs pointed at loopback. The
node agent (``testbed.standins.node``) is the one stand-in, and the provisioner of the
default StorageClass the stack applies for it (``WaitForFirstConsumer``, as kind
ships its ``standard``). Each component writes with credentials of its own, so the
audit log says whose write is whose.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from testbed.images import workloads
from testbed.real import cluster, kubectl, partitions
from testbed.real.audit import AuditLog, Write
from testbed.real.cluster import Cluster
from testbed.real.controlplane import METACONTROLLER_CRDS, ControlPlane, ControlPlaneError, build_binaries
from testbed.real.realnode import CLUSTER_GATEWAY, RealNode, answers_ok, build_node_binaries
from testbed.real.server import ROOT, HookProcess, free_port, launch
from testbed.standins.node import Behaviour, NodeAgent, storage_class

Obj = dict[str, Any]

CONTROLLER_MANAGER = "system:kube-controller-manager"
SCHEDULER = "system:kube-scheduler"
NODE = "system:node:node-1"
METACONTROLLER = "sharddb-metacontroller"
# The controllers a ShardDB's life runs through; the node lifecycle controller is off
# (the node agent sends no heartbeats).
CONTROLLERS = (
    "statefulset-controller",
    "deployment-controller",
    "replicaset-controller",
    "job-controller",
    "cronjob-controller",  # a ShardDB's base backups
    "endpointslice-controller",
    "disruption-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "persistentvolume-binder-controller",
    "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
    "pod-garbage-collector-controller",
    "validatingadmissionpolicy-status-controller",
)
# A real kubelet sends heartbeats, so the controller that watches them (and lifts a new node's
# not-ready taint) runs too, and so does the one that evicts pods from a node tainted NoExecute (an
# unreachable node after the pods' toleration; at once, a node declared out of service).
# In-cluster clients (pods with service accounts) need the CA's ConfigMap in every namespace.
REAL_NODE_CONTROLLERS = (
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "root-ca-certificate-publisher-controller",
)
SHARDDB_CRD = "sharddbs.mygroup.example.com"
# What the stack applies of a rendered install (the CRD comes from crds/, the workloads run as processes).
APPLIED_KINDS = frozenset(
    {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "CompositeController",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
)


@dataclass(frozen=True)
class Instance:
    """One Metacontroller process: its client budget and which CompositeControllers it serves."""

    name: str = "metacontroller"
    qps: float = 5.0
    burst: int = 10
    workers: int = 5
    apply_strategy: str = "dynamic-apply"
    target_label_selector: str = ""
    # A ServiceAccount's user name: the instance then writes with that account's RBAC (from the
    # rendered manifests) rather than as a cluster admin.
    account: str = ""

    @property
    def user(self) -> str:
        if self.account:
            return self.account
        return METACONTROLLER if self.name == "metacontroller" else f"{METACONTROLLER}-{self.name}"

    @property
    def groups(self) -> tuple[str, ...]:
        if self.account:
            namespace = self.account.split(":")[2]
            return ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated")
        return ("system:masters",)


@dataclass
class StackOptions:
    """What differs between stacks: whose code, which manifests, which Metacontroller settings."""

    checkout: Path = ROOT
    overlay: str = "metacontroller/base"  # rendered with kubectl kustomize; its CompositeControllers are applied
    instances: tuple[Instance, ...] = (Instance(),)
    # Split the overlay into this many partitions (``components/partitions-<N>``): one Metacontroller per
    # partition, each with the rendered --target-label-selector and account; ``instances[0]`` sets their budget.
    partitions: int = 0
    # With partitions: each instance's --client-go-qps, --client-go-burst and --workers as rendered, instead of
    # ``instances[0]``'s: the budget the manifests ship.
    shipped_budget: bool = False
    resync_seconds: int | None = None  # overrides each CompositeController's resyncPeriodSeconds
    behaviour: Behaviour = field(default_factory=Behaviour)
    tls: bool = False  # hooks over HTTPS with a bearer token, as the production overlay expects
    hook_env: dict[str, str] = field(default_factory=dict)
    isolated: bool = False  # run the checkout's hooks with its own defaults (a baseline revision)
    hook_module: str = "hooks"  # what serves the hooks (``testbed.standins.canned`` replays fixed answers)
    # A real kubelet, containerd and runc running the test images (``testbed.real.realnode``; inside
    # ``testbed.real.sandbox`` only) instead of the node agent that reports pods without running them.
    real_node: bool = False
    nodes: int = 1  # with real_node: how many, joined into one cluster (``testbed.real.cluster``)
    # With real_node: the product runs as users install it (``kubectl apply -k``, its images as pods), so the
    # stack starts no hooks and no Metacontroller of its own and applies no manifests.
    installed: bool = False
    # Image archives imported into every real node's containerd besides the test images.
    node_images: tuple[Path, ...] = ()
    # Of those images, the ones the cluster's registry also serves (for pods that always pull).
    mirrored_images: tuple[str, ...] = ()


class Stack:
    """Started by ``start()``, torn down by ``stop()``; ``audit`` reads every write made meanwhile."""

    def __init__(self, options: StackOptions | None = None) -> None:
        self.options = options or StackOptions()
        self.plane: ControlPlane | None = None
        self.agent: NodeAgent | None = None
        self.node: RealNode | None = None  # the first of the cluster's nodes
        self.cluster: Cluster | None = None
        self.hooks: HookProcess | None = None
        self.metacontrollers: dict[str, subprocess.Popen[bytes]] = {}
        self.controllers: list[Obj] = []
        self.manifests: list[Obj] = []
        self.instances: tuple[Instance, ...] = ()
        self._hook_context: contextlib.ExitStack | None = None
        self._hook_port = 0
        self._hook_env: dict[str, str] = {}
        self._logs: Path | None = None
        self._agent_log: logging.Handler | None = None

    # --- what tests use ---------------------------------------------------------

    @property
    def control_plane(self) -> ControlPlane:
        assert self.plane is not None, "stack not started"
        return self.plane

    @property
    def audit(self) -> AuditLog:
        return AuditLog(self.control_plane.audit_log)

    @property
    def behaviour(self) -> Behaviour:
        return self.options.behaviour

    def restart_node_agent(self, down: float = 0.0) -> None:
        """Stop the stand-in node agent and start a new one after ``down`` seconds, as a kubelet restarts."""
        assert self.agent is not None, "only the stand-in node's agent restarts this way"
        self.agent.stop()
        time.sleep(down)
        self._start_node_agent()

    def _start_node_agent(self) -> None:
        plane = self.control_plane
        self.agent = NodeAgent(plane.url, plane.identities[NODE][0], plane.ca_file, self.behaviour)
        self.agent.start()

    def metacontroller_writes(self, mark: int = 0, namespace: str | None = None, *, ok: bool = True) -> list[Write]:
        """Every write by a Metacontroller instance after ``mark``: the successful ones, or every attempt if not ``ok``.

        An idle window is judged on attempts: a write the API server refused (a conflict)
        was still a write Metacontroller decided to make.
        """
        users = {instance.user for instance in self.instances}
        return [w for w in self.audit.since(mark, namespace=namespace, ok=ok) if w.user in users]

    def hook_calls(self) -> int:
        """Hook calls answered so far (one JSON line each, 304s included)."""
        assert self.hooks is not None
        return sum(1 for line in self.hooks.stdout.read_text(errors="replace").splitlines() if '"msg":"hook"' in line)

    def logs(self, name: str) -> str:
        return (self.control_plane.root / f"{name}.log").read_text(errors="replace")

    # --- start and stop -------------------------------------------------------

    def start(self) -> None:
        options = self.options
        self.manifests = self._render()
        self.plane = ControlPlane(build_binaries(), pod_address=CLUSTER_GATEWAY if options.real_node else None)
        node_parts = (build_node_binaries(), workloads.build_images()) if options.real_node else None
        node_users = cluster.users(options.nodes) if node_parts else (NODE,)
        for user in (CONTROLLER_MANAGER, SCHEDULER, *node_users):
            self.plane.identity(user)
        for instance in self.instances:
            self.plane.identity(instance.user, instance.groups)
        try:
            self.plane.start()
            self._logs = self.plane.root / "hooks"
            self._logs.mkdir()
            if not options.installed:
                self._install_crds()
            self._start_controller_manager()
            self._start_scheduler()
            if node_parts:
                self.cluster = Cluster(
                    self.plane,
                    *node_parts,
                    nodes=options.nodes,
                    extra_archives=options.node_images,
                    mirrored=options.mirrored_images,
                )
                self.cluster.start()
                self.node = self.cluster.members[0]
            else:
                # The default class, before any claim: the admission plugin writes it into each new claim.
                self.plane.apply([storage_class()])
                self._agent_log = _log_to(self.plane.root / "node-agent.log", "testbed.standins.node")
                self._start_node_agent()
            if options.installed:
                return
            self.start_hooks()
            self._apply_controllers()
            for instance in self.instances:
                self.start_metacontroller(instance)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for name in list(self.metacontrollers):
            self.stop_metacontroller(name)
        self.stop_hooks()
        if self.agent is not None:
            self.agent.stop()
            self.agent = None
        if self._agent_log is not None:
            logging.getLogger("testbed.standins.node").removeHandler(self._agent_log)
            self._agent_log.close()
            self._agent_log = None
        self.node = None  # its processes are the control plane's; its containers end with the sandbox
        self.cluster = None
        if self.plane is not None:
            self.plane.stop()
            self.plane = None

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """kubectl as the admin; the caller checks ``returncode``."""
        return self.control_plane.kubectl().run(*args, stdin=stdin)

    def _must(self, *args: str, stdin: str | None = None) -> str:
        result = self.kubectl(*args, stdin=stdin)
        if result.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
        return result.stdout

    def _install_crds(self) -> None:
        plane = self.control_plane
        self._must("apply", "--server-side", "-f", str(plane.bin_dir / METACONTROLLER_CRDS))
        self._must("apply", "--server-side", "-k", str(self.options.checkout / "crds"))
        for crd in (SHARDDB_CRD, "compositecontrollers.metacontroller.k8s.io"):
            self._established(crd)

    def _established(self, crd: str, timeout: float = 60.0) -> None:
        """Polled: ``kubectl wait`` fails outright while a new CRD has no conditions yet."""
        query = "jsonpath={.status.conditions[?(@.type=='Established')].status}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.kubectl("get", "crd", crd, "-o", query).stdout.strip() == "True":
                return
            time.sleep(0.2)
        raise ControlPlaneError(f"CRD {crd} not Established after {timeout:.0f}s")

    def _start_controller_manager(self) -> None:
        self._start_component(
            "kube-controller-manager",
            CONTROLLER_MANAGER,
            f"--controllers={','.join(CONTROLLERS + (REAL_NODE_CONTROLLERS if self.options.real_node else ()))}",
            "--use-service-account-credentials=false",
            "--concurrent-statefulset-syncs=10",
            "--concurrent-deployment-syncs=10",
            "--concurrent-job-syncs=10",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            # Real nodes: the CA for in-cluster clients, and a node whose heartbeats stop is NotReady within
            # 20 s (four of its 5 s status updates) rather than the default 50 s.
            *(
                (f"--root-ca-file={self.control_plane.ca_file}", "--node-monitor-grace-period=20s")
                if self.options.real_node
                else ()
            ),
        )

    def _start_scheduler(self) -> None:
        self._start_component("kube-scheduler", SCHEDULER)

    def _start_component(self, binary: str, user: str, *flags: str) -> None:
        """A control-plane component under its own identity, alone (no leader election), serving nothing itself."""
        plane = self.control_plane
        kubeconfig = plane.kubeconfig_for(user)
        base = [f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--secure-port=0", "--v=1"]
        plane.spawn(binary, [str(plane.bin_dir / binary), *base, *flags])

    # --- hooks ----------------------------------------------------------------

    def start_hooks(self) -> None:
        """Serve the checkout's hooks; after ``stop_hooks`` on the same port, so the URLs stay valid."""
        assert self._logs is not None
        if not self._hook_port:
            self._hook_port = free_port()
            self._hook_env = dict(self.options.hook_env)
            if self.options.tls:
                self._hook_env.update(self._hook_credentials())
        context = contextlib.ExitStack()
        self.hooks = context.enter_context(
            launch(
                self._logs,
                self._hook_env,
                module=self.options.hook_module,
                cwd=self.options.checkout,
                isolated=self.options.isolated,
                scheme="https" if self.options.tls else "http",
                port=self._hook_port,
            )
        )
        self._hook_context = context

    def replace_hooks(self, checkout: Path, *, isolated: bool = False) -> None:
        """Another version of the hooks on the same URLs, with its CRD and CompositeControllers: an upgrade."""
        self.stop_hooks()
        self.options = dataclasses.replace(self.options, checkout=checkout, isolated=isolated)
        self.manifests = self._render()
        self._install_crds()
        self.start_hooks()
        self._apply_controllers()

    def stop_hooks(self) -> None:
        if self._hook_context is not None:
            self._hook_context.close()
            self._hook_context = None
            self.hooks = None

    def _hook_credentials(self) -> dict[str, str]:
        """A CA, a serving certificate for loopback and the service name, a token; as Secrets and as files."""
        plane = self.control_plane
        pki = plane.root / "hooks-pki"
        pki.mkdir()
        names = "DNS:sharddb-hooks.sharddb-system.svc,IP:127.0.0.1"
        ca = "req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sharddb-test-ca -keyout ca.key -out ca.crt"
        request = "req -newkey rsa:2048 -nodes -subj /CN=sharddb-hooks -keyout tls.key -out tls.csr"
        sign = "x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out tls.crt -extfile /dev/stdin"
        for command in (["openssl", *step.split()] for step in (ca, request, sign)):
            extension = f"subjectAltName={names}\n" if command[1] == "x509" else None
            result = subprocess.run(command, cwd=pki, input=extension, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise ControlPlaneError(f"openssl {command[1]} failed: {result.stderr}")
        token = os.urandom(16).hex()
        (pki / "token").write_text(token)
        self._must("create", "namespace", "sharddb-system")
        secret = ("-n", "sharddb-system", "create", "secret", "generic")
        self._must(*secret, "sharddb-hooks-token", f"--from-literal=token={token}")
        files = (f"--from-file={pki / name}" for name in ("tls.crt", "tls.key", "ca.crt"))
        self._must(*secret, "sharddb-hooks-tls", "--type=kubernetes.io/tls", *files)
        return {
            "SHARDDB_TLS_CERT_FILE": str(pki / "tls.crt"),
            "SHARDDB_TLS_KEY_FILE": str(pki / "tls.key"),
            "SHARDDB_AUTH_TOKEN_FILE": str(pki / "token"),
        }

    # --- Metacontroller -----------------------------------------------------------

    def _render(self) -> list[Obj]:
        """The checkout's manifests as a user would apply them; with partitions, one instance per partition."""
        overlay = self.options.checkout / self.options.overlay
        if not self.options.partitions:
            self.instances = self.options.instances
            return partitions.kustomize(overlay)
        setup = partitions.render(overlay, self.options.partitions)
        budget = self.options.instances[0]
        self.instances = tuple(
            dataclasses.replace(
                _shipped(budget, partition) if self.options.shipped_budget else budget,
                name=f"metacontroller-{partition.name}",
                target_label_selector=partition.target_selector,
                account=partition.service_account,
            )
            for partition in setup.partitions
        )
        return setup.objects

    def _apply_controllers(self) -> None:
        """The rendered CompositeControllers (hook URLs on loopback), admission policies and Metacontroller RBAC.

        The workloads (hook Deployment, Metacontroller StatefulSets) are left out: their processes run here.
        """
        assert self.hooks is not None
        applied = [
            self._on_loopback(doc) if doc["kind"] == "CompositeController" else doc
            for doc in self.manifests
            if doc["kind"] in APPLIED_KINDS
        ]
        self.controllers = [doc for doc in applied if doc["kind"] == "CompositeController"]
        if not self.controllers:
            raise ControlPlaneError(f"{self.options.overlay} renders no CompositeController")
        self._must("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(applied))

    def _on_loopback(self, controller: Obj) -> Obj:
        assert self.hooks is not None
        for hook in controller["spec"].get("hooks", {}).values():
            webhook = hook.get("webhook", {})
            if "url" in webhook:
                webhook["url"] = self.hooks.base + urllib.parse.urlsplit(webhook["url"]).path
        if self.options.resync_seconds is not None:
            controller["spec"]["resyncPeriodSeconds"] = self.options.resync_seconds
        return controller

    def start_metacontroller(self, instance: Instance) -> None:
        plane = self.control_plane
        health = free_port()
        args = [
            str(plane.bin_dir / "metacontroller"),
            f"--metrics-address=127.0.0.1:{free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{health}",
            f"--client-go-qps={instance.qps}",
            f"--client-go-burst={instance.burst}",
            f"--workers={instance.workers}",
            f"--apply-strategy={instance.apply_strategy}",
            "--discovery-interval=5s",
            "--zap-log-level=4",
        ]
        if instance.target_label_selector:
            args.append(f"--target-label-selector={instance.target_label_selector}")
        env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig_for(instance.user))}
        process = plane.spawn(instance.name, args, env=env)
        self.metacontrollers[instance.name] = process
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ControlPlaneError(
                    f"{instance.name} exited ({process.returncode}):\n{self.logs(instance.name)[-3000:]}"
                )
            if answers_ok(f"http://127.0.0.1:{health}/readyz"):
                return
            time.sleep(0.1)
        raise ControlPlaneError(f"{instance.name} not ready after 60s:\n{self.logs(instance.name)[-3000:]}")

    def kill_metacontroller(self, name: str) -> None:
        """SIGKILL, as a crash or an evicted pod: its informers, queue and hook answer cache are lost."""
        process = self.metacontrollers.pop(name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop_metacontroller(self, name: str) -> None:
        process = self.metacontrollers.pop(name, None)
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _log_to(path: Path, logger: str) -> logging.Handler:
    """``logger``'s records from INFO on, also in ``path``: the node agent's log beside the real parts' logs."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(threadName)s %(message)s"))
    handler.setLevel(logging.INFO)
    target = logging.getLogger(logger)
    target.addHandler(handler)
    if target.getEffectiveLevel() > logging.INFO:
        target.setLevel(logging.INFO)
    return handler


def _shipped(budget: Instance, partition: partitions.Partition) -> Instance:
    """``budget`` with the client budget and workers the partition's rendered Metacontroller runs with."""
    return dataclasses.replace(
        budget,
        qps=float(partition.flag("client-go-qps", str(budget.qps))),
        burst=int(partition.flag("client-go-burst", str(budget.burst))),
        workers=int(partition.flag("workers", str(budget.workers))),
    )


@contextlib.contextmanager
def running(options: StackOptions | None = None) -> Iterator[Stack]:
    """A started stack for the length of the block."""
    if kubectl.found() is None:
        raise ControlPlaneError("kubectl is required on PATH (kustomize rendering and CRD installation)")
    stack = Stack(options)
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()
