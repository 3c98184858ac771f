"""When a shard with members is ready, and what the status says of each member: pure, over Patroni's marks.

Ready is a primary's readiness, not a pod's: one member labelled primary, Ready and running, and, when
synchronous, a Ready standby streaming as its synchronous standby. The reasons a shard is not ready
are Degraded reasons of the same name (``roles`` says when each counts).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import names
from .marks import RUNNING, STREAMING, Failover, MemberPod, SyncRecord
from .shape import Plan

# Why a shard with members is not ready (``ShardHealth.reason``): the status names each, and the
# lifecycle makes each a Degraded reason of the same name (``roles`` says when).
READY = "Ready"
NO_PRIMARY = "NoPrimary"
NO_SYNC_STANDBY = "NoSyncStandby"
TWO_PRIMARIES = "TwoPrimaries"
# Not a shard's readiness but one member's: a standby of a shard with a primary that does not stream
# from it (``roles`` says when it counts).
STANDBY_NOT_STREAMING = "StandbyNotStreaming"


@dataclass(frozen=True)
class MemberState:
    """One member as the status shows it: its role label, Patroni's state and, on a standby, its lag.

    Each lag is the primary's WAL position less the standby's, in bytes, from the two pods'
    ``status`` annotations (each written by its own Patroni, up to a loop apart, so a lag that
    would be negative reads 0, as ``patronictl list`` does); None when either position is unknown.
    """

    name: str
    role: str | None = None
    state: str | None = None
    replication_state: str | None = None
    timeline: int | None = None
    receive_lag: int | None = None
    replay_lag: int | None = None

    @property
    def streams(self) -> bool:
        """Patroni says PostgreSQL runs and its WAL receiver streams: a standby that follows its primary."""
        return self.state == RUNNING and self.replication_state == STREAMING

    @property
    def patroni_state(self) -> str:
        """Patroni's own words for it, for a message: ``running, in archive recovery``, ``starting``."""
        words = [word for word in (self.state, self.replication_state) if word]
        return ", ".join(words) if words else "no status from Patroni"


def member_states(members: list[MemberPod]) -> tuple[MemberState, ...]:
    """The live members, by name, each standby's lag measured against the one live pod labelled primary.

    Two pods labelled primary leave every lag unknown: which one the standbys follow is not known
    (unless one's label is stale: ``stale_primaries``).
    """
    live = sorted((member for member in members if not member.deleting), key=lambda member: member.name)
    stale = stale_primaries(live)
    primaries = [member for member in live if member.role == names.LEADER_LABEL_VALUE and member.name not in stale]
    head = primaries[0].xlog_location if len(primaries) == 1 else None
    return tuple(
        MemberState(
            member.name,
            member.role,
            member.state,
            member.replication_state,
            member.timeline,
            None if member.role == names.LEADER_LABEL_VALUE else _lag(head, member.receive_lsn),
            None if member.role == names.LEADER_LABEL_VALUE else _lag(head, member.replay_lsn),
        )
        for member in live
    )


def _lag(head: int | None, position: int | None) -> int | None:
    if head is None or position is None:
        return None
    return max(head - position, 0)


@dataclass(frozen=True)
class ShardHealth:
    """A shard with members: ready or not, who holds which role, and why, for the status."""

    ready: bool
    reason: str
    message: str
    primary: str | None = None
    sync_standby: str | None = None
    streaming: tuple[str, ...] = ()  # standbys streaming from the primary, sync or not
    members: tuple[MemberState, ...] = ()  # every live member, for the status
    last_failover: Failover | None = None  # Patroni's last recorded promotion

    @property
    def not_streaming(self) -> tuple[MemberState, ...]:
        """With a primary: the other live members that Patroni does not say stream (cloning, stopped, diverged)."""
        if self.primary is None:
            return ()
        return tuple(member for member in self.members if member.name != self.primary and not member.streams)


def shard_health(
    shard: str,
    plan: Plan,
    members: list[MemberPod],
    sync_record: SyncRecord,
    last_failover: Failover | None = None,
) -> ShardHealth:
    """Ready: one primary, Ready and running, and, when synchronous, a Ready standby streaming as its sync standby.

    Two pods labelled primary (a label lags a failover by a loop of Patroni's) is never ready: the
    status names both, and nothing is routed by the readiness of one of them; unless one of them
    runs on an older timeline than the other (``stale_primaries``), which is then no primary at all.
    Every answer carries each member's state and the last failover, which readiness does not read.
    """
    return replace(
        _readiness(shard, plan, members, sync_record), members=member_states(members), last_failover=last_failover
    )


def stale_primaries(members: list[MemberPod]) -> frozenset[str]:
    """Members still labelled primary on an older timeline than another member labelled primary.

    A primary cut off from the API server (its node powered off or partitioned) cannot take its own
    label off, and keeps it until its pod is gone; the member Patroni promoted in its place runs on
    the next timeline. Only a label whose timeline every labelled member has written is judged:
    two on the same timeline, or one unknown, stay two primaries.
    """
    labelled = [member for member in members if member.role == names.LEADER_LABEL_VALUE]
    timelines = [member.timeline for member in labelled]
    if len(labelled) < 2 or any(timeline is None for timeline in timelines):
        return frozenset()
    newest = max(timeline for timeline in timelines if timeline is not None)
    current = [member for member in labelled if member.timeline == newest]
    if len(current) != 1:
        return frozenset()
    return frozenset(member.name for member in labelled if member.timeline != newest)


def _readiness(shard: str, plan: Plan, members: list[MemberPod], sync_record: SyncRecord) -> ShardHealth:
    live = [member for member in members if not member.deleting]
    stale = stale_primaries(live)
    live = [member for member in live if member.name not in stale]
    primaries = sorted(member.name for member in live if member.role == names.LEADER_LABEL_VALUE)
    if len(primaries) > 1:
        return ShardHealth(False, TWO_PRIMARIES, f"shard {shard}: {' and '.join(primaries)} are both labelled primary")
    primary = next((member for member in live if member.role == names.LEADER_LABEL_VALUE), None)
    if primary is None or not primary.ready or primary.state != RUNNING:
        what = "no member is primary" if primary is None else f"its primary {primary.name} is not ready yet"
        return ShardHealth(False, NO_PRIMARY, f"shard {shard}: {what}")
    streaming = tuple(
        sorted(
            member.name
            for member in live
            if member.role == names.FOLLOWER_LABEL_VALUE
            and member.ready
            and member.state == RUNNING
            and member.replication_state == STREAMING
        )
    )
    if not plan.synchronous:
        return ShardHealth(True, READY, f"shard {shard}: primary {primary.name}", primary.name, None, streaming)
    sync = next(
        (name for name in streaming if sync_record.leader == primary.name and name in sync_record.standbys), None
    )
    if sync is None:
        return ShardHealth(
            False,
            NO_SYNC_STANDBY,
            f"shard {shard}: primary {primary.name} has no streaming synchronous standby yet",
            primary.name,
            None,
            streaming,
        )
    return ShardHealth(
        True,
        READY,
        f"shard {shard}: primary {primary.name}, synchronous standby {sync}",
        primary.name,
        sync,
        streaming,
    )
