"""Shards with members whose roles are not what they must be: no primary, no synchronous standby, two pods
labelled primary; and standbys of a shard with a primary that do not stream. Each with when it began.

Patroni mends all but two primaries by itself (it elects a leader, a standby catches up, is rewound
or cloned), so they are progress for ``spec.podStartGraceSeconds``, timed from the last thing that
moved on the shard (``ShardSetView.since``). Two primaries is never progress: it begins at no time,
and counts at once. The lifecycle judges them against the grace (``hooks/lifecycle/grace.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from .. import names
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


@dataclass(frozen=True)
class Found:
    """Every shard's role trouble, each with when it began (None: it counts at once)."""

    unready: list[tuple[RoleTrouble, datetime | None]]  # no primary, no sync standby, two primaries
    standbys: list[tuple[RoleTrouble, datetime | None]]  # a standby of a shard with a primary that does not stream


def found(sets: Iterable[ShardSetView], parent: str) -> Found:
    """Each shard whose roles are wrong, and each standby that does not stream, timed from when its shard last moved.

    A shard scaled to zero asks for no member and has no trouble. A member pod that exists, is not
    the primary, and that Patroni does not say streams is being cloned, starting, stopped, or cannot
    follow the primary's timeline: past the grace it is named with Patroni's state, whether or not
    the shard is ready without it.
    """
    out = Found([], [])
    for each in sets:
        if each.statefulset.replicas == 0:
            continue
        health = each.health
        scope = names.shard_name(parent, each.shard)
        if not health.ready:
            trouble = RoleTrouble(each.shard, scope, health.reason, health.message)
            out.unready.append((trouble, each.since if health.reason not in AT_ONCE else None))
        for member in health.not_streaming:
            message = (
                f"shard {scope}: standby {member.name} does not stream from primary {health.primary} "
                f"(Patroni: {member.patroni_state})"
            )
            out.standbys.append((RoleTrouble(each.shard, scope, STANDBY_NOT_STREAMING, message), each.since))
    return out
