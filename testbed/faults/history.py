"""Fault tooling: what the API server stored, change by change, from a watch of every kind a ShardDB's life touches.

The fault campaign checks its invariants over this record. Each change is kept
as the few facts the invariants read, keyed by the object's resourceVersion,
which is etcd's revision of the write: one order across every kind. The watches
outlive API server and etcd restarts: they resume from the last revision seen,
and when that is compacted away they list again and record what changed
meanwhile (a relist can miss an intermediate state, never a final one).
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from testbed.real.apiclient import ApiClient, events

Obj = dict[str, Any]

# kind -> collection path, cluster wide
WATCHED = {
    "ShardDB": "/apis/mygroup.example.com/v1alpha1/sharddbs",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "Deployment": "/apis/apps/v1/deployments",
    "Job": "/apis/batch/v1/jobs",
    "Pod": "/api/v1/pods",
    "EndpointSlice": "/apis/discovery.k8s.io/v1/endpointslices",
    "PersistentVolumeClaim": "/api/v1/persistentvolumeclaims",
}
INSTANCE = "app.kubernetes.io/instance"
COMPONENT = "app.kubernetes.io/component"
SERVICE_NAME = "kubernetes.io/service-name"


@dataclass(frozen=True)
class Change:
    """One stored change of one object: ``ADDED``, ``MODIFIED`` or ``DELETED``, with the facts invariants read."""

    revision: int
    at: float  # when the watch delivered it (wall clock)
    type: str
    kind: str
    namespace: str
    name: str
    uid: str
    facts: Obj

    @property
    def key(self) -> tuple[str, str, str]:
        return self.kind, self.namespace, self.name


def _true(conditions: list[Obj] | None, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions or [])


def facts(kind: str, obj: Obj) -> Obj:
    """The little of an object the invariants need; the rest is dropped to keep a fleet's record small."""
    meta, spec, status = obj.get("metadata", {}), obj.get("spec") or {}, obj.get("status") or {}
    labels = meta.get("labels") or {}
    found: Obj = {"deleting": bool(meta.get("deletionTimestamp"))}
    if kind == "ShardDB":
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        found.update(
            shards=spec.get("shards"),
            hibernated=bool(spec.get("hibernated")),
            generation=meta.get("generation"),
            observed=status.get("observedGeneration"),
            available=conditions.get("Available") == "True",
            degraded=conditions.get("Degraded") == "True",
            phase=status.get("phase"),
        )
    elif kind == "StatefulSet":
        found.update(
            instance=labels.get(INSTANCE), replicas=spec.get("replicas"), ready=status.get("readyReplicas") or 0
        )
    elif kind == "Deployment":
        found.update(instance=labels.get(INSTANCE), component=labels.get(COMPONENT), replicas=spec.get("replicas"))
    elif kind == "Job":
        found.update(instance=labels.get(INSTANCE), complete=_true(status.get("conditions"), "Complete"))
    elif kind == "Pod":
        found.update(instance=labels.get(INSTANCE), component=labels.get(COMPONENT), phase=status.get("phase"))
    elif kind == "EndpointSlice":
        endpoints = obj.get("endpoints") or []
        ready = sum(1 for e in endpoints if (e.get("conditions") or {}).get("ready") is not False)
        found.update(service=labels.get(SERVICE_NAME), ready=ready)
    return found


class History:
    """Watches ``WATCHED`` from ``start()`` to ``stop()``; ``changes()`` is the record so far, in revision order."""

    def __init__(self, url: str, token: str, ca_file: Path) -> None:
        # A watch's read waits out its 50 s server-side timeout; a connect or a write that hangs is an outage.
        self._client = ApiClient(url, token, ca_file, timeout=httpx.Timeout(10.0, read=60.0))
        self._changes: list[Change] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listed: set[str] = set()
        self.relists = 0  # times a watch had to list again: the revision it would resume from was compacted

    def start(self) -> None:
        for kind in WATCHED:
            thread = threading.Thread(target=self._follow, args=(kind,), name=f"history-{kind}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=70)
        self._client.close()

    def changes(self) -> list[Change]:
        with self._lock:
            return sorted(self._changes, key=lambda change: change.revision)

    def _record(self, kind: str, type_: str, obj: Obj) -> Change:
        meta = obj.get("metadata", {})
        change = Change(
            revision=int(meta.get("resourceVersion") or 0),
            at=time.time(),
            type=type_,
            kind=kind,
            namespace=meta.get("namespace", ""),
            name=meta.get("name", ""),
            uid=meta.get("uid", ""),
            facts=facts(kind, obj),
        )
        with self._lock:
            self._changes.append(change)
        return change

    def _follow(self, kind: str) -> None:
        """List, then watch from the list's revision; resume after breaks, relist when the revision is gone."""
        path = WATCHED[kind]
        known: dict[str, Obj] = {}  # uid -> last object seen
        revision = ""
        while not self._stop.is_set():
            try:
                if not revision:
                    revision = self._list(kind, path, known)
                revision = self._watch(kind, path, revision, known)
            except (httpx.HTTPError, ValueError):
                if not self._stop.is_set():
                    time.sleep(0.5)  # the API server or etcd is down: resume from the same revision

    def _list(self, kind: str, path: str, known: dict[str, Obj]) -> str:
        response = self._client.get(path)
        response.raise_for_status()
        listed = response.json()
        items = {item["metadata"]["uid"]: item for item in listed.get("items", [])}
        revision = str(listed["metadata"]["resourceVersion"])
        for uid, obj in list(known.items()):
            if uid not in items:  # deleted while no watch ran: recorded at the list's revision
                gone = {**obj, "metadata": {**obj["metadata"], "resourceVersion": revision}}
                self._record(kind, "DELETED", gone)
                del known[uid]
        for uid, item in items.items():
            before = known.get(uid)
            if before is None or before["metadata"]["resourceVersion"] != item["metadata"]["resourceVersion"]:
                self._record(kind, "ADDED" if before is None else "MODIFIED", item)
            known[uid] = item
        if kind in self._listed:
            self.relists += 1
        self._listed.add(kind)
        return revision

    def _watch(self, kind: str, path: str, revision: str, known: dict[str, Obj]) -> str:
        params = {"watch": "1", "resourceVersion": revision, "allowWatchBookmarks": "true", "timeoutSeconds": "50"}
        with self._client.stream("GET", path, params=params) as response:
            if response.status_code == 410:
                return ""
            response.raise_for_status()
            for event in events(response):
                if self._stop.is_set():
                    break
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    return "" if obj.get("code") == 410 else revision
                revision = str(obj.get("metadata", {}).get("resourceVersion") or revision)
                if event.get("type") == "BOOKMARK":
                    continue
                uid = obj["metadata"]["uid"]
                if event["type"] == "DELETED":
                    known.pop(uid, None)
                else:
                    known[uid] = obj
                with contextlib.suppress(KeyError):
                    self._record(kind, event["type"], obj)
        return revision
