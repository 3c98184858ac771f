"""An install of the product on the cluster, made and removed with the README's steps, and what tests read of it."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testbed.images import workloads
from testbed.real.audit import Write
from testbed.stack import Stack

from ..support.sharddbs import wait_until
from .steps import ROOT, Step, deploy_steps, run_step

Obj = dict[str, Any]
# metacontroller_<hook>_requests_total{code="200",method="post"} 12 (its HTTP client's counter).
_HOOK_CALLS = re.compile(
    r'^metacontroller_(?P<hook>[a-z]+)_requests_total\{(?=[^}]*code="(?P<code>[0-9a-z]+)")[^}]*\} (?P<value>[0-9.e+]+)$'
)
HOOKS_NAMESPACE = "sharddb-system"
METACONTROLLER_NAMESPACE = "metacontroller"
FINISHED = ("Succeeded", "Failed")  # a pod in either phase runs nothing and counts as no replica
EXAMPLE = ROOT / "examples" / "sharddb.yaml"
# The example names postgres:16 and redis:7; the test images are Debian bookworm's PostgreSQL 15 and Redis 7.0.
IMAGES = {"postgres:16": workloads.POSTGRES, "redis:7": workloads.REDIS}


def example_on_test_images(target: Path) -> Path:
    """``examples/sharddb.yaml`` with only its two image names swapped for the test images (and a password)."""
    documents = [copy.deepcopy(doc) for doc in yaml.safe_load_all(EXAMPLE.read_text()) if doc]
    for doc in documents:
        if doc["kind"] == "Secret":
            doc["stringData"] = dict.fromkeys(doc.get("stringData", {}), "installed-tier-password")
        if doc["kind"] == "ShardDB":
            doc["spec"]["dbImage"] = IMAGES[doc["spec"]["dbImage"]]
            doc["spec"]["cache"]["image"] = IMAGES[doc["spec"]["cache"]["image"]]
    target.write_text(yaml.safe_dump_all(documents))
    return target


@dataclass
class Install:
    """One overlay installed on the stack's cluster by the README's steps, run from ``workdir``."""

    stack: Stack
    overlay: str
    workdir: Path
    metacontroller_manifests: Path

    @property
    def env(self) -> dict[str, str]:
        return {
            "METACONTROLLER_MANIFESTS": str(self.metacontroller_manifests),
            "OVERLAY": self.overlay,
            "EXAMPLE": str(example_on_test_images(self.workdir / "sharddb.yaml")),
        }

    def step(self, name: str, timeout: float = 600.0) -> str:
        return self.run(deploy_steps()[name], timeout)

    def run(self, step: Step, timeout: float = 600.0) -> str:
        """A step of a page, as a user runs it from a clone against this cluster; what it printed."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        return run_step(
            step,
            kubeconfig=self.stack.control_plane.kubeconfig,
            workdir=self.workdir,
            env=self.env,
            timeout=timeout,
        )

    def install(self) -> None:
        if not self.kubectl("get", "statefulset", "-n", METACONTROLLER_NAMESPACE, "metacontroller", check=False):
            self.step("metacontroller")
        if self.overlay != "dev":
            self.step("secrets")
        self.step("overlay")

    def settled(self) -> Install:
        """The hooks back to every replica Ready (after a module that drained or lost a node)."""
        self.kubectl("-n", HOOKS_NAMESPACE, "rollout", "status", "deployment/sharddb-hooks", "--timeout=5m")
        return self

    def uninstall(self) -> None:
        """What a user runs to remove an overlay: its objects, then the namespace's Secrets with it."""
        self.kubectl("delete", "-k", str(ROOT / "metacontroller" / "overlays" / self.overlay), "--wait", "--timeout=5m")

    # --- reading -------------------------------------------------------------------

    def kubectl(self, *args: str, check: bool = True, stdin: str | None = None) -> str:
        result = self.stack.kubectl(*args, stdin=stdin)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
        return result.stdout if result.returncode == 0 else ""

    def get(self, *args: str) -> Obj:
        found: Obj = json.loads(self.kubectl("get", *args, "-o", "json"))
        return found

    def pods(self, namespace: str, selector: str) -> list[Obj]:
        items: list[Obj] = self.get("pods", "-n", namespace, "-l", selector)["items"]
        return items

    def active_pods(self, namespace: str, selector: str) -> list[Obj]:
        """The pods a controller counts as its replicas: not finished. A kubelet that rejects a pod at admission
        leaves it Failed, and its ReplicaSet or StatefulSet makes another (seen: a hooks pod bound to a node just
        cleared of its out-of-service taint, rejected by a kubelet that had not yet seen the taint go)."""
        return [p for p in self.pods(namespace, selector) if p.get("status", {}).get("phase") not in FINISHED]

    def controller_node(self) -> str:
        """The node that runs Metacontroller's pod."""
        pod = self.active_pods(METACONTROLLER_NAMESPACE, "app.kubernetes.io/name=metacontroller")[0]
        node: str = pod["spec"]["nodeName"]
        return node

    def node_ready(self, node: str) -> str:
        """The status of the node's ``Ready`` condition (``True``, ``False`` or ``Unknown``)."""
        found = self.get("node", node)
        status: str = next(c["status"] for c in found["status"]["conditions"] if c["type"] == "Ready")
        return status

    def available(self, namespace: str, name: str) -> bool:
        """Whether the ShardDB's ``Available`` condition is True."""
        found = self.get("sharddb", "-n", namespace, name)
        conditions = found.get("status", {}).get("conditions", [])
        return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)

    def hooks_pods(self) -> list[Obj]:
        return self.active_pods(HOOKS_NAMESPACE, "app.kubernetes.io/name=sharddb-hooks")

    def events(self, namespace: str, reason: str) -> list[Obj]:
        items: list[Obj] = self.get("events", "-n", namespace)["items"]
        return [event for event in items if event.get("reason") == reason]

    def run_pod(
        self, name: str, namespace: str, script: str, timeout: float = 60.0, labels: dict[str, str] | None = None
    ) -> tuple[str, str]:
        """A pod of the test images (with ``labels``) that runs ``script`` once; its phase and its log."""
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "probe", "image": workloads.POSTGRES, "command": ["bash", "-c", script]}],
            },
        }
        self.kubectl("apply", "-f", "-", stdin=json.dumps(pod))

        def finished() -> str | None:
            phase = self.get("pod", "-n", namespace, name).get("status", {}).get("phase")
            return phase if phase in ("Succeeded", "Failed") else None

        phase: str = wait_until(f"pod {namespace}/{name} to finish", finished, timeout=timeout)
        log = self.kubectl("logs", "-n", namespace, name)
        self.kubectl("delete", "pod", "-n", namespace, name, "--wait=false")
        return phase, log

    def hook_calls(self) -> dict[str, float]:
        """Metacontroller's count of hook calls answered, by hook and status code, from its own metrics."""
        raw = self.kubectl(
            "get", "--raw", f"/api/v1/namespaces/{METACONTROLLER_NAMESPACE}/pods/metacontroller-0:9999/proxy/metrics"
        )
        counts: dict[str, float] = {}
        for line in raw.splitlines():
            match = _HOOK_CALLS.match(line)
            if match:
                key = f"{match['hook']} {match['code']}"
                counts[key] = counts.get(key, 0.0) + float(match["value"])
        return counts


