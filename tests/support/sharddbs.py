"""What the end-to-end tests do as a user would: create ShardDBs, read what the API server stores, wait.

Everything is read back from the API server (never from the hooks), so a test
asserts on what a user of the cluster would see.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from testbed.real.apiclient import events
from tests.support.kube import Kube, collection, error_message, path

Obj = dict[str, Any]
SPEC: Obj = {"shards": 3, "dbImage": "postgres:16", "cache": {"image": "redis:7", "replicas": 2}}


def wait_until(what: str, check: Callable[[], Any], timeout: float = 60.0, every: float = 0.2) -> Any:
    """Poll ``check`` until it returns something truthy; fail saying what was awaited and what was seen last."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {last!r}")


def condition(obj: Obj, kind: str) -> Obj:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def is_true(obj: Obj, kind: str) -> bool:
    return condition(obj, kind).get("status") == "True"


@dataclass
class ShardDBs:
    """The ShardDBs of one namespace, as a user drives them."""

    kube: Kube
    namespace: str

    def create(self, name: str, spec: Obj | None = None, labels: dict[str, str] | None = None) -> Obj:
        body: Obj = {
            "apiVersion": "mygroup.example.com/v1alpha1",
            "kind": "ShardDB",
            "metadata": {"name": name, "namespace": self.namespace, **({"labels": labels} if labels else {})},
            "spec": spec if spec is not None else SPEC,
        }
        response = self.kube.create(body)
        assert response.status_code == 201, error_message(response)
        result: Obj = response.json()
        return result

    def get(self, name: str) -> Obj:
        return self.kube.get("ShardDB", name, self.namespace)

    def patch(self, name: str, spec: Obj) -> httpx.Response:
        return self.kube.merge_patch("ShardDB", name, self.namespace, {"spec": spec})

    def delete(self, name: str) -> None:
        response = self.kube.http.delete(path("ShardDB", name, self.namespace))
        assert response.status_code in (200, 202), error_message(response)

    def exists(self, kind: str, name: str) -> bool:
        return self.kube.exists(kind, name, self.namespace)

    def child(self, kind: str, name: str) -> Obj:
        return self.kube.get(kind, name, self.namespace)

    def items(self, kind: str, selector: str = "") -> list[Obj]:
        params = {"labelSelector": selector} if selector else {}
        response = self.kube.http.get(collection(kind, self.namespace), params=params)
        response.raise_for_status()
        found: list[Obj] = response.json()["items"]
        return found

    def pods(self, name: str, component: str) -> list[Obj]:
        selector = f"app.kubernetes.io/instance={name},app.kubernetes.io/component={component}"
        return self.items("Pod", selector)

    def claims(self) -> list[Obj]:
        response = self.kube.http.get(f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims")
        response.raise_for_status()
        found: list[Obj] = response.json()["items"]
        return found

    # A bring-up takes 6 to 8 s here; this bound is several times that, so a bring-up that grows
    # much slower fails. It once stalled past 90 s, rarely: claims then had no class and the node
    # agent pre-bound a volume to each, so the scheduler rejected every new shard pod for its
    # unbound claim and could retry it only at its 5-minute sweep when its own volume cache saw the
    # binding late (kubernetes/kubernetes#73216). The agent now provisions as kind's default class
    # does (WaitForFirstConsumer): the scheduler picks the node and waits; no pod is rejected.
    AVAILABLE_SECONDS = 60.0

    def available(self, name: str, timeout: float = AVAILABLE_SECONDS) -> Obj:
        """Wait until Available=True for the current generation."""

        def check() -> Obj | None:
            obj = self.get(name)
            fresh = obj.get("status", {}).get("observedGeneration") == obj["metadata"]["generation"]
            return obj if fresh and is_true(obj, "Available") else None

        result: Obj = wait_until(f"{self.namespace}/{name} Available", check, timeout)
        return result

    def phase(self, name: str) -> str:
        return str(self.get(name).get("status", {}).get("phase", ""))

    def gone(self, name: str, timeout: float = 90.0) -> None:
        wait_until(f"{self.namespace}/{name} deleted", lambda: not self.exists("ShardDB", name), timeout)

    @contextmanager
    def history(self, name: str) -> Iterator[list[Obj]]:
        """Every version of the ShardDB the API server stores while the block runs (a watch, so nothing is missed)."""
        seen: list[Obj] = []
        stop = threading.Event()
        url = collection("ShardDB", self.namespace)
        params = {"watch": "1", "fieldSelector": f"metadata.name={name}", "timeoutSeconds": "600"}
        started = threading.Event()

        def follow() -> None:
            timeout = httpx.Timeout(30.0, read=None)
            try:
                with self.kube.http.stream("GET", url, params=params, timeout=timeout) as stream:
                    started.set()
                    for event in events(stream):
                        if stop.is_set():
                            return
                        if event["type"] in ("ADDED", "MODIFIED"):
                            seen.append(event["object"])
            except httpx.HTTPError:
                if not stop.is_set():
                    raise

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        started.wait(10)
        try:
            yield seen
        finally:
            stop.set()


@dataclass
class Costs:
    """Metacontroller's writes per test, printed at the end of the session."""

    rows: list[tuple[str, int, str]] = field(default_factory=list)
