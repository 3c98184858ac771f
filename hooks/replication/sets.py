"""One shard with members as the lifecycle reads it: its StatefulSet, what Patroni's marks say of it, discovery."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..trouble.missing import MissingPod
from ..workloads import StatefulSetView
from .health import ShardHealth


@dataclass(frozen=True)
class ShardSetView:
    """A shard with members: its StatefulSet ``<name>-db-<shard>``, what Patroni's marks say of it, and discovery."""

    shard: int
    statefulset: StatefulSetView
    health: ShardHealth
    registered: bool = False  # its primary is a ready endpoint of its ``-primary`` Service
    # The last moment anything moved on the shard (its StatefulSet's spec, a member created or turning
    # (un)ready): a shard without a primary or sync standby is given the start grace from it.
    since: datetime | None = None
    missing: tuple[MissingPod, ...] = ()  # members its StatefulSet asks for and could not create
