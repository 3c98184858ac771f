"""What the data tests do as a user of the cluster would: apply an example, run SQL and cache commands, read logs.

Everything goes through the API server (``kubectl exec``, pod logs, events), so a
test sees what a user of a real cluster sees.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import yaml

from testbed.real.realnode import NodeSpec
from testbed.stack import Stack

from ..support.examples import PASSWORD
from ..support.kube import Kube
from ..support.sharddbs import wait_until

Obj = dict[str, Any]


def assert_cache_gone_before_shards(stack: Stack, namespace: str, name: str, mark: int) -> None:
    """From the audit log: the kubelet's last delete of a cache pod precedes the first shard pod marked for deletion."""
    log = stack.audit.since(mark, namespace=namespace)
    cache_gone = [
        w.at for w in log if w.user == NodeSpec(1).user and w.verb == "delete" and w.name.startswith(f"{name}-cache-")
    ]
    marked = [w.at for w in log if w.resource == "pods" and w.verb == "delete" and w.name.startswith(f"{name}-db-")]
    assert cache_gone, "no cache pod was removed by the kubelet"
    assert marked, "no shard pod was stopped"
    assert max(cache_gone) < min(marked), "a shard began to stop while a cache pod was still there"


@dataclass
class Cluster:
    """One namespace of the real cluster, seen through kubectl and the API server."""

    stack: Stack
    kube: Kube
    namespace: str

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        result = self.stack.kubectl("-n", self.namespace, *args, stdin=stdin)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
        return result.stdout

    def apply(self, objects: list[Obj]) -> None:
        self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

    def exec(self, pod: str, container: str, *command: str) -> str:
        return self.kubectl("exec", pod, "-c", container, "--", *command)

    def sql(self, pod: str, statement: str) -> str:
        """One statement in a shard pod, as the image's superuser over its local socket."""
        return self.exec(
            pod, "db", "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-c", statement
        ).strip()

    def logs(self, pod: str, container: str, previous: bool = False) -> str:
        params = {"container": container, **({"previous": "true"} if previous else {})}
        response = self.kube.http.get(f"/api/v1/namespaces/{self.namespace}/pods/{pod}/log", params=params)
        response.raise_for_status()
        return response.text

    def events(self, reason: str) -> list[Obj]:
        response = self.kube.http.get(f"/api/v1/namespaces/{self.namespace}/events")
        response.raise_for_status()
        return [event for event in response.json()["items"] if event.get("reason") == reason]

    def events_of(self, kind: str) -> list[Obj]:
        """Events about objects of one kind in the namespace (Metacontroller's, for a ShardDB)."""
        response = self.kube.http.get(f"/api/v1/namespaces/{self.namespace}/events")
        response.raise_for_status()
        return [event for event in response.json()["items"] if event.get("involvedObject", {}).get("kind") == kind]

    def pod(self, name: str) -> Obj | None:
        response = self.kube.http.get(f"/api/v1/namespaces/{self.namespace}/pods/{name}")
        if response.status_code == 404:
            return None
        response.raise_for_status()
        found: Obj = response.json()
        return found

    def ready(self, name: str, timeout: float = 120.0) -> Obj:
        def check() -> Obj | None:
            pod = self.pod(name)
            conditions = (pod or {}).get("status", {}).get("conditions", [])
            return pod if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) else None

        found: Obj = wait_until(f"pod {self.namespace}/{name} Ready", check, timeout, every=0.5)
        return found

    def client(self, name: str, image: str, script: str, env: dict[str, str] | None = None, shell: str = "sh") -> None:
        """A pod of the user's own beside the ShardDB, running ``script`` in the image's ``shell``.

        Its environment is ``env``, else ``PGPASSWORD`` for the PostgreSQL clients.
        """
        variables = {"PGPASSWORD": PASSWORD} if env is None else env
        self.apply(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": self.namespace},
                    "spec": {
                        "restartPolicy": "Never",
                        "terminationGracePeriodSeconds": 1,
                        "securityContext": {"runAsNonRoot": True, "runAsUser": 999, "runAsGroup": 999},
                        "containers": [
                            {
                                "name": "client",
                                "image": image,
                                "command": [shell, "-c", script],
                                "env": [{"name": key, "value": value} for key, value in variables.items()],
                            }
                        ],
                    },
                }
            ]
        )

    @contextmanager
    def following(self, pods: list[str], container: str) -> Iterator[dict[str, list[str]]]:
        """Each pod's log lines as the kubelet streams them, until its container stops (or the block ends)."""
        lines: dict[str, list[str]] = {pod: [] for pod in pods}
        threads = []
        for pod in pods:
            url = f"/api/v1/namespaces/{self.namespace}/pods/{pod}/log"
            params = {"container": container, "follow": "true", "sinceSeconds": "1"}

            def follow(url: str = url, params: dict[str, str] = params, into: list[str] = lines[pod]) -> None:
                try:
                    with self.kube.http.stream("GET", url, params=params, timeout=httpx.Timeout(30.0, read=None)) as s:
                        for line in s.iter_lines():
                            into.append(line)
                except httpx.HTTPError:
                    return

            thread = threading.Thread(target=follow, daemon=True)
            thread.start()
            threads.append(thread)
        try:
            yield lines
        finally:
            for thread in threads:
                thread.join(timeout=30)