def failed_calls(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Hook calls answered with neither 200 nor 304 between two readings."""
    return {
        key: after[key] - before.get(key, 0.0)
        for key in after
        if not key.endswith((" 200", " 304")) and after[key] > before.get(key, 0.0)
    }


def nodes_of(pods: list[Obj]) -> list[str]:
    return sorted(pod["spec"].get("nodeName", "") for pod in pods)


def cache_gone_before_shards(writes: list[Write], name: str) -> tuple[list[float], list[float]]:
    """From the audit log: when a kubelet removed each cache pod, and when each shard pod was marked for deletion."""
    cache_gone = [
        w.at.timestamp()
        for w in writes
        if w.user.startswith("system:node:") and w.verb == "delete" and w.name.startswith(f"{name}-cache-")
    ]
    marked = [
        w.at.timestamp()
        for w in writes
        if w.resource == "pods"
        and w.verb == "delete"
        and not w.user.startswith("system:node:")
        and w.name.startswith(f"{name}-db-")
    ]
    return cache_gone, marked


def assert_cache_gone_before_shards(install: Install, mark: int, namespace: str, name: str) -> None:
    """The order of a deletion, from the audit log since ``mark``: no shard pod stopped while a cache pod existed."""
    cache_gone, marked = cache_gone_before_shards(install.stack.audit.since(mark, namespace=namespace), name)
    assert cache_gone, "no cache pod was removed by a kubelet"
    assert marked, "no shard pod was stopped"
    assert max(cache_gone) < min(marked), "a shard began to stop while a cache pod was still there"
