"""A CompositeController loop that behaves like Metacontroller v4.17.2 where it costs API writes.

It is driven by the project's own CompositeController manifest (child kinds,
update strategies, hook paths, resync period) and does what the real one does
with a sync answer, write for write: the finalizer added on first sync,
children created with the last-applied annotation and a controller reference,
updated in place only when the three-way merge differs from the stored object
(``testbed.metacontroller``), deleted when the answer leaves them out, status
written through ``/status`` only when it changed, the finalizer removed once
finalized. Reads come from the informer cache; every write waits for a token
from one bucket shared by all parents (client-go's QPS and burst).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlparse

import httpx
import orjson

from testbed.metacontroller import FINALIZER, SELECTOR_LABEL, apply_update, desired_as_sent, difference, for_create

from .api import RESOURCES, Api, Obj, resource_version
from .informers import MODIFIED, Event, Store
from .workqueue import TokenBucket, Workers, WorkQueue

PARENT = "ShardDB"
WRITE_KINDS = ("create", "finalizer", "status", "update", "delete")
HOOKS = ("sync", "finalize", "customize")
ATOMIC_RETRIES = 5  # client-go's retry.DefaultBackoff: 5 steps
KIND_OF_RESOURCE = {(version, plural): kind for kind, (version, plural) in RESOURCES.items()}


@dataclass(frozen=True)
class LoopSettings:
    """Metacontroller's defaults: ``--workers=5``, client QPS 5 and burst 10."""

    workers: int = 5
    qps: float = 5.0
    burst: int = 10
    hook_timeout_seconds: float = 10.0
    # The real client also spends a token on the GET before each status update; off by default.
    limit_status_reads: bool = False


@dataclass(frozen=True)
class Tally:
    """What one window cost: writes by kind (one token each) and hook calls by hook."""

    writes: Mapping[str, int]
    noop_updates: int  # updates the API server stored without any change: pure waste
    noop_fields: Mapping[str, int]  # "<Kind> <path>" the merge saw as different in those (lists as a whole)
    conflicts: int  # 409 on an update (stale cache), counted in its kind too
    already_exists: int  # 409 on a create (stale cache), counted as a create too
    hook_calls: Mapping[str, int]
    not_modified: int  # hook calls answered 304 from Metacontroller's ETag cache
    failed_syncs: int
    seconds: float

    @property
    def total_writes(self) -> int:
        return sum(self.writes.values())

    @property
    def total_hook_calls(self) -> int:
        return sum(self.hook_calls.values())

    def per_minute(self, count: float) -> float:
        return count * 60.0 / self.seconds if self.seconds > 0 else 0.0

    @classmethod
    def between(cls, before: Counter[str], after: Counter[str], seconds: float) -> Tally:
        delta = after.copy()
        delta.subtract(before)
        noop = {key.removeprefix("noop:"): n for key, n in delta.items() if key.startswith("noop:") and n}
        return cls(
            writes={kind: delta[kind] for kind in WRITE_KINDS},
            noop_updates=delta["noop_update"],
            noop_fields=dict(sorted(noop.items(), key=lambda item: -item[1])),
            conflicts=delta["conflict"],
            already_exists=delta["already_exists"],
            hook_calls={hook: delta[f"hook:{hook}"] for hook in HOOKS},
            not_modified=delta["hook:304"],
            failed_syncs=delta["failed_sync"],
            seconds=seconds,
        )


class SyncError(RuntimeError):
    """A sync that must be retried with backoff, as Metacontroller would after a Warning event."""


@dataclass(frozen=True)
class ChildResource:
    """One row of ``childResources``: which kind, and whether it is ever updated in place."""

    kind: str
    group_key: str  # "Kind.apiVersion", how requests key a group
    method: str  # InPlace, OnDelete, ...


@dataclass(frozen=True)
class RelatedRule:
    """One ``relatedResources`` rule of the customize answer, by label selector."""

    kind: str
    group_key: str
    match_labels: Mapping[str, str]

    def matches(self, obj: Obj | None) -> bool:
        labels = (obj or {}).get("metadata", {}).get("labels") or {}
        return all(labels.get(key) == value for key, value in self.match_labels.items())


def group_key(kind: str) -> str:
    """How a request keys a kind's group: ``StatefulSet.apps/v1``."""
    return f"{kind}.{RESOURCES[kind][0]}"


