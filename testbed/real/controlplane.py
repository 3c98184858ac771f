"""Real stack: etcd and kube-apiserver on loopback, for the cluster and end-to-end tests, the benchmarks, ``make crd``.

The binaries come from ``build-binaries.sh`` beside this file (built once with
Go, cached outside the repository). Each process runs in its own process group
and is told to die with this process, so nothing survives a failed or killed
test session. Every client gets an identity of its own (a static token), and
every write is in the audit log under that identity, so a test can tell whose
write is whose.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from testbed.real.apiclient import ApiClient, Obj
from testbed.real.kubectl import Kubectl
from testbed.real.server import free_port, spawn

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build-binaries.sh"
ADMIN_USER = "sharddb-admin"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "metacontroller")
METACONTROLLER_CRDS = "metacontroller-crds-v4.17.2.yaml"
# Writes only (reads would drown them), at Metadata level: who, what, when, with what result. A pod's
# deletion also keeps its answer, the deleted pod, so the log says which incarnation of a name went;
# a ShardDB's status write keeps its request, so a write nobody expected says what it changed.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
  - level: None
    verbs: [get, list, watch]
  - level: RequestResponse
    verbs: [delete]
    resources: [{group: "", resources: [pods]}]
  - level: Request
    verbs: [update, patch]
    resources: [{group: mygroup.example.com, resources: [sharddbs/status]}]
  - level: Metadata
"""
AUDIT_LOG_MAX_MB = 1_000_000  # a terabyte: no stack writes that much
ROOT_PREFIX = "sharddb-apiserver-"
OWNER_FILE = "owner.pid"


class ControlPlaneError(RuntimeError):
    """The API server could not be built or started; the message says why."""


