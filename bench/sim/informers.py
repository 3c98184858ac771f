"""Informers: list then watch each kind in one namespace, keep the objects, tell handlers what changed.

Like client-go's shared informers, reads come from this cache (free), and a
handler sees every add, update and delete in the order the server sent them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import httpx

from .api import Api, Obj, resource_version

LOG = logging.getLogger("bench.fleet")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


@dataclass(frozen=True)
class Event:
    """One change of one object; ``old`` is None for an add."""

    kind: str
    type: str
    old: Obj | None
    new: Obj


Handler = Callable[[Event], None]


class Store:
    """The cache every informer writes and every component reads: kind -> name -> object."""

    def __init__(self, kinds: Iterable[str]) -> None:
        self.objects: dict[str, dict[str, Obj]] = {kind: {} for kind in kinds}

    def get(self, kind: str, name: str) -> Obj | None:
        return self.objects.get(kind, {}).get(name)

    def list(self, kind: str) -> list[Obj]:
        """Every cached object of ``kind``; none for a kind nobody watches."""
        return list(self.objects.get(kind, {}).values())


class Informers:
    """One list+watch per kind; handlers run synchronously on each event, so they must only enqueue."""

    def __init__(self, api: Api, namespace: str, kinds: Iterable[str]) -> None:
        self.api = api
        self.namespace = namespace
        self.kinds = tuple(kinds)
        self.store = Store(self.kinds)
        self.handlers: list[Handler] = []
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Returns once every cache is filled (client-go's WaitForCacheSync), watches running."""
        versions = await asyncio.gather(*(self._relist(kind) for kind in self.kinds))
        for kind, version in zip(self.kinds, versions, strict=True):
            self._tasks.append(asyncio.create_task(self._watch(kind, version), name=f"watch {kind}"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _relist(self, kind: str) -> str:
        items, version = await self.api.list(kind, self.namespace)
        fresh = {item["metadata"]["name"]: item for item in items}
        cached = self.store.objects[kind]
        for name in [n for n in cached if n not in fresh]:
            self._emit(Event(kind, DELETED, None, cached.pop(name)))
        for name, item in fresh.items():
            old = cached.get(name)
            cached[name] = item
            if old is None or resource_version(old) != resource_version(item):
                self._emit(Event(kind, ADDED if old is None else MODIFIED, old, item))
        return version

    async def _watch(self, kind: str, version: str) -> None:
        """Resume from the last version seen; start over with a list when the server says it is too old."""
        while True:
            try:
                async for event in self.api.watch(kind, self.namespace, version):
                    version = self._receive(kind, event) or version
                    if event["type"] == "ERROR":
                        version = await self._relist(kind)
                        break
            except (httpx.HTTPError, ValueError) as error:
                LOG.debug("watch %s: %r; resuming", kind, error)
                await asyncio.sleep(0.5)

    def _receive(self, kind: str, event: Obj) -> str:
        """Apply one watch event to the cache; returns the version to resume from."""
        kind_of_event, obj = event["type"], event["object"]
        if kind_of_event == "ERROR":
            return ""
        version = str(obj.get("metadata", {}).get("resourceVersion", ""))
        if kind_of_event == "BOOKMARK":
            return version
        name = obj["metadata"]["name"]
        cached = self.store.objects[kind]
        old = cached.get(name)
        if kind_of_event == DELETED:
            cached.pop(name, None)
            self._emit(Event(kind, DELETED, old, obj))
        else:
            cached[name] = obj
            self._emit(Event(kind, MODIFIED if old is not None else ADDED, old, obj))
        return version

    def _emit(self, event: Event) -> None:
        for handler in self.handlers:
            handler(event)
