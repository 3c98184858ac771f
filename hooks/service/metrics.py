"""Prometheus metrics of the hook service, on a registry of its own.

Two kinds: counters of the service's calls, and one view per ShardDB of what this replica last
answered for it (``ShardDBViews``). Several replicas sit behind one Service and each sees only
the syncs it served, so every per-ShardDB series carries the time of that sync; the shipped
recording rules keep, per ShardDB, the view of the replica that synced it last
(``metacontroller/components/monitoring/rules.yaml``, docs/operating/monitoring.md).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from ..clock import Clock, system_clock
from ..lifecycle import Phase
from .settings import DEFAULT_VIEW_TTL_SECONDS

CONTENT_TYPE = CONTENT_TYPE_LATEST
HOOKS = {"/sync": "sync", "/finalize": "finalize", "/customize": "customize"}
# A refusal answered before any route reads the request, by its status: a token that does not match (a
# rotation that reached one side only), a body or head too large, a client too slow.
REFUSALS = {401: "unauthorized", 408: "too_slow", 413: "too_large", 431: "too_large"}

# Every reason the hooks give Degraded (tests/service/test_sharddb_metrics.py holds this to hooks/lifecycle.py), so
# the ``reason`` label is a closed set: a reason added to the code but not here is exported as OTHER.
DEGRADED_REASONS = frozenset(
    {
        "AsExpected",
        "CachePodsFailing",
        "CachePodsMissing",
        "CacheRolloutStuck",
        "ChildrenMissing",
        "Deleting",
        "NameInvalid",
        "NameTooLong",
        "NoPrimary",
        "NoSyncStandby",
        "NodeLost",
        "ReplicationChangeRefused",
        "ReplicationCredentialsMissing",
        "ReplicationNameTooLong",
        "ReplicationPasswordRefused",
        "ReplicationUnsupported",
        "SeedFailed",
        "SeedPodsFailing",
        "SeedPodsMissing",
        "ShardPodsFailing",
        "ShardPodsMissing",
        "ShardsUnavailable",
        "ShrinkRefused",
        "StandbyNotStreaming",
        "StorageImmutable",
        "TwoPrimaries",
    }
)
PHASES = frozenset(phase.value for phase in Phase)
OTHER = "Other"
PRUNE_EVERY_SECONDS = 60.0
KEY = ("namespace", "name")


class Metrics:
    """One instance per app, so tests that build several apps never share counts."""

    def __init__(self, clock: Clock = system_clock, view_ttl_seconds: float = DEFAULT_VIEW_TTL_SECONDS) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter(
            "sharddb_hook_calls",
            "Hook calls by hook and outcome (ok, not_modified, client_error, server_error; refused before the hook "
            "read them: unauthorized, too_large, too_slow).",
            ["hook", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "sharddb_hook_duration_seconds",
            "Time to answer a hook call, parse to serialized answer.",
            ["hook"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=self.registry,
        )
        self.decisions = Counter(
            "sharddb_decisions",
            "Lifecycle decisions by the phase they put a ShardDB in.",
            ["phase"],
            registry=self.registry,
        )
        self.previous_token = Counter(
            "sharddb_hook_previous_token_calls",
            "Calls let in by the previous token (SHARDDB_AUTH_PREVIOUS_TOKEN_FILE), by hook: a rotation is not "
            "over while this rises.",
            ["hook"],
            registry=self.registry,
        )
        self.views = ShardDBViews(clock, view_ttl_seconds)
        self.registry.register(self.views)

    def refused(self, path: str | None, status: int) -> None:
        """Counts a refusal by the middleware or the server; ``path`` is None where no request head was read."""
        hook = "unknown" if path is None else HOOKS.get(path, "other")
        self.calls.labels(hook, REFUSALS.get(status, "client_error")).inc()

    def let_in_by_previous(self, path: str) -> None:
        """Counts a call that only the previous token let in."""
        self.previous_token.labels(HOOKS.get(path, "other")).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


@dataclass(frozen=True)
class View:
    """What one answer said of one ShardDB, and when: the per-ShardDB series are made of it."""

    available: bool
    degraded: bool
    reason: str
    phase: str
    ready_shards: int
    desired_shards: int
    synced_at: float  # Unix seconds
    request_digest: str  # a 304 for the same request is a sync that found the same answer


def _known(value: str, known: frozenset[str]) -> str:
    return value if value in known else OTHER


def view_of(body: Mapping[str, Any], request_digest: str, at: datetime) -> View:
    """The view an answer body gives (its ``status``), read at ``at``."""
    status = body["status"]
    conditions = {condition["type"]: condition for condition in status["conditions"]}
    degraded = conditions["Degraded"]
    return View(
        available=conditions["Available"]["status"] == "True",
        degraded=degraded["status"] == "True",
        reason=_known(degraded["reason"], DEGRADED_REASONS),
        phase=_known(status["phase"], PHASES),
        ready_shards=int(status["readyShards"]),
        desired_shards=int(status["shards"]),
        synced_at=at.timestamp(),
        request_digest=request_digest,
    )


class ShardDBViews(Collector):
    """This replica's last answer per ShardDB, exported as gauges labelled ``namespace`` and ``name``.

    A ShardDB's series go when a finalize answers ``finalized: true`` (Metacontroller then removes
    its finalizer and the ShardDB is gone), and when this replica has not synced it for
    ``ttl_seconds``: another replica serves it now, or it went without a finalize this replica
    answered. A finalize that completes leaves, for the TTL, the time it completed
    (``sharddb_finalized_timestamp_seconds``): another replica may still hold an older view of the
    ShardDB until its own TTL, and the recording rules drop views older than that time. So the
    series are bounded by the ShardDBs this replica served within the TTL, times one reason and
    one phase each.
    """

    def __init__(self, clock: Clock, ttl_seconds: float) -> None:
        self._clock = clock
        self._ttl = ttl_seconds
        self._lock = threading.Lock()
        self._views: dict[tuple[str, str], View] = {}
        self._by_digest: dict[str, tuple[str, str]] = {}
        self._finalized: dict[tuple[str, str], float] = {}
        self._pruned = float("-inf")

    def __len__(self) -> int:
        """How many ShardDBs this replica holds a view or a finalize of."""
        with self._lock:
            return len(self._views) + len(self._finalized)

    def answered(self, parent: str, body: Mapping[str, Any], request_digest: str, at: datetime) -> None:
        """A sync or finalize answered for ``parent`` ("namespace/name") with ``body``, at ``at``."""
        namespace, _, name = parent.partition("/")
        key = (namespace, name)
        with self._lock:
            if at.timestamp() - self._pruned > PRUNE_EVERY_SECONDS:  # bounded even if nobody scrapes
                self._prune(at.timestamp())
            self._drop(key)
            if body.get("finalized") is True:
                self._finalized[key] = at.timestamp()
                return
            self._finalized.pop(key, None)  # the same name again: a new ShardDB
            view = view_of(body, request_digest, at)
            self._views[key] = view
            self._by_digest[request_digest] = key

    def unchanged(self, request_digest: str, at: datetime) -> None:
        """A 304: the request this replica answered before, so its ShardDB was synced again at ``at``.

        A 304 for a request another replica answered names no ShardDB here, and changes nothing.
        """
        with self._lock:
            key = self._by_digest.get(request_digest)
            if key is not None:
                view = self._views[key]
                self._views[key] = replace(view, synced_at=at.timestamp())

    def _drop(self, key: tuple[str, str]) -> None:
        old = self._views.pop(key, None)
        if old is not None:
            self._by_digest.pop(old.request_digest, None)

    def _prune(self, now: float) -> None:
        """Forgets what is older than the TTL at ``now``; the caller holds the lock."""
        oldest = now - self._ttl
        for key in [key for key, view in self._views.items() if view.synced_at < oldest]:
            self._drop(key)
        for key in [key for key, at in self._finalized.items() if at < oldest]:
            del self._finalized[key]
        self._pruned = now

    def _current(self) -> tuple[list[tuple[tuple[str, str], View]], list[tuple[tuple[str, str], float]]]:
        with self._lock:
            self._prune(self._clock().timestamp())
            return sorted(self._views.items()), sorted(self._finalized.items())

    def describe(self) -> Iterable[Metric]:
        """The families without samples: registering the collector must not read the clock."""
        return list(_families())

    def collect(self) -> Iterable[Metric]:
        families = _families()
        available, degraded, phase, ready, desired, synced, finalized = families
        views, finalizes = self._current()
        for key, view in views:
            available.add_metric(key, float(view.available))
            degraded.add_metric((*key, view.reason), float(view.degraded))
            phase.add_metric((*key, view.phase), 1.0)
            ready.add_metric(key, float(view.ready_shards))
            desired.add_metric(key, float(view.desired_shards))
            synced.add_metric(key, view.synced_at)
        for key, at in finalizes:
            finalized.add_metric(key, at)
        return families


def _families() -> tuple[GaugeMetricFamily, ...]:
    def gauge(name: str, documentation: str, *extra: str) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, documentation, labels=[*KEY, *extra])

    return (
        gauge("sharddb_available", "1 if this replica's last answer set the ShardDB's Available condition True."),
        gauge("sharddb_degraded", "1 if this replica's last answer set Degraded True; reason: its reason.", "reason"),
        gauge("sharddb_phase", "Always 1; phase: the phase of this replica's last answer for the ShardDB.", "phase"),
        gauge("sharddb_ready_shards", "Ready shards (status.readyShards) in this replica's last answer."),
        gauge(
            "sharddb_desired_shards",
            "Shards asked of the StatefulSet (status.shards) in this replica's last answer: spec.shards, but 0 "
            "while hibernated or drained, and never fewer than run (a refused shrink).",
        ),
        gauge(
            "sharddb_last_sync_timestamp_seconds",
            "When this replica last answered a sync or finalize for the ShardDB (a 304 included), in Unix seconds.",
        ),
        gauge(
            "sharddb_finalized_timestamp_seconds",
            "When this replica answered the ShardDB's finalize with finalized: true (kept for the TTL), in Unix "
            "seconds: views of it older than that are of a ShardDB that is gone.",
        ),
    )
