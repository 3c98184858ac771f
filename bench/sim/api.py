"""An async client of the API server: the few kinds a ShardDB fleet involves, list, watch and write.

Requests hand back the raw response, so callers decide what a 404 or a 409 means
to them, as the component they play would.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

Obj = dict[str, Any]

# kind -> (API version, plural); every kind here is namespaced except Namespace and the CRD.
RESOURCES: dict[str, tuple[str, str]] = {
    "Namespace": ("v1", "namespaces"),
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", "customresourcedefinitions"),
    "ShardDB": ("mygroup.example.com/v1alpha1", "sharddbs"),
    "Service": ("v1", "services"),
    "StatefulSet": ("apps/v1", "statefulsets"),
    "Deployment": ("apps/v1", "deployments"),
    "Job": ("batch/v1", "jobs"),
    "PodDisruptionBudget": ("policy/v1", "poddisruptionbudgets"),
    "Pod": ("v1", "pods"),
    "EndpointSlice": ("discovery.k8s.io/v1", "endpointslices"),
}
CLUSTER_SCOPED = frozenset({"Namespace", "CustomResourceDefinition"})
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
RETRIES_ON_429 = 10


def api_version(kind: str) -> str:
    return RESOURCES[kind][0]


def collection(kind: str, namespace: str = "") -> str:
    version, plural = RESOURCES[kind]
    prefix = "/api/v1" if version == "v1" else f"/apis/{version}"
    if kind in CLUSTER_SCOPED or not namespace:
        return f"{prefix}/{plural}"
    return f"{prefix}/namespaces/{namespace}/{plural}"


def path(kind: str, name: str, namespace: str = "", subresource: str = "") -> str:
    return f"{collection(kind, namespace)}/{name}" + (f"/{subresource}" if subresource else "")


def object_path(obj: Obj, subresource: str = "") -> str:
    meta = obj["metadata"]
    return path(obj["kind"], meta["name"], meta.get("namespace", ""), subresource)


def resource_version(obj: Obj | None) -> int:
    """etcd revisions: comparable numbers in practice, though the API calls them opaque."""
    if obj is None:
        return -1
    return int(obj.get("metadata", {}).get("resourceVersion") or 0)


@dataclass(frozen=True)
class Endpoint:
    """Where the API server listens and how to be its admin."""

    url: str
    token: str
    ca_file: Path


class Api:
    """One connection pool to the API server; every component in the simulation has its own."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.http = httpx.AsyncClient(
            base_url=endpoint.url,
            headers={"Authorization": f"Bearer {endpoint.token}"},
            verify=ssl.create_default_context(cafile=str(endpoint.ca_file)),
            timeout=30.0,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
        )

    async def close(self) -> None:
        await self.http.aclose()

    async def _send(
        self, method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        """One request; a 429 (a CRD still being set up) is retried after its Retry-After, as client-go does."""
        for _ in range(RETRIES_ON_429):
            response = await self.http.request(method, url, content=body, headers=headers)
            if response.status_code != 429:
                return response
            await asyncio.sleep(float(response.headers.get("Retry-After") or 1))
        return response

    async def list(self, kind: str, namespace: str) -> tuple[list[Obj], str]:
        """Every object of a kind, with the kind filled in as a dynamic client does, and the list's version."""
        response = await self._send("GET", collection(kind, namespace))
        response.raise_for_status()
        body = orjson.loads(response.content)
        items: list[Obj] = body.get("items") or []
        for item in items:
            item.setdefault("apiVersion", api_version(kind))
            item.setdefault("kind", kind)
        return items, str(body["metadata"]["resourceVersion"])

    async def watch(self, kind: str, namespace: str, since: str) -> AsyncIterator[Obj]:
        """Watch events (``type``, ``object``) from ``since`` until the server ends the stream."""
        params = {"watch": "1", "resourceVersion": since, "allowWatchBookmarks": "true", "timeoutSeconds": "1800"}
        timeout = httpx.Timeout(30.0, read=None)
        async with self.http.stream("GET", collection(kind, namespace), params=params, timeout=timeout) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if line:
                    yield orjson.loads(line)

    async def get(self, kind: str, name: str, namespace: str) -> Obj | None:
        response = await self._send("GET", path(kind, name, namespace))
        if response.status_code == 404:
            return None
        response.raise_for_status()
        result: Obj = orjson.loads(response.content)
        return result

    async def create(self, obj: Obj) -> httpx.Response:
        namespace = obj["metadata"].get("namespace", "")
        return await self._send("POST", collection(obj["kind"], namespace), orjson.dumps(obj), _JSON)

    async def replace(self, obj: Obj, subresource: str = "") -> httpx.Response:
        """A PUT: fails with 409 when ``obj`` carries a stale resourceVersion."""
        return await self._send("PUT", object_path(obj, subresource), orjson.dumps(obj), _JSON)

    async def merge_patch(
        self, kind: str, name: str, namespace: str, patch: Obj, subresource: str = ""
    ) -> httpx.Response:
        """A merge patch: what a controller uses when it must not lose to a concurrent writer."""
        url = path(kind, name, namespace, subresource)
        return await self._send("PATCH", url, orjson.dumps(patch), MERGE_PATCH)

    async def delete(self, kind: str, name: str, namespace: str, body: Obj | None = None) -> httpx.Response:
        url = path(kind, name, namespace)
        return await self._send("DELETE", url, orjson.dumps(body or {}), _JSON)


_JSON = {"Content-Type": "application/json"}
