"""What Patroni marks on a shard's objects, read: its member pods' role label and ``status`` annotation,
the ``-sync`` and ``-config`` ConfigMaps it writes, and the endpoints of the shard's ``-primary`` Service.

Patroni alone writes these; the hooks only read them. Anything absent or malformed reads as unknown,
never as an error: a member Patroni has not reached yet is simply not ready.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from .. import names

# Patroni's words for a member's PostgreSQL (``state``) and a standby's WAL receiver (``replication_state``).
RUNNING = "running"
STREAMING = "streaming"


@dataclass(frozen=True)
class MemberPod:
    """One observed member pod, as far as readiness and the status read it."""

    name: str
    role: str | None = None  # names.ROLE_LABEL, as Patroni set it
    ready: bool = False  # the pod's Ready condition is True
    deleting: bool = False  # it has a deletionTimestamp
    state: str | None = None  # Patroni's status annotation: PostgreSQL's state ("running", ...)
    replication_state: str | None = None  # and, on a standby, "streaming" or "in archive recovery"
    timeline: int | None = None  # the timeline PostgreSQL runs on, as Patroni last read it
    # WAL positions in bytes: the primary's current one; on a standby, the larger of the next two.
    xlog_location: int | None = None
    receive_lsn: int | None = None  # a standby's last WAL received from the primary
    replay_lsn: int | None = None  # and the last it replayed, which its readers see

    @staticmethod
    def from_pod(pod: dict[str, object]) -> MemberPod:
        """From a pod as the API server returns it; anything missing or malformed reads as not ready."""
        meta = _mapping(pod.get("metadata"))
        labels = _mapping(meta.get("labels"))
        annotations = _mapping(meta.get("annotations"))
        conditions = _mapping(pod.get("status")).get("conditions")
        ready = isinstance(conditions, list) and any(
            _mapping(each).get("type") == "Ready" and _mapping(each).get("status") == "True" for each in conditions
        )
        status = _patroni_status(annotations.get(names.STATUS_ANNOTATION))
        role = labels.get(names.ROLE_LABEL)
        return MemberPod(
            name=str(meta.get("name", "")),
            role=role if isinstance(role, str) else None,
            ready=ready,
            deleting=meta.get("deletionTimestamp") is not None,
            state=_text(status.get("state")),
            replication_state=_text(status.get("replication_state")),
            timeline=_position(status.get("timeline")),
            xlog_location=_position(status.get("xlog_location")),
            receive_lsn=_position(status.get("receive_lsn")),
            replay_lsn=_position(status.get("replay_lsn")),
        )


@dataclass(frozen=True)
class Failover:
    """The last promotion Patroni recorded for a shard: a failover or a switchover (its history does not tell which).

    ``timeline`` is the one the new primary began (``patronictl history`` lists the one it ended,
    one less); ``reason`` is PostgreSQL's words from its timeline history file, as Patroni copies them.
    """

    timeline: int
    reason: str
    at: datetime | None = None
    new_primary: str | None = None

    @staticmethod
    def from_config_map(config_map: dict[str, object] | None) -> Failover | None:
        """From the ``history`` annotation of ``<scope>-config``; absent, empty or in any way malformed reads as none.

        Patroni writes a JSON list of lines ``[timeline, lsn, reason]``, the last of them (and any it
        could time) with ``timestamp`` (ISO 8601, with its offset) and ``new leader`` appended.
        """
        annotations = _mapping(_mapping((config_map or {}).get("metadata")).get("annotations"))
        text = annotations.get(names.HISTORY_ANNOTATION)
        if not isinstance(text, str):
            return None
        try:
            lines = json.loads(text)
        except ValueError:
            return None
        if not isinstance(lines, list) or not lines or not isinstance(lines[-1], list):
            return None
        return _promotion(lines[-1])


def _promotion(line: list[object]) -> Failover | None:
    if not 3 <= len(line) <= 5:
        return None
    timeline, lsn, reason, *rest = line
    ended = _position(timeline)
    if ended is None or ended < 1 or _position(lsn) is None or not isinstance(reason, str):
        return None
    at: datetime | None = None
    if rest:
        at = _timestamp(rest[0])
        if at is None:
            return None
    new_primary: str | None = None
    if len(rest) == 2:
        new_primary = rest[1] if isinstance(rest[1], str) and rest[1] else None
        if new_primary is None:
            return None
    return Failover(ended + 1, reason, at, new_primary)


def _timestamp(value: object) -> datetime | None:
    """Patroni's ``isoformat()`` of the history file's time, in its local zone: aware, or malformed."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


@dataclass(frozen=True)
class SyncRecord:
    """Patroni's ``<scope>-sync`` ConfigMap, read (never a child): the leader that wrote it and its sync standbys."""

    leader: str | None = None
    standbys: frozenset[str] = frozenset()

    @staticmethod
    def from_config_map(config_map: dict[str, object] | None) -> SyncRecord:
        """Its annotations ``leader`` and ``sync_standby`` (comma-separated member names); absent reads as none."""
        annotations = _mapping(_mapping((config_map or {}).get("metadata")).get("annotations"))
        standbys = _text(annotations.get("sync_standby")) or ""
        return SyncRecord(
            leader=_text(annotations.get("leader")),
            standbys=frozenset(name for name in standbys.split(",") if name),
        )


@dataclass(frozen=True)
class Endpoint:
    """One endpoint of an EndpointSlice: the pod it targets and its ready condition (unset counts as ready)."""

    pod: str | None
    ready: bool | None = None


def _mapping(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


# Patroni reads each position as PostgreSQL's bigint: a larger number is none it wrote, and would not fit the status.
_POSITION_LIMIT = 2**63


def _position(value: object) -> int | None:
    """A count Patroni writes as a JSON integer (a WAL position, a timeline); anything else reads as unknown."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _POSITION_LIMIT
    return value if ok and isinstance(value, int) else None


def _patroni_status(text: object) -> dict[str, object]:
    """Patroni's member data, JSON in the pod's ``status`` annotation; unreadable reads as empty."""
    if not isinstance(text, str):
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return _mapping(data)
