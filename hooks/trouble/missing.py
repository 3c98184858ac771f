"""What the ShardDB asked for and does not have: shard pods, children, a seed Job's pod, the cache's pods.

Admission (a ResourceQuota, Pod Security, a LimitRange, a webhook) may refuse a shard pod or a
child outright. The refusal is written only as an event (the StatefulSet controller's
``FailedCreate``, Metacontroller's ``SyncError``), which the hooks cannot read; what they can
read is that the object does not exist. That counts once it has lasted the start grace, timed
from when the hooks can know it was asked for: a StatefulSet's last spec write for its pods, the
ShardDB's creation for a child.
Found here while observing; judged against the grace by ``hooks/lifecycle/grace.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from .. import names
from ..hook_request import Pod
from ..spec import MAX_SHARDS


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
