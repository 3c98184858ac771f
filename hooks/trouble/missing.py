"""What the ShardDB asked for and does not have: shard pods, children, a seed Job's pod, the cache's pods.

Admission (a ResourceQuota, Pod Security, a LimitRange, a webhook) may refuse a shard pod or a
child outright. The refusal is written only as an event (the StatefulSet controller's
``FailedCreate``, Metacontroller's ``SyncError``), which the hooks cannot read; what they can
read is that the object does not exist. That counts once it has lasted the start grace, timed
from when the hooks can know it was asked for: a StatefulSet's last spec write for its pods, the
ShardDB's creation for a child.
Found here while observing; judged against the grace by the lifecycle (``hooks/lifecycle/absent.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from .. import names
from ..hook_request import Pod
from ..spec import MAX_SHARDS
from .words import listed


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
