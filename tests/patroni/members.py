"""Patroni members in real containers (podman on runc), talking to the real API server as the hooks' ServiceAccount.

What Kubernetes would give each member pod, given here: the hooks' rendered configuration as the
file ``PATRONI_CONFIG_FILE`` names, the env ``hooks.replication.template.patroni_env`` renders with its
downward-API fields filled in, a ServiceAccount token and the API server's CA where a pod has them,
``KUBERNETES_SERVICE_HOST``/``PORT``, a Pod object of the member's name and labels for Patroni to
label, and the restricted Pod Security shape (read-only root, no capabilities, the image's user).

The members share the host's network, each on a loopback address of its own standing in for its
pod IP: the rendered listen addresses (every address) are narrowed to it, the one change the
rendered configuration needs here.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hooks import names
from hooks.names import shard_name
from hooks.replication import config as patroni_config
from hooks.replication import objects as patroni_objects
from hooks.replication import template as member_pods
from hooks.replication import tls
from testbed.real.apiclient import ApiClient
from testbed.real.machine import podman_runtime
from tools.image.builders import ulimits_below_own

from ..support.kube import Kube
from ..support.replication import members

Obj = dict[str, Any]
SECRETS_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SOCKET_DIR = "/var/run/postgresql"
# Every credential a member needs (``shape.CREDENTIALS``), as the user's Secret would give them.
PASSWORDS = {
    "PATRONI_SUPERUSER_PASSWORD": "super-secret",
    "PATRONI_REPLICATION_PASSWORD": "replica-secret",
    "PATRONI_RESTAPI_USERNAME": "patroni",
    "PATRONI_RESTAPI_PASSWORD": "restapi-secret",
}
LOCAL_CLIENT = "127.0.0.1"  # where a connection to a member's loopback address comes from
DB_PORT = 5432  # the hooks' default spec.db.port: every member listens on it, at its own address


class PodmanError(RuntimeError):
    """podman could not do what a member needs; the message carries podman's own words, ``stdout`` the command's."""

    def __init__(self, message: str, stdout: str = "") -> None:
        super().__init__(message)
        self.stdout = stdout


def full_priority() -> tuple[str, ...]:
    """A command prefix that runs at priority 0 from a tier niced below it, for the containers whose timing a test
    measures.

    make test runs this tier at nice 10, so that the tiers beside it, whose outages are measured, keep the CPU;
    its containers inherit that. Beside the data tier, a prober writing every 20 ms at nice 10 went silent for
    0.251 and 0.258 s (its members answering as slowly), past the quarter second the two-primaries check needs.
    At full priority it still missed twice (0.293 s, 0.298 s): the prober started ``sleep`` between tries, read
    from disk when the page cache had let it go, which heavy writeback beside it stalled (3.1 s, reproduced); its
    loop now runs builtins only (``tests/support/writable.py``). Only root may raise a priority; elsewhere nothing
    changes.
    """
    niced = os.nice(0)
    return ("nice", "-n", str(-niced)) if niced > 0 and os.geteuid() == 0 else ()


def podman(*args: str, timeout: float = 120.0, prefix: tuple[str, ...] = ()) -> str:
    """One podman command on runc (after ``prefix``, such as ``full_priority()``); its stdout, or PodmanError with
    its stderr."""
    done = subprocess.run(
        [*prefix, "podman", "--runtime", podman_runtime(), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise PodmanError(
            f"podman {' '.join(args[:2])} failed (exit {done.returncode}): {done.stderr.strip()}", done.stdout
        )
    return done.stdout


def load(archive: Path, name: str) -> str:
    """The archive's image in podman's store under ``name`` (an OCI layout, or a docker archive).

    An OCI layout may name one image under several refs (the test images' rollout ref): podman then asks
    which, so the pull names it by ``name``'s tag, the layout's ``org.opencontainers.image.ref.name``.
    An older image of that name (an archive built before a change) is removed, so none piles up unnamed.
    """
    before = _image_id(name)
    if _is_oci(archive):
        podman("pull", "-q", f"oci-archive:{archive}:{name.rsplit(':', 1)[-1]}", timeout=600.0)
    else:
        podman("load", "-q", "-i", str(archive), timeout=600.0)
    try:
        podman("image", "exists", name)
    except PodmanError:
        raise PodmanError(f"{archive} holds no image {name}: remove it, then python -m tools.image.patroni") from None
    if before and before != _image_id(name):
        subprocess.run(["podman", "rmi", before], capture_output=True, check=False)
    return name


def _image_id(name: str) -> str:
    done = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", name], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def _is_oci(archive: Path) -> bool:
    listed = subprocess.run(["tar", "-tf", str(archive), "oci-layout"], capture_output=True, check=False)
    return listed.returncode == 0


def pod_address() -> str:
    """A loopback address of its own on which the PostgreSQL and Patroni ports are free: a member's 'pod IP'."""
    for _ in range(50):
        address = str(ipaddress.IPv4Address("127.0.0.0") + random.randint(2 << 16, 250 << 16))
        if all(_free(address, port) for port in (patroni_config.PATRONI_PORT, DB_PORT)):
            return address
    raise PodmanError("no loopback address with ports 5432 and 8008 free in 50 tries")


def _free(address: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class Shard:
    """One shard's members' shared parts: the API server's namespace, RBAC and token, and the rendered config."""

    kube: Kube
    namespace: str
    parent: str
    api_port: int
    folder: Path  # patroni.yml, and secrets/ (token, ca.crt)
    image: str

    @property
    def scope(self) -> str:
        return shard_name(self.parent, 0)

    def configmap(self, suffix: str) -> Obj | None:
        """Patroni's ``<scope>-<suffix>`` ConfigMap, or None while it has not written it."""
        return self.kube.http.read(f"/api/v1/namespaces/{self.namespace}/configmaps/{self.scope}-{suffix}")

    def holder(self, suffix: str, key: str = "leader") -> str | None:
        """The member an annotation of ``<scope>-<suffix>`` names (``leader``, or ``sync_standby`` of -sync)."""
        found = self.configmap(suffix)
        annotations: dict[str, str] = (found or {}).get("metadata", {}).get("annotations") or {}
        return annotations.get(key)

    def pod(self, name: str) -> Obj:
        return self.kube.get("Pod", name, self.namespace)

    def promotable(self, standby: str) -> bool:
        """``standby`` is one Patroni would promote were its leader lost: ``<scope>-sync`` names it, and so does the
        leader's failsafe topology (the ``failsafe`` annotation of ``<scope>-leader``, rewritten each leader loop).

        With failsafe mode on, a member missing from that topology silently leaves the leader race ("not the
        healthiest node"): a standby named synchronous a moment ago, before the leader's next loop wrote it there,
        is never promoted if the leader is lost in between (seen: this tier's rejoin beside the installed tier)."""
        if self.holder("sync", "sync_standby") != standby:
            return False
        topology = self.holder("leader", "failsafe")
        return bool(topology) and standby in json.loads(topology or "{}")

    def as_members(self) -> ApiClient:
        """The API server as the members see it: their ServiceAccount's token; the caller closes it."""
        return ApiClient(self.kube.url, (self.folder / "secrets" / "token").read_text(), self.kube.ca_file)


def prepare(
    kube: Kube,
    namespace: str,
    parent: str,
    api_port: int,
    ca_file: Path,
    folder: Path,
    image: str,
    strict: bool = False,
) -> Shard:
    """The hooks' ServiceAccount, Role (as rendered for one shard of up to three members) and RoleBinding, a token of
    that account, the config (synchronous; strict as ``spec.replication.strict`` asks)."""
    spec = members(2)
    for obj in (
        patroni_objects.service_account(parent),
        patroni_objects.role(parent, 1, names.MAX_MEMBERS),
        patroni_objects.role_binding(parent, namespace, spec),
    ):
        response = kube.create(obj, namespace)
        assert response.status_code == 201, response.text
    account = names.account_name(parent)
    request = {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "spec": {"expirationSeconds": 3600}}
    url = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    response = kube.http.post(url, json=request)
    response.raise_for_status()
    secrets = folder / "secrets"
    secrets.mkdir(parents=True)
    (secrets / "token").write_text(response.json()["status"]["token"])
    shutil.copyfile(ca_file, secrets / "ca.crt")
    config = patroni_config.PatroniConfig(parent, 0, spec.db.port, spec.db.data_path, synchronous=True, strict=strict)
    (folder / patroni_config.CONFIG_FILE).write_text(config.as_text())
    for path in (secrets, folder):
        path.chmod(0o755)
    for path in (secrets / "token", secrets / "ca.crt", folder / patroni_config.CONFIG_FILE):
        path.chmod(0o644)
    return Shard(kube, namespace, parent, api_port, folder, image)


def member_env(shard: Shard, name: str, address: str) -> dict[str, str]:
    """``patroni_env`` as a pod would have it (fields filled, ``$(VAR)`` expanded), the passwords, the API server."""
    fields = {"metadata.name": name, "metadata.namespace": shard.namespace, "status.podIP": address}
    env: dict[str, str] = {}
    for var in member_pods.patroni_env(DB_PORT):
        if "value" in var:
            env[var["name"]] = re.sub(r"\$\((\w+)\)", lambda found: env[found.group(1)], var["value"])
        else:
            env[var["name"]] = fields[var["valueFrom"]["fieldRef"]["fieldPath"]]
    return {
        **env,
        **PASSWORDS,
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(shard.api_port),
        # The pod's own address in place of every address (the host's network is shared here).
        "PATRONI_POSTGRESQL_LISTEN": f"{address}:{DB_PORT}",
        "PATRONI_RESTAPI_LISTEN": f"{address}:{patroni_config.PATRONI_PORT}",
        # Every local client comes from the host's loopback address here (patronictl in a member too);
        # in a pod, patronictl calls from the member's own address, which the members' allowlist holds.
        "PATRONI_RESTAPI_ALLOWLIST": f"['{LOCAL_CLIENT}']",
    }


class Member:
    """One member: its Pod object in the API server and its container; ``remove()`` takes the container away."""

    def __init__(
        self,
        shard: Shard,
        index: int,
        container: str,
        env: dict[str, str] | None = None,
        config: Path | None = None,
        mounts: dict[Path, str] | None = None,
        measured: bool = False,
    ) -> None:
        """``env`` is added to ``member_env``'s: what a user's ``spec.db.env`` would add to the pod's; ``config`` is
        the member's own Patroni configuration instead of the shard's (a member of another release); ``mounts``,
        folders mounted read-only where a pod's Secret volumes would be; ``measured``: its answers are timed, so it
        runs at full priority (``full_priority``)."""
        self.shard = shard
        self.prefix = full_priority() if measured else ()
        self.mounts = mounts or {}
        self.name = f"{shard.scope}-{index}"
        self.container = container
        self.address = pod_address()
        self.config = config or shard.folder / patroni_config.CONFIG_FILE
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "labels": member_pods.member_selector(shard.parent, 0)},
            "spec": {"containers": [{"name": "db", "image": shard.image}]},
        }
        response = shard.kube.create(pod, shard.namespace)
        assert response.status_code == 201, response.text
        self.tls = shard.folder / f"tls-{index}"  # what the pod's memory-backed emptyDir gives the member
        try:
            self._make_tls()
            self._run({**member_env(shard, self.name, self.address), **(env or {})})
        except PodmanError:
            self.remove()  # a container that runc could not start is left created
            raise

    def _make_tls(self) -> None:
        """The rendered init container: its very command, in the member's image, with the pod's restrictions."""
        shutil.rmtree(self.tls, ignore_errors=True)  # each pod has an emptyDir of its own
        self.tls.mkdir()
        self.tls.chmod(0o777)  # as an emptyDir is made
        init = tls.init_container({"image": self.shard.image})
        values = {var["name"]: self.name for var in init["env"]}  # metadata.name, the one field it reads
        command = [re.sub(r"\$\((\w+)\)", lambda found: values[found.group(1)], arg) for arg in init["command"]]
        podman(
            "run",
            "--rm",
            "--pull",
            "never",
            "--network",
            "none",
            "--read-only",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            *ulimits_below_own(),
            "--volume",
            f"{self.tls}:{tls.DIRECTORY}",
            "--entrypoint",
            json.dumps(command),
            self.shard.image,
        )

    def _run(self, env: dict[str, str]) -> None:
        shard, container, config = self.shard, self.container, self.config
        podman(
            "run",
            "--detach",
            "--pull",
            "never",
            "--name",
            container,
            "--network",
            "host",
            # A read-only root with podman's writable /run (the socket's folder, kept as the image has it),
            # /tmp and the data folder as tmpfs: what an emptyDir and the volume claim give a pod.
            "--read-only",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            *ulimits_below_own(),
            "--tmpfs",
            "/tmp:mode=1777",
            "--tmpfs",
            "/var/lib/postgresql/data:mode=1777",
            "--volume",
            f"{config}:{patroni_config.CONFIG_DIR}/{patroni_config.CONFIG_FILE}:ro",
            "--volume",
            f"{shard.folder / 'secrets'}:{SECRETS_DIR}:ro",
            "--volume",
            f"{self.tls}:{tls.DIRECTORY}:ro",
            *(arg for folder, target in self.mounts.items() for arg in ("--volume", f"{folder}:{target}:ro")),
            *(arg for name, value in env.items() for arg in ("--env", f"{name}={value}")),
            shard.image,
            prefix=self.prefix,
        )

    def logs(self, lines: int = 40) -> str:
        """The container's last ``lines`` lines: Patroni's log and its children's stderr (pg_basebackup's)."""
        done = subprocess.run(["podman", "logs", "--tail", str(lines), self.container], capture_output=True, text=True)
        return done.stdout + done.stderr

    def running(self) -> bool:
        """Whether the container's process still runs (Patroni exits after a bootstrap it could not finish)."""
        return podman("inspect", "--format", "{{.State.Running}}", self.container).strip() == "true"

    def sql(self, statement: str) -> str:
        """``psql`` as the superuser on the member's own socket (trust there, as the rendered pg_hba says)."""
        return podman(
            "exec", self.container, "psql", "-h", SOCKET_DIR, "-p", str(DB_PORT), "-U", "postgres", "-XqAtc", statement
        ).strip()

    def streams_to(self, standby: str) -> str:
        """Whether ``standby``'s own replication session here is encrypted: "t", "f", or "" while it has none.

        Filtered by name and state: while a standby clones, ``pg_basebackup``'s sessions are replication sessions too.
        """
        return self.sql(
            "SELECT s.ssl FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid)"
            f" WHERE r.application_name = '{standby}' AND r.state = 'streaming'"
        )

    def patronictl(self, *args: str) -> str:
        """``patronictl`` in the member's container, on the configuration file the pod mounts, as a runbook runs it."""
        config = f"{patroni_config.CONFIG_DIR}/{patroni_config.CONFIG_FILE}"
        return podman("exec", self.container, "patronictl", "-c", config, *args, timeout=180.0)

    def lsn(self, function: str) -> int:
        """A WAL position PostgreSQL reports (``pg_current_wal_flush_lsn``, ...), in bytes as Patroni writes it."""
        return int(self.sql(f"SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.{function}(), '0/0')::bigint"))

    def remove(self) -> None:
        subprocess.run(["podman", "rm", "--force", "--time", "10", self.container], capture_output=True, check=False)


def start_member(
    shard: Shard,
    index: int,
    env: dict[str, str] | None = None,
    config: Path | None = None,
    mounts: dict[Path, str] | None = None,
    *,
    measured: bool = False,
) -> Member:
    """Member ``index`` of the shard in a container named for this run and namespace, ``env`` added to its own."""
    name = f"sharddb-patroni-{os.getpid()}-{shard.namespace}-{index}"
    return Member(shard, index, name, env, config, mounts, measured)


def wait_for(what: str, check: Callable[[], bool], members: list[Member], timeout: float = 300.0) -> None:
    """Poll ``check`` until true; else fail with what was awaited and each member's last log lines.

    Seconds when the machine is idle; the long bound is for a run beside the installed tier, which keeps both
    cores busy while this tier yields the CPU to it.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(1.0)
    logs = "\n".join(f"--- {member.name}\n{member.logs()}" for member in members)
    raise AssertionError(f"not within {timeout:.0f}s: {what}\n{logs}")
