"""Each ShardDB's view as this replica last answered it, exported as gauges: its conditions, phase and shards, per
shard with members, Patroni's roles as the status names them, and for a ShardDB that backs up, its base backups'
last success, next due time and whether one runs (what the overdue alert reads).

Several replicas sit behind one Service and each sees only the syncs it served, so every series carries
the ShardDB's ``namespace`` and ``name`` and the time of that sync; the shipped recording rules keep, per
ShardDB, the view of the replica that synced it last (``metacontroller/components/monitoring/prometheus/
rules.yaml``). The per-shard series are what the replication alerts read: a shard's health as the answer
gave it, without the grace the Degraded condition waits, so each alert's own ``for:`` is its whole delay,
and one shard's trouble is never hidden behind another reason of the same ShardDB.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..clock import Clock
from ..lifecycle import Phase
from ..replication import health
from ..spec import MEBIBYTE

# Every reason the hooks give Degraded (tests/service/test_sharddb_metrics.py holds this to hooks/lifecycle.py), so
# the ``reason`` label is a closed set: a reason added to the code but not here is exported as OTHER.
DEGRADED_REASONS = frozenset(
    {
        "AsExpected",
        "BackupScheduleRefused",
        "BaseBackupFailed",
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
# A shard's health as ``status.replication.shards[].reason`` gives it: a closed set, as Degraded's reasons are.
SHARD_HEALTH = frozenset({health.READY, health.NO_PRIMARY, health.NO_SYNC_STANDBY, health.TWO_PRIMARIES})
PRUNE_EVERY_SECONDS = 60.0
KEY = ("namespace", "name")


@dataclass(frozen=True)
class StandbyLag:
    """One standby's lag as the status gives it, in whole MiB rounded down; None where Patroni has not said."""

    member: str
    receive_mib: int | None
    replay_mib: int | None


@dataclass(frozen=True)
class ShardView:
    """One shard with members as the answer's ``status.replication`` gave it."""

    shard: int
    health: str
    streaming: int  # standbys streaming from the primary, synchronous or not
    lags: tuple[StandbyLag, ...] = ()


@dataclass(frozen=True)
class BaseBackupView:
    """The base backups as the answer's ``status.backup`` gave them: Unix seconds, None until known."""

    last_success: float | None
    next_due: float | None
    running: bool


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
    members: int | None = None  # spec.replication.members as applied; None: single copies
    shards: tuple[ShardView, ...] = ()
    base_backups: BaseBackupView | None = None  # only a ShardDB that backs up, once its CronJob exists


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
        base_backups=_base_backups(status.get("backup")),
        **_replication(status.get("replication")),
    )


def _base_backups(backup: Mapping[str, Any] | None) -> BaseBackupView | None:
    if backup is None:
        return None

    def seconds(key: str) -> float | None:
        text = backup.get(key)
        return datetime.fromisoformat(text).timestamp() if text else None

    return BaseBackupView(seconds("lastSuccessfulTime"), seconds("nextScheduleTime"), bool(backup.get("running")))


def _replication(replication: Mapping[str, Any] | None) -> dict[str, Any]:
    """The view's members and shards from ``status.replication``, which only shards with members carry."""
    if replication is None:
        return {}
    shards = tuple(
        ShardView(
            shard=int(entry["shard"]),
            health=_known(entry["reason"], SHARD_HEALTH),
            streaming=len(entry.get("streaming", ())),
            lags=tuple(
                StandbyLag(member["name"], member.get("receiveLagMiB"), member.get("replayLagMiB"))
                for member in entry.get("members", ())
                if member["name"] != entry.get("primary")
                and (member.get("receiveLagMiB") is not None or member.get("replayLagMiB") is not None)
            ),
        )
        for entry in replication.get("shards", ())
    )
    return {"members": int(replication["members"]), "shards": shards}


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
        available, degraded, phase, ready, desired, synced, finalized = families[:7]
        views, finalizes = self._current()
        for key, view in views:
            available.add_metric(key, float(view.available))
            degraded.add_metric((*key, view.reason), float(view.degraded))
            phase.add_metric((*key, view.phase), 1.0)
            ready.add_metric(key, float(view.ready_shards))
            desired.add_metric(key, float(view.desired_shards))
            synced.add_metric(key, view.synced_at)
            _add_replication(families[7:12], key, view)
            _add_base_backups(families[12:], key, view.base_backups)
        for key, at in finalizes:
            finalized.add_metric(key, at)
        return families


def _add_replication(families: tuple[GaugeMetricFamily, ...], key: tuple[str, str], view: View) -> None:
    members, shard_health, streaming, receive, replay = families
    if view.members is None:
        return
    members.add_metric(key, float(view.members))
    for shard in view.shards:
        at = (*key, str(shard.shard))
        shard_health.add_metric((*at, shard.health), 1.0)
        streaming.add_metric(at, float(shard.streaming))
        for lag in shard.lags:
            if lag.receive_mib is not None:
                receive.add_metric((*at, lag.member), float(lag.receive_mib * MEBIBYTE))
            if lag.replay_mib is not None:
                replay.add_metric((*at, lag.member), float(lag.replay_mib * MEBIBYTE))


def _add_base_backups(
    families: tuple[GaugeMetricFamily, ...], key: tuple[str, str], seen: BaseBackupView | None
) -> None:
    last_success, next_due, running = families
    if seen is None:
        return
    if seen.last_success is not None:
        last_success.add_metric(key, seen.last_success)
    if seen.next_due is not None:
        next_due.add_metric(key, seen.next_due)
    running.add_metric(key, float(seen.running))


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
        gauge(
            "sharddb_replication_members",
            "Members per shard (status.replication.members) in this replica's last answer; only ShardDBs with members.",
        ),
        gauge(
            "sharddb_shard_health",
            "Always 1; reason: a shard's health in this replica's last answer (status.replication.shards[].reason: "
            "Ready, NoPrimary, NoSyncStandby, TwoPrimaries), as it was, before any grace.",
            "shard",
            "reason",
        ),
        gauge(
            "sharddb_shard_streaming_standbys",
            "Standbys streaming from the shard's primary, synchronous or not, in this replica's last answer.",
            "shard",
        ),
        gauge(
            "sharddb_standby_receive_lag_bytes",
            "A standby's received WAL behind its primary's, in whole MiB rounded down, from the two members' Patroni "
            "marks (each up to a loop old), in this replica's last answer.",
            "shard",
            "member",
        ),
        gauge(
            "sharddb_standby_replay_lag_bytes",
            "A standby's replayed WAL behind its primary's, in whole MiB rounded down, as the receive lag is.",
            "shard",
            "member",
        ),
        *_base_backup_families(),
    )


def _base_backup_families() -> tuple[GaugeMetricFamily, ...]:
    return (
        GaugeMetricFamily(
            "sharddb_base_backup_last_success_timestamp_seconds",
            "When the last base backup run that succeeded ended (status.backup.lastSuccessfulTime), in Unix seconds.",
            labels=KEY,
        ),
        GaugeMetricFamily(
            "sharddb_base_backup_next_schedule_timestamp_seconds",
            "When the next base backup is due (status.backup.nextScheduleTime): the schedule's first time after the "
            "last success, in Unix seconds; in the past, a run is due, going, or missed.",
            labels=KEY,
        ),
        GaugeMetricFamily(
            "sharddb_base_backup_running",
            "1 while a base backup run is going (status.backup.running), else 0.",
            labels=KEY,
        ),
    )
