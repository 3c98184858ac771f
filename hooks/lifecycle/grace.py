"""Which troubles pass by themselves, and how long they are given to: pods that wait, and what was asked for and
does not exist yet, and shards whose roles are not what they must be.

A new pod is often Unschedulable for a moment while its volume binds or a node joins,
or waits for a Secret applied beside its ShardDB: that is progress, not damage. Such a
trouble counts only once it has lasted ``spec.podStartGraceSeconds``, timed from the
pod's own timestamps in the request; a trouble that is already the result of retries,
or that no wait can mend, counts at once. Pure: the caller passes the clock reading in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from .. import kinds, names
from ..snapshot import Snapshot
from ..trouble.missing import MissingPod
from ..trouble.stuck import StuckPod

# Troubles that may pass by themselves, and what a pod with one waits for.
WAITS_FOR = {
    "Unschedulable": "to be scheduled",  # volumes binding, a node joining or losing its not-ready taint
    "CreateContainerConfigError": "for a Secret or ConfigMap",  # applied beside the ShardDB, a moment later
    "CreateContainerError": "for its container to be created",  # the runtime's own hiccups (a name still held)
}
# Troubles reported at once: the kubelet has already retried, or nothing changes without a fix.
AT_ONCE = frozenset({"InvalidImageName", "ImagePullBackOff", "RunContainerError", "CrashLoopBackOff"})


T = TypeVar("T")


@dataclass(frozen=True)
class Split(Generic[T]):
    """Troubles split by their grace at one clock reading: pods, missing pods, shards' roles alike."""

    failing: tuple[T, ...] = ()  # count now: Degraded names them
    waiting: tuple[T, ...] = ()  # within their grace: Progressing says what they wait for
    recheck_at: datetime | None = None  # when the earliest grace still running runs out


def end(since: datetime | None, grace: timedelta) -> datetime | None:
    """When a trouble that began at ``since`` stops being given time; None when it gets none (or no time is known)."""
    if since is None or not grace:
        return None
    try:
        return since + grace
    except OverflowError:  # a time at the end of the calendar is no time anything began
        return None


def split(found: Iterable[tuple[T, datetime | None]], now: datetime | None, grace_seconds: int) -> Split[T]:
    """Each trouble counts once its grace from its start ran out; a start of None (at once, or unknown) counts now.

    The one grace calculation of the hooks: without a clock reading every trouble counts.
    """
    grace = timedelta(seconds=grace_seconds)
    failing: list[T] = []
    waiting: list[T] = []
    ends: list[datetime] = []
    for trouble, since in found:
        until = end(since, grace)
        if now is None or until is None or now >= until:
            failing.append(trouble)
        else:
            waiting.append(trouble)
            ends.append(until)
    return Split(tuple(failing), tuple(waiting), min(ends, default=None))


def triage(pods: tuple[StuckPod, ...], now: datetime | None, grace_seconds: int) -> Split[StuckPod]:
    """Which of ``pods`` count at ``now``: only a trouble that may pass by itself is given the grace."""
    return split(((pod, pod.since if pod.reason in WAITS_FOR else None) for pod in pods), now, grace_seconds)


def _counts(until: datetime | None, now: datetime | None) -> bool:
    return now is None or until is None or now >= until


@dataclass(frozen=True)
class Missing:
    """What is missing at one clock reading, split by its grace."""

    pods: tuple[MissingPod, ...] = ()  # past the grace: Degraded names them
    pods_waiting: tuple[MissingPod, ...] = ()  # within it: Progressing names them
    children: tuple[str, ...] = ()  # "StatefulSet demo-db", past the grace
    cache_refused: str | None = None  # the cache Deployment's FailedCreate message, past the grace
    seed_refused: tuple[int, ...] = ()  # shard counts of seed Jobs with no pod, past the grace
    recheck_at: datetime | None = None  # a missing pod's or child's grace runs out: no call may come then
    holds_until: datetime | None = None  # a missing child's grace runs out: the answer changes, whoever calls


def unmet(snap: Snapshot, grace_seconds: int, *, children: bool, shard_sets: tuple[int, ...] | None = None) -> Missing:
    """Missing shard pods, and (with ``children``: not while frozen) missing children, at ``snap.now``.

    ``shard_sets``: the shards with members whose StatefulSets are asked for, instead of today's one.

    A child is timed from the ShardDB's creation; without a readable one nothing says it is late.
    Not from the hooks' own status: fed its own status back, the answer must not change.
    """
    grace = timedelta(seconds=grace_seconds)
    pods = split(((pod, pod.since) for pod in snap.missing_pods), snap.now, grace_seconds)
    ends = [] if pods.recheck_at is None else [pods.recheck_at]
    absent, holds = _children(snap, grace, ends, shard_sets) if children and snap.created is not None else ((), None)
    seeds = _seeds_refused(snap, grace, ends)
    refused = _cache_refused(snap, grace, ends)
    return Missing(
        pods=pods.failing,
        pods_waiting=pods.waiting,
        children=absent,
        cache_refused=refused,
        seed_refused=seeds,
        recheck_at=min(ends, default=None),  # every grace above still running
        holds_until=holds,
    )


def _children(
    snap: Snapshot, grace: timedelta, ends: list[datetime], shard_sets: tuple[int, ...] | None
) -> tuple[tuple[str, ...], datetime | None]:
    """The shards' StatefulSets and Service, if missing past the grace; else when their grace runs out."""
    wanted = []
    if shard_sets is None and snap.statefulset is None:
        wanted.append(f"{kinds.STATEFULSET.kind} {names.db_name(snap.name)}")
    observed = {each.shard for each in snap.shard_sets}
    for shard in shard_sets or ():
        if shard not in observed:
            wanted.append(f"{kinds.STATEFULSET.kind} {names.shard_pod_name(snap.name, shard)}")
    if not snap.service:
        wanted.append(f"{kinds.SERVICE.kind} {names.db_name(snap.name)}")
    until = end(snap.created, grace)
    if wanted and _counts(until, snap.now):
        return tuple(wanted), None
    if not wanted:
        return (), None
    # Once an earlier answer asked for it, a refused create is retried with a growing back-off:
    # ask for the call at the grace's end rather than wait for a late retry. A first answer
    # (every new ShardDB's) asks for none: its children are created in the next moment.
    if snap.prior_conditions and until is not None:
        ends.append(until)
    return (), until


def _seeds_refused(snap: Snapshot, grace: timedelta, ends: list[datetime]) -> tuple[int, ...]:
    """Shard counts of seed Jobs started with no pod past the grace; ``ends`` gets when the others' runs out."""
    seeds: list[int] = []
    for job in snap.seed_jobs:
        if job.podless_since is None or job.succeeded or job.failed:
            continue
        until = end(job.podless_since, grace)
        if _counts(until, snap.now):
            seeds.append(job.shards)
        elif until is not None:
            ends.append(until)  # the Job controller retries with a back-off the hooks would not see
    return tuple(seeds)


def _cache_refused(snap: Snapshot, grace: timedelta, ends: list[datetime]) -> str | None:
    """The cache's refused create past the grace; within it, ``ends`` gets when the grace runs out."""
    cache = snap.cache
    if cache is None or cache.refused is None:
        return None
    until = end(cache.refused_since, grace)
    if _counts(until, snap.now):
        return cache.refused
    if until is not None:
        ends.append(until)  # the ReplicaSet controller retries with no change the hooks would see
    return None
