"""What the ShardDB asked for and does not have: shard pods, children, a seed Job's pod, the cache's pods.

Admission (a ResourceQuota, Pod Security, a LimitRange, a webhook) may refuse a shard pod or a
child outright. The refusal is written only as an event (the StatefulSet controller's
``FailedCreate``, Metacontroller's ``SyncError``), which the hooks cannot read; what they can
read is that the object does not exist. That counts once it has lasted the start grace, timed
from when the hooks can know it was asked for: a StatefulSet's last spec write for its pods, the
ShardDB's creation for a child.
Pure: the caller passes the clock reading in; nothing here deletes or changes a child.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .. import kinds, names
from ..hook_request import Pod
from ..spec import MAX_SHARDS
from .words import listed

if TYPE_CHECKING:  # the snapshot holds what is found here; only the grace reads the whole of it
    from ..snapshot import Snapshot


@dataclass(frozen=True)
class MissingPod:
    """A shard pod the StatefulSet asks for that does not exist, though its controller has tried.

    ``since`` is when the StatefulSet last asked for more (created, or its spec last written): the
    start grace is timed from it. Its controller's ``FailedCreate`` events say why (a quota, Pod
    Security, a webhook); the hooks cannot read events, so they say where to look.
    """

    name: str
    ordinal: int
    since: datetime | None
    statefulset: str = ""  # the StatefulSet that asks for it: a shard's with members; "" is today's ``<name>-db``


def missing_pods(
    name: str,
    replicas: int,
    counted: int,
    caught_up: bool,
    found: Iterable[Pod],
    since: datetime | None,
    statefulset: str = "",
) -> tuple[MissingPod, ...]:
    """Pods a StatefulSet asks for (``replicas``), that its controller tried to create and could not.

    Only once its controller has seen the latest spec (``caught_up``) and counts fewer pods than
    it asks for: a pod deleted a moment ago, or created a moment before its event reached the
    request, is no pod missing. So a rollout or a scale-up never reads as one. ``statefulset``
    names a shard's StatefulSet with members (its pods are ``<statefulset>-<member>``); "" is today's.
    """
    if not caught_up or counted >= replicas:
        return ()
    present = {pod.metadata.name for pod in found if pod.metadata.labels.get(names.INSTANCE_LABEL) == name}
    owner = statefulset or names.db_name(name)
    return tuple(
        MissingPod(f"{owner}-{ordinal}", ordinal, since, statefulset)
        for ordinal in range(min(replicas, MAX_SHARDS))
        if f"{owner}-{ordinal}" not in present
    )


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


def _end(since: datetime | None, grace: timedelta) -> datetime | None:
    if since is None or not grace:
        return None
    try:
        return since + grace
    except OverflowError:  # a time at the end of the calendar is no time anything was asked for
        return None


def _counts(end: datetime | None, now: datetime | None) -> bool:
    return now is None or end is None or now >= end


def find(snap: Snapshot, grace_seconds: int, *, children: bool, shard_sets: tuple[int, ...] | None = None) -> Missing:
    """Missing shard pods, and (with ``children``: not while frozen) missing children, at ``snap.now``.

    ``shard_sets``: the shards with members whose StatefulSets are asked for, instead of today's one.

    A child is timed from the ShardDB's creation; without a readable one nothing says it is late.
    Not from the hooks' own status: fed its own status back, the answer must not change.
    """
    grace = timedelta(seconds=grace_seconds)
    now = snap.now
    failing: list[MissingPod] = []
    waiting: list[MissingPod] = []
    ends: list[datetime] = []
    for pod in snap.missing_pods:
        end = _end(pod.since, grace)
        if _counts(end, now):
            failing.append(pod)
        elif end is not None:
            waiting.append(pod)
            ends.append(end)
    absent, holds = _children(snap, grace, ends, shard_sets) if children and snap.created is not None else ((), None)
    seeds = _seeds_refused(snap, grace, ends)
    refused = _cache_refused(snap, grace, ends)
    return Missing(
        pods=tuple(failing),
        pods_waiting=tuple(waiting),
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
    end = _end(snap.created, grace)
    if wanted and _counts(end, snap.now):
        return tuple(wanted), None
    if not wanted:
        return (), None
    # Once an earlier answer asked for it, a refused create is retried with a growing back-off:
    # ask for the call at the grace's end rather than wait for a late retry. A first answer
    # (every new ShardDB's) asks for none: its children are created in the next moment.
    if snap.prior_conditions and end is not None:
        ends.append(end)
    return (), end


def _seeds_refused(snap: Snapshot, grace: timedelta, ends: list[datetime]) -> tuple[int, ...]:
    """Shard counts of seed Jobs started with no pod past the grace; ``ends`` gets when the others' runs out."""
    seeds: list[int] = []
    for job in snap.seed_jobs:
        if job.podless_since is None or job.succeeded or job.failed:
            continue
        end = _end(job.podless_since, grace)
        if _counts(end, snap.now):
            seeds.append(job.shards)
        elif end is not None:
            ends.append(end)  # the Job controller retries with a back-off the hooks would not see
    return tuple(seeds)


