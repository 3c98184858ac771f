"""What the ShardDB asked for and does not have, judged against the start grace at one clock reading.

``hooks/trouble/missing.py`` finds absent shard pods while observing; this judges them, and the
children, seed pods and cache pods asked for, once they have lasted ``spec.podStartGraceSeconds``:
timed from when the hooks can know each was asked for (a StatefulSet's last spec write for its
pods, the ShardDB's creation for a child). Pure: nothing here deletes or changes a child.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .. import kinds, names
from ..snapshot import Snapshot
from ..trouble import grace as graces
from ..trouble.grace import split
from ..trouble.missing import MissingPod


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


def find(snap: Snapshot, grace_seconds: int, *, children: bool, shard_sets: tuple[int, ...] | None = None) -> Missing:
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
    end = graces.end(snap.created, grace)
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
        end = graces.end(job.podless_since, grace)
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
    end = graces.end(cache.refused_since, grace)
    if _counts(end, snap.now):
        return cache.refused
    if end is not None:
        ends.append(end)  # the ReplicaSet controller retries with no change the hooks would see
    return None
