"""What the ShardDB asked for and does not have, and pods whose node is lost.

Admission (a ResourceQuota, Pod Security, a LimitRange, a webhook) may refuse a shard pod or a
child outright. The refusal is written only as an event (the StatefulSet controller's
``FailedCreate``, Metacontroller's ``SyncError``), which the hooks cannot read; what they can
read is that the object does not exist. That counts once it has lasted the start grace, timed
from when the hooks can know it was asked for: a StatefulSet's last spec write for its pods, the
ShardDB's creation for a child. A pod on a node that stopped reporting shows it in its own
status, and counts at once (the node lifecycle controller has already waited its grace).
Pure: the caller passes the clock reading in; nothing here deletes or changes a child.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from . import kinds, names
from .grace import NOUNS, SHOWN
from .snapshot import LostPod, MissingPod, Snapshot


@dataclass(frozen=True)
class Absent:
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


def find(snap: Snapshot, grace_seconds: int, *, children: bool) -> Absent:
    """Missing shard pods, and (with ``children``: not while frozen) missing children, at ``snap.now``.

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
    absent: list[str] = []
    holds: datetime | None = None
    if children and snap.created is not None:
        wanted = []
        if snap.statefulset is None:
            wanted.append(f"{kinds.STATEFULSET.kind} {names.db_name(snap.name)}")
        if not snap.service:
            wanted.append(f"{kinds.SERVICE.kind} {names.db_name(snap.name)}")
        end = _end(snap.created, grace)
        if wanted and _counts(end, now):
            absent = wanted
        elif wanted:
            holds = end
            # Once an earlier answer asked for it, a refused create is retried with a growing back-off:
            # ask for the call at the grace's end rather than wait for a late retry. A first answer
            # (every new ShardDB's) asks for none: its children are created in the next moment.
            if snap.prior_conditions and end is not None:
                ends.append(end)
    seeds: list[int] = []
    for job in snap.seed_jobs:
        if job.podless_since is None or job.succeeded or job.failed:
            continue
        end = _end(job.podless_since, grace)
        if _counts(end, now):
            seeds.append(job.shards)
        elif end is not None:
            ends.append(end)  # the Job controller retries with a back-off the hooks would not see
    refused = None
    cache = snap.cache
    if cache is not None and cache.refused is not None:
        end = _end(cache.refused_since, grace)
        if _counts(end, now):
            refused = cache.refused
        elif end is not None:
            ends.append(end)  # the ReplicaSet controller retries with no change the hooks would see
    return Absent(
        pods=tuple(failing),
        pods_waiting=tuple(waiting),
        children=tuple(absent),
        cache_refused=refused,
        seed_refused=tuple(seeds),
        recheck_at=min(ends, default=None),
        holds_until=holds,
    )


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def pods_message(name: str, pods: tuple[MissingPod, ...], grace_seconds: int) -> str:
    """``shard pod demo-db-1 does not exist 120 s after the StatefulSet asked for it: read …``."""
    listed = [pod.name for pod in pods]
    one = len(listed) == 1
    subject = f"shard pod{'' if one else 's'} {_listed(listed)} {'does' if one else 'do'} not exist"
    db = names.db_name(name)
    return (
        f"{subject} {grace_seconds} s after the StatefulSet asked for {'it' if one else 'them'}: "
        f"read `kubectl describe statefulset {db}` (its FailedCreate events)"
    )


def waiting_message(pods: tuple[MissingPod, ...]) -> str:
    """``1 shard pod waiting to be created: demo-db-2``: the StatefulSet controller tried and will retry."""
    listed = [pod.name for pod in pods]
    return f"{len(listed)} shard pod{'' if len(listed) == 1 else 's'} waiting to be created: {_listed(listed)}"


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


def _on_node(pods: list[LostPod]) -> str:
    by_noun: dict[str, list[str]] = {}
    for pod in pods:
        by_noun.setdefault(NOUNS.get(pod.component, pod.component or "other"), []).append(pod.name)
    return ", ".join(f"{noun} {_listed(listed)}" for noun, listed in by_noun.items())


def lost_message(pods: tuple[LostPod, ...]) -> str:
    """Per lost node, the condition that shows it and the shards and cache pods on it."""
    nodes: dict[str, list[LostPod]] = {}
    for pod in pods:
        nodes.setdefault(pod.node, []).append(pod)
    return "; ".join(
        f"node {node} is lost, as its pods show ({on[0].evidence}): on it {_on_node(on)}; "
        f"read `kubectl describe node {node}`"
        for node, on in nodes.items()
    )


def blocked_message(pods: tuple[LostPod, ...], component: str) -> str:
    """What a stopping step waits for on a lost node, and what a person may do (empty if nothing)."""
    blocking = [pod for pod in pods if pod.component == component]
    if not blocking:
        return ""
    nodes = sorted({pod.node for pod in blocking})
    listed = _listed([pod.name for pod in blocking])
    where = f"node{'' if len(nodes) == 1 else 's'} {', '.join(nodes)}"
    return (
        f"{listed} {'is' if len(blocking) == 1 else 'are'} on {where}, which is lost ({blocking[0].evidence}): "
        f"once the node is known to be gone, taint it `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute` "
        f"or `kubectl delete pod <pod> --grace-period=0 --force`"
    )
