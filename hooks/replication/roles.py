"""Shards with members whose roles are not what they must be, split by the start grace: no primary, no
synchronous standby, two pods labelled primary; and standbys of a shard with a primary that do not stream.

Patroni mends all but two primaries by itself (it elects a leader, a standby catches up, is rewound
or cloned), so they are progress for ``spec.podStartGraceSeconds``, timed from the last thing that
moved on the shard (``ShardSetView.since``). Two primaries is never progress: it counts at once.
Pure: the caller passes the clock reading in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from .. import names
from ..trouble.grace import Split, split
from .health import STANDBY_NOT_STREAMING, TWO_PRIMARIES
from .sets import ShardSetView

AT_ONCE = frozenset({TWO_PRIMARIES})


@dataclass(frozen=True)
class RoleTrouble:
    """One shard whose roles are wrong: its health's reason and message (``replication.shard_health``)."""

    shard: int
    name: str  # the shard's StatefulSet and Patroni scope, ``<name>-db-<shard>``
    reason: str
    message: str


# The shards with role trouble at one clock reading, split by the grace.
Roles = Split[RoleTrouble]


def triage(sets: Iterable[ShardSetView], parent: str, now: datetime | None, grace_seconds: int) -> Roles:
    """Which shards' role trouble counts at ``now``.

    A shard scaled to zero asks for no member and has no trouble. Without a clock reading, or
    a time the shard last moved, every trouble counts.
    """
    found: list[tuple[RoleTrouble, datetime | None]] = []
    for each in sets:
        health = each.health
        if health.ready or each.statefulset.replicas == 0:
            continue
        trouble = RoleTrouble(each.shard, names.shard_name(parent, each.shard), health.reason, health.message)
        found.append((trouble, each.since if health.reason not in AT_ONCE else None))
    return split(found, now, grace_seconds)


def standbys(sets: Iterable[ShardSetView], parent: str, now: datetime | None, grace_seconds: int) -> Roles:
    """Which members of a shard with a primary count at ``now`` as standbys that do not stream, one trouble each.

    A member pod that exists, is not the primary, and that Patroni does not say streams: it is
    being cloned, starting, stopped, or cannot follow the primary's timeline. Past the grace it
    is named with Patroni's state, whether or not the shard is ready without it.
    """
    found: list[tuple[RoleTrouble, datetime | None]] = []
    for each in sets:
        if each.statefulset.replicas == 0:
            continue
        scope = names.shard_name(parent, each.shard)
        for member in each.health.not_streaming:
            message = (
                f"shard {scope}: standby {member.name} does not stream from primary {each.health.primary} "
                f"(Patroni: {member.patroni_state})"
            )
            found.append((RoleTrouble(each.shard, scope, STANDBY_NOT_STREAMING, message), each.since))
    return split(found, now, grace_seconds)