def _cache_refused(snap: Snapshot, grace: timedelta, ends: list[datetime]) -> str | None:
    """The cache's refused create past the grace; within it, ``ends`` gets when the grace runs out."""
    cache = snap.cache
    if cache is None or cache.refused is None:
        return None
    end = _end(cache.refused_since, grace)
    if _counts(end, snap.now):
        return cache.refused
    if end is not None:
        ends.append(end)  # the ReplicaSet controller retries with no change the hooks would see
    return None


def pods_message(name: str, pods: tuple[MissingPod, ...], grace_seconds: int) -> str:
    """``shard pod demo-db-1 does not exist 120 s after the StatefulSet asked for it: read …``."""
    pod_names = [pod.name for pod in pods]
    one = len(pod_names) == 1
    subject = f"shard pod{'' if one else 's'} {listed(pod_names)} {'does' if one else 'do'} not exist"
    owners = list(dict.fromkeys(pod.statefulset or names.db_name(name) for pod in pods))
    several = len(owners) > 1
    return (
        f"{subject} {grace_seconds} s after {'their StatefulSets' if several else 'the StatefulSet'} asked for "
        f"{'it' if one else 'them'}: read `kubectl describe statefulset {' '.join(owners)}` (its FailedCreate events)"
    )


def waiting_message(pods: tuple[MissingPod, ...]) -> str:
    """``1 shard pod waiting to be created: demo-db-2``: the StatefulSet controller tried and will retry."""
    pod_names = [pod.name for pod in pods]
    return f"{len(pod_names)} shard pod{'' if len(pod_names) == 1 else 's'} waiting to be created: {listed(pod_names)}"


def children_message(name: str, children: tuple[str, ...], grace_seconds: int) -> str:
    """``StatefulSet demo-db does not exist 120 s after the ShardDB was created: read …``."""
    one = len(children) == 1
    return (
        f"{' and '.join(children)} {'does' if one else 'do'} not exist {grace_seconds} s after the ShardDB was "
        f"created: read the ShardDB's events (`kubectl describe sharddb {name}`: SyncError)"
    )


def seed_message(name: str, shards: tuple[int, ...], grace_seconds: int) -> str:
    """``seed Job demo-seed-3 has no pod 120 s after it started: read …``."""
    jobs = [names.seed_job_name(name, count) for count in shards]
    return "; ".join(
        f"seed Job {job} has no pod {grace_seconds} s after it started: "
        f"read `kubectl describe job {job}` (its FailedCreate events)"
        for job in jobs
    )


def cache_message(name: str, refused: str) -> str:
    """``cache pods cannot be created: pods "demo-cache-7c9f4-" is forbidden: …; read …``."""
    return (
        f"cache pods cannot be created: {refused}; read `kubectl describe deployment {names.cache_name(name)}` "
        "(its ReplicaFailure condition) and its ReplicaSet's FailedCreate events"
    )