@dataclass
class CompositeController:
    """What the loop needs from the CompositeController manifest."""

    manifest: Obj
    children: tuple[ChildResource, ...] = field(init=False)
    paths: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        spec = self.manifest["spec"]
        self.children = tuple(
            ChildResource(
                kind=(kind := KIND_OF_RESOURCE[(child["apiVersion"], child["resource"])]),
                group_key=group_key(kind),
                method=child.get("updateStrategy", {}).get("method", "OnDelete"),
            )
            for child in spec["childResources"]
        )
        self.paths = {hook: urlparse(spec["hooks"][hook]["webhook"]["url"]).path for hook in HOOKS}

    def child(self, kind: str) -> ChildResource | None:
        return next((child for child in self.children if child.kind == kind), None)


def _finalizers(obj: Obj) -> list[str]:
    return list(obj["metadata"].get("finalizers") or [])


def _deleting(obj: Obj) -> bool:
    return obj["metadata"].get("deletionTimestamp") is not None


def _controller_uid(obj: Obj) -> str | None:
    refs = obj["metadata"].get("ownerReferences") or []
    return next((ref["uid"] for ref in refs if ref.get("controller") and ref.get("kind") == PARENT), None)


class Metacontroller:
    """The CompositeController's parent loop over one namespace's informer cache."""

    def __init__(
        self,
        api: Api,
        store: Store,
        hooks_url: str,
        controller: CompositeController,
        settings: LoopSettings | None = None,
    ) -> None:
        settings = settings or LoopSettings()
        self.api = api
        self.store = store
        self.controller = controller
        self.settings = settings
        self.bucket = TokenBucket(settings.qps, settings.burst)
        self.queue = WorkQueue()
        self.workers = Workers("metacontroller", self.queue, self._sync, settings.workers)
        self.counts: Counter[str] = Counter()
        self.hooks = httpx.AsyncClient(base_url=hooks_url, timeout=settings.hook_timeout_seconds)
        self._etags: dict[tuple[str, str], tuple[str, Obj]] = {}
        self._customized: dict[str, tuple[int, tuple[RelatedRule, ...]]] = {}
        self._resync: asyncio.Task[None] | None = None

    # --- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        self.workers.start()
        period = float(self.controller.manifest["spec"].get("resyncPeriodSeconds") or 0)
        if period > 0:
            self._resync = asyncio.create_task(self._resync_every(max(period, 1.0)), name="resync")

    async def stop(self) -> None:
        if self._resync is not None:
            self._resync.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._resync
        await self.workers.stop()
        await self.hooks.aclose()

    async def _resync_every(self, period: float) -> None:
        """The parent informer's resync: every parent is queued again, changed or not."""
        while True:
            await asyncio.sleep(period)
            for parent in self.store.list(PARENT):
                self.queue.add(parent["metadata"]["name"])

    # --- events -> queue ---------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """Requeue the parent of a changed child, and every parent a changed related object matches."""
        if event.kind == PARENT:
            self.queue.add(event.new["metadata"]["name"])
            return
        if event.type == MODIFIED and resource_version(event.old) == resource_version(event.new):
            return  # a relist or resync, not a change
        if self.controller.child(event.kind) is not None:
            self._enqueue_owner(event.new)
        else:
            self._enqueue_related(event)

    def _enqueue_owner(self, child: Obj) -> None:
        uid = _controller_uid(child)
        refs = child["metadata"].get("ownerReferences") or []
        name = next((ref["name"] for ref in refs if ref.get("uid") == uid), None)
        parent = self.store.get(PARENT, name) if name else None
        if parent is not None and parent["metadata"]["uid"] == uid:
            self.queue.add(parent["metadata"]["name"])

    def _enqueue_related(self, event: Event) -> None:
        for parent in self.store.list(PARENT):
            name = parent["metadata"]["name"]
            cached = self._customized.get(name)
            if cached is None or cached[0] != parent["metadata"].get("generation"):
                continue
            rules = [rule for rule in cached[1] if rule.kind == event.kind]
            if any(rule.matches(event.new) or rule.matches(event.old) for rule in rules):
                self.queue.add(name)

    # --- one sync ------------------------------------------------------------------

    async def _sync(self, name: str) -> None:
        """One parent, as ``syncParentObject`` does it: finalizer, hook, children, status."""
        try:
            await self._sync_parent(name)
        except Exception:
            self.counts["failed_sync"] += 1
            raise

    async def _sync_parent(self, name: str) -> None:
        parent = self.store.get(PARENT, name)
        if parent is None:
            return
        parent = await self._add_finalizer(parent)
        if parent is None or (_deleting(parent) and FINALIZER not in _finalizers(parent)):
            return
        children = self._claim(parent)
        related = await self._related(parent)
        answer = await self._call_sync(parent, children, related)
        resync = float(answer.get("resyncAfterSeconds") or 0)
        if resync > 0:
            self.queue.add_after(name, resync)
        if answer.get("finalized"):
            parent = await self._remove_finalizer(parent)
            if parent is None:
                return
        problems: list[str] = []
        if not _deleting(parent) or FINALIZER in _finalizers(parent):
            problems = await self._manage(parent, children, answer.get("children") or [])
        await self._write_status(parent, answer.get("status") or {})
        if problems:
            raise SyncError("; ".join(problems))

    def _claim(self, parent: Obj) -> dict[str, dict[str, Obj]]:
        """Children this parent controls (owner reference and generated selector), every group present."""
        uid, namespace = parent["metadata"]["uid"], parent["metadata"]["namespace"]
        claimed: dict[str, dict[str, Obj]] = {}
        for child in self.controller.children:
            group = claimed.setdefault(child.group_key, {})
            for obj in self.store.list(child.kind):
                labels = obj["metadata"].get("labels") or {}
                if _controller_uid(obj) == uid and labels.get(SELECTOR_LABEL) == uid:
                    group[f"{namespace}/{obj['metadata']['name']}"] = obj
        return claimed

    async def _related(self, parent: Obj) -> dict[str, dict[str, Obj]]:
        """Objects the customize hook asked for; its answer is kept per parent generation."""
        meta = parent["metadata"]
        cached = self._customized.get(meta["name"])
        if cached is None or cached[0] != meta.get("generation"):
            body = orjson.dumps({"controller": self.controller.manifest, "parent": parent}, option=orjson.OPT_SORT_KEYS)
            answer = await self._call("customize", meta["uid"], body)
            rules = tuple(_rule(raw) for raw in answer.get("relatedResources") or [])
            cached = (int(meta.get("generation") or 0), rules)
            self._customized[meta["name"]] = cached
        related: dict[str, dict[str, Obj]] = {}
        for rule in cached[1]:
            group = related.setdefault(rule.group_key, {})
            for obj in self.store.list(rule.kind):
                if rule.matches(obj):
                    group[f"{meta['namespace']}/{obj['metadata']['name']}"] = obj
        return related

    async def _call_sync(self, parent: Obj, children: Obj, related: Obj) -> Obj:
        finalizing = _deleting(parent)
        request = {
            "controller": self.controller.manifest,
            "parent": parent,
            "children": children,
            "related": related,
            "finalizing": finalizing,
        }
        body = orjson.dumps(request, option=orjson.OPT_SORT_KEYS)
        return await self._call("finalize" if finalizing else "sync", parent["metadata"]["uid"], body)

    async def _call(self, hook: str, uid: str, body: bytes) -> Obj:
        """POST to the hook; with the last ETag for this parent and hook, a 304 reuses that answer."""
        path = self.controller.paths[hook]
        cached = self._etags.get((uid, path))
        headers = {"Content-Type": "application/json"}
        if cached is not None:
            headers["If-None-Match"] = cached[0]
        self.counts[f"hook:{hook}"] += 1
        response = await self.hooks.post(path, content=body, headers=headers)
        if response.status_code == 304 and cached is not None:
            self.counts["hook:304"] += 1
            return cached[1]
        if response.status_code != 200:
            self.counts["hook:error"] += 1
            raise SyncError(f"{hook} hook answered {response.status_code}: {response.text[:300]}")
        answer: Obj = orjson.loads(response.content)
        tag = response.headers.get("ETag")
        if tag:
            self._etags[(uid, path)] = (tag, answer)
        return answer

    # --- writes ----------------------------------------------------------------------

    async def _write(self, kind: str, send: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
        """Every write takes a token from the shared bucket first, and is counted by kind."""
        await self.bucket.take()
        self.counts[kind] += 1
        return await send()

    async def _read_parent(self, parent: Obj) -> Obj | None:
        """A live GET of the parent, as AtomicUpdate does; None when it is gone or replaced."""
        if self.settings.limit_status_reads:
            await self.bucket.take()
        meta = parent["metadata"]
        current = await self.api.get(PARENT, meta["name"], meta["namespace"])
        if current is None or current["metadata"]["uid"] != meta["uid"]:
            return None
        return current

    async def _atomic_update(self, parent: Obj, kind: str, change: Callable[[Obj], bool], status: bool) -> Obj | None:
        """Read, change, write; again on a conflict (client-go's RetryOnConflict)."""
        for _ in range(ATOMIC_RETRIES):
            current = await self._read_parent(parent)
            if current is None or not change(current):
                return current
            response = await self._write(kind, functools.partial(self.api.replace, current, "status" if status else ""))
            if response.status_code == 409:
                self.counts["conflict"] += 1
                continue
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise SyncError(f"{kind} write: {response.status_code} {response.text[:300]}")
            result: Obj = orjson.loads(response.content)
            return result
        return None  # a conflict that outlived the retries is ignored; the next sync tries again

    async def _add_finalizer(self, parent: Obj) -> Obj | None:
        if FINALIZER in _finalizers(parent) or _deleting(parent):
            return parent

        def add(obj: Obj) -> bool:
            if FINALIZER in _finalizers(obj):
                return False
            obj["metadata"]["finalizers"] = [*_finalizers(obj), FINALIZER]
            return True

        return await self._atomic_update(parent, "finalizer", add, status=False)

    async def _remove_finalizer(self, parent: Obj) -> Obj | None:
        def remove(obj: Obj) -> bool:
            if FINALIZER not in _finalizers(obj):
                return False
            obj["metadata"]["finalizers"] = [f for f in _finalizers(obj) if f != FINALIZER]
            return True

        return await self._atomic_update(parent, "finalizer", remove, status=False)

    async def _write_status(self, parent: Obj, status: Obj) -> None:
        """The answer's status plus observedGeneration, written only when the stored one differs."""
        desired = {**copy.deepcopy(status), "observedGeneration": parent["metadata"].get("generation")}

        def replace(obj: Obj) -> bool:
            if obj.get("status") == desired:
                return False
            obj["status"] = desired
            return True

        await self._atomic_update(parent, "status", replace, status=True)

    async def _manage(self, parent: Obj, observed: dict[str, dict[str, Obj]], answer: list[Obj]) -> list[str]:
        """Delete what the answer leaves out, then create or update in place what it lists."""
        meta = parent["metadata"]
        desired = {
            (child["kind"], child["metadata"]["name"]): desired_as_sent(child, meta["namespace"], meta["uid"])
            for child in answer
        }
        problems: list[str] = []
        for group in observed.values():
            for obj in group.values():
                if not _deleting(obj) and (obj["kind"], obj["metadata"]["name"]) not in desired:
                    problems += await self._delete(obj)
        for (kind, name), child in desired.items():
            current = observed.get(group_key(kind), {}).get(f"{meta['namespace']}/{name}")
            if current is None:
                problems += await self._create(parent, child)
            else:
                problems += await self._update(current, child)
        return problems

    async def _delete(self, obj: Obj) -> list[str]:
        meta = obj["metadata"]
        body = {"propagationPolicy": "Background", "preconditions": {"uid": meta["uid"]}}
        kind, name, namespace = obj["kind"], meta["name"], meta["namespace"]
        response = await self._write("delete", lambda: self.api.delete(kind, name, namespace, body))
        if response.status_code in (200, 202, 404):
            return []
        return [f"delete {obj['kind']}/{meta['name']}: {response.status_code} {response.text[:300]}"]

    async def _create(self, parent: Obj, child: Obj) -> list[str]:
        owner = {
            "apiVersion": parent["apiVersion"],
            "kind": parent["kind"],
            "name": parent["metadata"]["name"],
            "uid": parent["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        response = await self._write("create", lambda: self.api.create(for_create(child, owner)))
        if response.status_code == 409:
            self.counts["already_exists"] += 1  # a stale cache; Metacontroller swallows it too
            return []
        if response.status_code == 201:
            return []
        return [f"create {child['kind']}/{child['metadata']['name']}: {response.status_code} {response.text[:300]}"]

    async def _update(self, observed: Obj, desired: Obj) -> list[str]:
        merged = apply_update(observed, desired)
        child = self.controller.child(observed["kind"])
        in_place = child is not None and child.method in ("InPlace", "RollingInPlace")
        if merged == observed or _deleting(observed) or not in_place:
            return []
        response = await self._write("update", lambda: self.api.replace(merged))
        if response.status_code == 409:
            self.counts["conflict"] += 1  # stale cache; Metacontroller ignores it and syncs again later
            return []
        if response.status_code == 404:
            return []
        if response.status_code != 200:
            return [f"update {observed['kind']}/{observed['metadata']['name']}: {response.text[:300]}"]
        if resource_version(orjson.loads(response.content)) == resource_version(observed):
            self._count_noop(observed, desired)
        return []

    def _count_noop(self, observed: Obj, desired: Obj) -> None:
        self.counts["noop_update"] += 1
        fields = {line.split(": stored ", 1)[0].split("[", 1)[0] for line in difference(observed, desired)}
        for name in fields:
            self.counts[f"noop:{observed['kind']} {name}"] += 1


def _rule(raw: Obj) -> RelatedRule:
    kind = KIND_OF_RESOURCE[(raw["apiVersion"], raw["resource"])]
    selector: Obj = raw.get("labelSelector") or {}
    if selector.get("matchExpressions") or raw.get("names"):
        raise SyncError("the fleet loop matches related objects by matchLabels only")
    return RelatedRule(kind=kind, group_key=group_key(kind), match_labels=dict(selector.get("matchLabels") or {}))
