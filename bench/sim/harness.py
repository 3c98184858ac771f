"""One namespace of a fleet: the user, Metacontroller and the simulated cluster around one hook server.

Everything in a harness watches only its own namespace, so a run never sees the
ShardDBs of an earlier one, and several runs can share one API server.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx
import yaml

from .api import Api, Endpoint, Obj, collection
from .cluster import Cluster, Timings
from .informers import Informers
from .metacontroller import PARENT, CompositeController, LoopSettings, Metacontroller, Tally

ROOT = Path(__file__).resolve().parents[2]
COMPOSITE_CONTROLLER = Path("metacontroller", "base", "compositecontroller.yaml")
EXAMPLE = ROOT / "examples" / "sharddb.yaml"
# What the simulated cluster reads, plus whatever children the CompositeController lists.
CLUSTER_KINDS = ("Service", "StatefulSet", "Deployment", "Job", "PodDisruptionBudget", "Pod", "EndpointSlice")


def example_spec() -> Obj:
    """The spec of ``examples/sharddb.yaml``: 3 shards, 2 cache replicas, every field spelled out."""
    for doc in yaml.safe_load_all(EXAMPLE.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == PARENT:
            spec: Obj = doc["spec"]
            return spec
    raise RuntimeError(f"no ShardDB in {EXAMPLE}")


def composite_controller(source: Path = ROOT) -> CompositeController:
    """The CompositeController manifest of the code version in ``source``."""
    manifest: Obj = yaml.safe_load((source / COMPOSITE_CONTROLLER).read_text())
    return CompositeController(manifest)


def available(parent: Obj | None) -> bool:
    """Available for the current spec: the status answers this generation and says so."""
    if parent is None:
        return False
    status: dict[str, Any] = parent.get("status") or {}
    if status.get("observedGeneration") != parent["metadata"].get("generation"):
        return False
    if status.get("phase", "Available") != "Available":
        return False
    conditions = status.get("conditions") or []
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)


def install_crd(endpoint: Endpoint, crd_file: Path, timeout: float = 60.0) -> None:
    """Create the CRD and wait until ShardDBs are served (Established and listable)."""
    crd: Obj = yaml.safe_load(crd_file.read_text())
    headers = {"Authorization": f"Bearer {endpoint.token}"}
    verify = ssl.create_default_context(cafile=str(endpoint.ca_file))
    with httpx.Client(base_url=endpoint.url, headers=headers, verify=verify, timeout=30.0) as http:
        response = http.post(collection("CustomResourceDefinition"), json=crd)
        if response.status_code not in (201, 409):
            raise RuntimeError(f"CRD not accepted: {response.status_code} {response.text[:500]}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if http.get(collection(PARENT)).status_code == 200:
                return
            time.sleep(0.2)
    raise RuntimeError(f"ShardDBs not served {timeout:.0f}s after the CRD was created")


class Harness:
    """Start with ``async with``; ``create`` and ``scale`` act as the user; ``counts`` is Metacontroller's tally."""

    def __init__(
        self,
        endpoint: Endpoint,
        namespace: str,
        hooks_url: str,
        settings: LoopSettings | None = None,
        timings: Timings | None = None,
        source: Path = ROOT,
    ) -> None:
        settings, timings = settings or LoopSettings(), timings or Timings()
        controller = composite_controller(source)
        self.namespace = namespace
        self.user = Api(endpoint)
        self._apis = [self.user, Api(endpoint), Api(endpoint), Api(endpoint)]
        kinds = dict.fromkeys([PARENT, *(child.kind for child in controller.children), *CLUSTER_KINDS])
        self.informers = Informers(self._apis[1], namespace, kinds)
        store = self.informers.store
        self.metacontroller = Metacontroller(self._apis[2], store, hooks_url, controller, settings)
        self.cluster = Cluster(self._apis[3], store, namespace, timings)
        self.informers.handlers += [self.metacontroller.on_event, self.cluster.on_event]

    async def __aenter__(self) -> Harness:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        response = await self.user.create(namespace)
        if response.status_code not in (201, 409):
            raise RuntimeError(f"namespace {self.namespace}: {response.status_code} {response.text[:300]}")
        await self.informers.start()
        self.metacontroller.start()
        self.cluster.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.metacontroller.stop()
        await self.cluster.stop()
        await self.informers.stop()
        for api in self._apis:
            await api.close()

    # --- the user -------------------------------------------------------------------

    async def create(self, names: Iterable[str], spec: Obj) -> None:
        """``kubectl apply`` of one ShardDB per name, all at once."""

        async def one(name: str) -> None:
            parent = {
                "apiVersion": "mygroup.example.com/v1alpha1",
                "kind": PARENT,
                "metadata": {"name": name, "namespace": self.namespace},
                "spec": copy.deepcopy(spec),
            }
            response = await self.user.create(parent)
            if response.status_code != 201:
                raise RuntimeError(f"create ShardDB {name}: {response.status_code} {response.text[:300]}")

        await asyncio.gather(*(one(name) for name in names))

    async def scale(self, name: str, shards: int) -> None:
        response = await self.user.merge_patch(PARENT, name, self.namespace, {"spec": {"shards": shards}})
        if response.status_code != 200:
            raise RuntimeError(f"scale ShardDB {name}: {response.status_code} {response.text[:300]}")

    # --- watching the outcome ----------------------------------------------------------

    def phase(self, name: str) -> str:
        """The phase in the stored status ("" before the first status write)."""
        parent = self.informers.store.get(PARENT, name) or {}
        return str((parent.get("status") or {}).get("phase", ""))

    def is_available(self, name: str, shards: int | None = None) -> bool:
        parent = self.informers.store.get(PARENT, name)
        if not available(parent) or parent is None:
            return False
        return shards is None or (parent.get("status") or {}).get("readyShards", shards) >= shards

    async def wait_available(self, names: list[str], timeout: float, shards: int | None = None) -> None:
        """Until every named ShardDB is Available at once; a timeout names the ones that are not."""
        deadline = time.monotonic() + timeout
        while not all(self.is_available(name, shards) for name in names):
            if time.monotonic() > deadline:
                raise TimeoutError(self._not_available(names, shards))
            await asyncio.sleep(0.05)

    def _not_available(self, names: list[str], shards: int | None) -> str:
        late = [name for name in names if not self.is_available(name, shards)]
        parent = self.informers.store.get(PARENT, late[0])
        status = (parent or {}).get("status") or {}
        return (
            f"{len(late)} of {len(names)} ShardDBs not Available (first: {late[0]}, phase {status.get('phase')}, "
            f"readyShards {status.get('readyShards')}); Metacontroller: {self.metacontroller.workers.last_error!r}; "
            f"cluster: {self.cluster.failures}"
        )

    def snapshot(self) -> Counter[str]:
        return self.metacontroller.counts.copy()

    def tally_since(self, before: Counter[str], seconds: float) -> Tally:
        return Tally.between(before, self.snapshot(), seconds)