def build_binaries(timeout: float = 3600.0) -> Path:
    """Run the build script (a no-op when cached) and return the binaries' directory.

    Its progress lines reach this process's stderr as they come, so a first build of
    several minutes is not silent; the script's own message on failure is passed on.
    """
    process = subprocess.Popen(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said: list[str] = []

    def relay() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            said.append(line)
            sys.stderr.write(line)
            sys.stderr.flush()

    relaying = threading.Thread(target=relay, daemon=True)
    relaying.start()
    try:
        returncode = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise ControlPlaneError(f"build-binaries.sh did not finish within {timeout:.0f}s") from None
    finally:
        relaying.join(timeout=5)
    assert process.stdout is not None
    stdout = process.stdout.read()
    process.stdout.close()
    if returncode != 0:
        raise ControlPlaneError(f"build-binaries.sh failed ({returncode}):\n{''.join(said).strip()}")
    lines = stdout.strip().splitlines()
    if not lines:
        raise ControlPlaneError("build-binaries.sh printed no directory")
    directory = Path(lines[-1])
    for binary in BINARIES:
        if not os.access(directory / binary, os.X_OK):
            raise ControlPlaneError(f"build-binaries.sh did not produce {directory / binary}")
    return directory


def remove_orphaned_roots() -> None:
    """Data directories of sessions that were killed before they could clean up."""
    for root in Path(tempfile.gettempdir()).glob(f"{ROOT_PREFIX}*"):
        try:
            owner = int((root / OWNER_FILE).read_text())
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(root, ignore_errors=True)
        except (OSError, ValueError):
            continue  # not ours to judge: unreadable, or just being created


@dataclass
class ControlPlane:
    """One etcd and one kube-apiserver; ``start()`` returns when /readyz says ok."""

    bin_dir: Path
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix=ROOT_PREFIX)))
    token: str = field(default_factory=lambda: os.urandom(16).hex())
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    port: int = 0
    # user name -> (token, groups); every identity a component of the stack may use, fixed before start.
    identities: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    # name -> (arguments, environment) and the latest process of that name, for restarts.
    commands: dict[str, tuple[list[str], dict[str, str] | None]] = field(default_factory=dict)
    named: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # The address pods reach the API server on (a cluster of real nodes): it then serves on every address
    # of its namespace with a certificate of its own CA for that address and the ``kubernetes`` Service,
    # publishes itself as that Service's endpoint, and mounts service account tokens into pods.
    pod_address: str | None = None

    def identity(self, user: str, groups: tuple[str, ...] = ("system:masters",)) -> None:
        """Declare a client identity; the API server reads its token file once, at start."""
        if self.port:
            raise ControlPlaneError(f"identity {user} declared after the API server started")
        self.identities[user] = (os.urandom(16).hex(), groups)

    @property
    def audit_log(self) -> Path:
        """One JSON event per write, in the order the API server completed them."""
        return self.root / "audit.log"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        """The CA of the API server's serving certificate (its own self-signed chain, or the cluster's CA)."""
        if self.pod_address:
            return self.root / "certs" / "ca.crt"
        return self.root / "certs" / "apiserver.crt"

    @property
    def cluster_url(self) -> str:
        """The URL of the API server as a node sees it."""
        return f"https://{self.pod_address}:{self.port}" if self.pod_address else self.url

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    def start(self, timeout: float = 120.0) -> None:
        remove_orphaned_roots()
        (self.root / OWNER_FILE).write_text(str(os.getpid()))
        atexit.register(self.stop)
        try:
            etcd_url = self._start_etcd()
            self._start_apiserver(etcd_url)
            self._wait_ready(timeout)
            self._write_kubeconfig()
        except BaseException:
            self.stop()
            raise

    def spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start one process of the stack, logging to ``<root>/<name>.log``; it dies with this process.

        Started again under the same name (``restart``), it appends to the same log.
        """
        self.commands[name] = (args, env)
        with (self.root / f"{name}.log").open("ab") as log:
            process = spawn(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.root, env=env
            )
        self.processes.append(process)
        self.named[name] = process
        return process

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL, grace: float = 10.0) -> None:
        """Signal the process group of ``name``; SIGKILL after ``grace`` seconds (a fault, or half a restart)."""
        process = self.named[name]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def restart(self, name: str) -> subprocess.Popen[bytes]:
        """``name`` started again with its first arguments, on its data; the API server also waits for /readyz."""
        if self.named[name].poll() is None:
            self.kill(name, signal.SIGTERM)
        args, env = self.commands[name]
        process = self.spawn(name, args, env)
        if name == "kube-apiserver":
            self._wait_ready(120.0)
        return process

    def _start_etcd(self) -> str:
        client, peer = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
        self.spawn(
            "etcd",
            [
                str(self.bin_dir / "etcd"),
                "--name=sharddb-test",
                f"--data-dir={self.root / 'etcd'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=sharddb-test={peer_url}",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        return client_url

    def _start_apiserver(self, etcd_url: str) -> None:
        certs = self.root / "certs"
        certs.mkdir()
        key, public = certs / "sa.key", certs / "sa.pub"
        for command in (
            ["openssl", "genrsa", "-out", str(key), "2048"],
            ["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(public)],
        ):
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise ControlPlaneError(f"{' '.join(command[:2])} failed: {result.stderr.strip()}")
        tokens = self.root / "tokens.csv"
        lines = [f'{self.token},{ADMIN_USER},{ADMIN_USER},"system:masters"']
        lines += [f'{token},{user},{user},"{",".join(groups)}"' for user, (token, groups) in self.identities.items()]
        tokens.write_text("\n".join(lines) + "\n")
        policy = self.root / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        self.port = free_port()
        self.spawn(
            "kube-apiserver",
            [
                str(self.bin_dir / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                *self._serving_flags(certs),
                f"--secure-port={self.port}",
                f"--token-auth-file={tokens}",
                "--authorization-mode=RBAC",
                "--service-cluster-ip-range=10.0.0.0/20",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={public}",
                f"--service-account-signing-key-file={key}",
                "--enable-priority-and-fairness=false",
                # The kubelet's name resolves nowhere here; its address does (logs, exec).
                "--kubelet-preferred-address-types=InternalIP",
                "--profiling=false",
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                # Never rotated in a stack's life: 0 means 100 MB in 1.34 (kubernetes/kubernetes#136478), and a
                # fault campaign's log passes that; a reader of one file would miss what went before.
                f"--audit-log-maxsize={AUDIT_LOG_MAX_MB}",
                "--v=0",
            ],
        )

    def _serving_flags(self, certs: Path) -> list[str]:
        if not self.pod_address:
            return [
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--cert-dir={certs}",
                "--disable-admission-plugins=ServiceAccount",
                "--endpoint-reconciler-type=none",
            ]
        _serving_certificate(certs, self.pod_address)
        return [
            "--bind-address=0.0.0.0",
            f"--advertise-address={self.pod_address}",
            f"--tls-cert-file={certs / 'apiserver.crt'}",
            f"--tls-private-key-file={certs / 'apiserver.key'}",
            "--endpoint-reconciler-type=lease",
        ]

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            for name in ("etcd", "kube-apiserver"):
                process = self.named.get(name)
                if process is not None and process.poll() is not None:
                    raise ControlPlaneError(f"{name} exited ({process.returncode}):\n{self._tail()}")
            if self.ca_file.exists():
                try:
                    with self.client(timeout=2.0) as client:
                        response = client.get("/readyz")
                    if response.status_code == 200:
                        return
                    last = f"{response.status_code}: {response.text[-500:]}"
                except httpx.HTTPError as error:
                    last = repr(error)
            time.sleep(0.25)
        raise ControlPlaneError(f"kube-apiserver not ready after {timeout:.0f}s ({last}):\n{self._tail()}")

    def _tail(self, lines: int = 30) -> str:
        out = []
        for log in sorted(self.root.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    def client(self, user: str | None = None, *, timeout: float | httpx.Timeout = 30.0) -> ApiClient:
        """REST to this API server as ``user`` (a declared identity), or as the admin; the caller closes it."""
        token = self.token if user is None else self.identities[user][0]
        return ApiClient(self.url, token, self.ca_file, timeout=timeout)

    def kubectl(self, user: str | None = None) -> Kubectl:
        """kubectl against this API server as ``user`` (a declared identity), or as the admin."""
        return Kubectl(self.kubeconfig if user is None else self.kubeconfig_for(user))

    def get(self, path: str) -> Obj | None:
        """One object as the admin reads it, or None when the API server says 404."""
        with self.client(timeout=10.0) as client:
            return client.read(path)

    def apply(self, objects: list[dict[str, object]]) -> None:
        """Server-side apply as the admin; a refusal is an error with kubectl's words."""
        listed = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        result = self.kubectl().run("apply", "--server-side", "-f", "-", stdin=listed)
        if result.returncode != 0:
            raise ControlPlaneError(f"kubectl apply failed:\n{result.stderr}")

    def _write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(self.kubeconfig_text(ADMIN_USER, self.token))

    def kubeconfig_for(self, user: str, *, from_node: bool = False) -> Path:
        """A kubeconfig file for one declared identity (a component's own credentials), as seen on loopback
        or, ``from_node``, from a node of a cluster."""
        suffix = "-node" if from_node else ""
        target = self.root / f"kubeconfig-{user.replace(':', '-')}{suffix}"
        if not target.exists():
            server = self.cluster_url if from_node else self.url
            target.write_text(self.kubeconfig_text(user, self.identities[user][0], server))
        return target

    def kubeconfig_text(self, user: str, token: str, server: str | None = None) -> str:
        return "\n".join(
            [
                "apiVersion: v1",
                "kind: Config",
                "clusters:",
                "- name: sharddb-test",
                "  cluster:",
                f"    server: {server or self.url}",
                f"    certificate-authority: {self.ca_file}",
                "users:",
                f"- name: {user}",
                "  user:",
                f"    token: {token}",
                "contexts:",
                "- name: sharddb-test",
                "  context:",
                "    cluster: sharddb-test",
                f"    user: {user}",
                "current-context: sharddb-test",
                "",
            ]
        )

    def stop(self) -> None:
        """Kill every process group, wait for it, remove the data directory. Safe to call twice."""
        for process in reversed(self.processes):
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        self.processes.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _serving_certificate(certs: Path, address: str) -> None:
    """A CA and the API server's certificate for loopback, ``address`` and the ``kubernetes`` Service."""
    names = ["kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"]
    alt = ",".join([*(f"DNS:{n}" for n in names), "DNS:localhost", "IP:127.0.0.1", f"IP:{address}", "IP:10.0.0.1"])
    ca_key, ca, key, request, cert = (
        certs / n for n in ("ca.key", "ca.crt", "apiserver.key", "apiserver.csr", "apiserver.crt")
    )
    extensions = certs / "apiserver.ext"
    extensions.write_text(
        f"subjectAltName={alt}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n"
    )
    for command in (
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=sharddb-test-ca",
            "-keyout",
            str(ca_key),
            "-out",
            str(ca),
        ],
        [
            "openssl",
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=kube-apiserver",
            "-keyout",
            str(key),
            "-out",
            str(request),
        ],
        [
            "openssl",
            "x509",
            "-req",
            "-in",
            str(request),
            "-CA",
            str(ca),
            "-CAkey",
            str(ca_key),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            str(extensions),
            "-out",
            str(cert),
        ],
    ):
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ControlPlaneError(f"{' '.join(command[:2])} failed: {result.stderr.strip()}")


def start_plane(bin_dir: Path, attempts: int = 2, identities: tuple[str, ...] = ()) -> ControlPlane:
    """Start etcd and kube-apiserver; a second try covers a free port taken in between."""
    for attempt in range(1, attempts + 1):
        plane = ControlPlane(bin_dir)
        for user in identities:
            plane.identity(user)
        try:
            plane.start()
        except ControlPlaneError:
            if attempt == attempts:
                raise
            continue
        return plane
    raise AssertionError("unreachable")
