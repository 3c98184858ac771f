"""What ``spec.replication`` means for a ShardDB, and when the hooks refuse it: pure, typed, no I/O.

One member is today's shard, a single PostgreSQL, rendered as it always was. Two or three
run each shard under Patroni (``hooks/patroni.py`` renders its objects), which alone decides
who is primary: the hooks never promote, fence or elect.

The refusals keep data safe. A refused ShardDB keeps the replication shape its shards already
have (``Outcome.plan``), or gets no shards at all when none exist yet; a refusal never asks for
a child to go away. The lifecycle (``hooks/lifecycle/gates.py``) reports a refusal as Degraded.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, replace
from datetime import datetime

from . import names
from .spec import MAX_MEMBERS, ShardDBSpec

MEMBERS_FIELD = "spec.replication.members"
SYNCHRONOUS_FIELD = "spec.replication.synchronous"
# libpq's password variable: refused in the members' env (``_password_refusal`` says why).
PGPASSWORD = "PGPASSWORD"
PGPASSWORD_FIELD = f"spec.db.env[{PGPASSWORD}]"

# Recorded on each shard's StatefulSet, so the shape a shard was made with is read from the
# cluster, never from a status that may lag (``Observed.from_annotations``).
MEMBERS_ANNOTATION = f"{names.GROUP}/members"
SYNCHRONOUS_ANNOTATION = f"{names.GROUP}/synchronous"


class Engine(enum.Enum):
    """The database a shard image runs, as far as the hooks can tell."""

    POSTGRESQL = "PostgreSQL"
    MARIADB = "MariaDB"


# Repository names of images that run MariaDB or MySQL: the hooks' defaults are PostgreSQL's,
# and an image is PostgreSQL unless its name says otherwise (a Patroni image may be named anything).
_MARIADB_NAMES = ("mariadb", "mysql")


def engine(db_image: str) -> Engine:
    """The engine ``db_image`` runs, read from its repository's last path segment (tag and digest dropped)."""
    repository = db_image.split("@", 1)[0]
    last = repository.rsplit("/", 1)[-1]
    last = last.split(":", 1)[0].lower()
    return Engine.MARIADB if any(word in last for word in _MARIADB_NAMES) else Engine.POSTGRESQL


@dataclass(frozen=True)
class Plan:
    """The replication shape to render: ``members`` copies of each shard."""

    members: int
    synchronous: bool

    @property
    def patroni(self) -> bool:
        """Two members or more: Patroni runs each shard; one member is today's shard, untouched."""
        return self.members >= 2

    @property
    def synchronous_standbys(self) -> int:
        """How many standbys each commit waits for: one, when synchronous (Patroni's synchronous_node_count)."""
        return 1 if self.patroni and self.synchronous else 0


SINGLE_COPY = Plan(members=1, synchronous=False)


@dataclass(frozen=True)
class Observed:
    """The replication shape the running shards show.

    ``single_copy``: today's StatefulSet ``<name>-db`` exists (its volumes hold the data, even
    scaled to zero). ``members``/``synchronous``: what the per-shard StatefulSets record, None
    when there is none.
    """

    single_copy: bool = False
    members: int | None = None
    synchronous: bool | None = None

    @property
    def has_shards(self) -> bool:
        return self.single_copy or self.members is not None

    @property
    def plan(self) -> Plan | None:
        """The shape the shards have now; None when no shard exists."""
        if self.members is not None:
            return Plan(self.members, bool(self.synchronous))
        return SINGLE_COPY if self.single_copy else None

    @staticmethod
    def from_annotations(single_copy: bool, annotations: list[dict[str, str]]) -> Observed:
        """From the annotations of every per-shard StatefulSet observed; a missing or bad record counts as none.

        Shards made together carry one record; should two disagree, the largest member count
        is kept, so a refusal never reads a shard as smaller than it is.
        """
        members = [names.count(each.get(MEMBERS_ANNOTATION)) for each in annotations]
        members = [count for count in members if count >= 2]
        if not members:
            return Observed(single_copy=single_copy)
        synchronous = any(each.get(SYNCHRONOUS_ANNOTATION) == "true" for each in annotations)
        return Observed(single_copy=single_copy, members=max(members), synchronous=synchronous)


UNSUPPORTED = "ReplicationUnsupported"
NAME_TOO_LONG = "ReplicationNameTooLong"
CHANGE_REFUSED = "ReplicationChangeRefused"
PASSWORD_REFUSED = "ReplicationPasswordRefused"
# Every reason a refusal gives: Degraded's reason, each documented (``docs/api/status.md``).
REFUSAL_REASONS = (UNSUPPORTED, NAME_TOO_LONG, CHANGE_REFUSED, PASSWORD_REFUSED)


@dataclass(frozen=True)
class Refusal:
    """Why the spec's replication is not applied, for a Degraded condition (reason, message naming the field)."""

    reason: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """What to render (None: no shard at all) and, when the spec is not honoured, why.

    ``hold``: each shard with members keeps the member template it runs, and no new shard is made,
    whatever else the spec asks; set when rendering the spec would start members that cannot clone.
    """

    plan: Plan | None
    refusal: Refusal | None = None
    hold: bool = False


def record(plan: Plan) -> dict[str, str]:
    """The annotations a per-shard StatefulSet carries, read back by ``Observed.from_annotations``."""
    return {MEMBERS_ANNOTATION: str(plan.members), SYNCHRONOUS_ANNOTATION: "true" if plan.synchronous else "false"}


MAX_MEMBER_ORDINAL = MAX_MEMBERS - 1
PRIMARY = "primary"
STANDBY = "standby"


def shard_name(parent: str, shard: int) -> str:
    """A shard with members: its StatefulSet, headless Service, budget and Patroni scope share this name.

    It is also the name of today's shard pod ``shard``: no clash, as a ShardDB is one shape or the other.
    """
    return f"{names.db_name(parent)}-{shard}"


def shard_of(parent: str, name: str) -> int | None:
    """The shard a per-shard object is named for (``<name>-db-<shard>``); None for any other name."""
    return names.shard_ordinal(parent, name)


def member_name(parent: str, shard: int, member: int) -> str:
    """Member ``member`` of a shard: the StatefulSet's pod, and Patroni's member name."""
    return f"{shard_name(parent, shard)}-{member}"


def role_service_name(parent: str, shard: int, role: str) -> str:
    """``<shard>-primary`` reaches the shard's primary only; ``<shard>-standby`` its standbys."""
    return f"{shard_name(parent, shard)}-{role}"


def primary_hosts(parent: str, shards: int) -> str:
    """Each shard's primary Service, so the seed reaches whichever member Patroni made primary."""
    return " ".join(role_service_name(parent, shard, PRIMARY) for shard in range(shards))


def sync_config_map(parent: str, shard: int) -> str:
    """Patroni's ``<scope>-sync`` ConfigMap of a shard: read by name, never a child."""
    return f"{shard_name(parent, shard)}-sync"


def config_config_map(parent: str, shard: int) -> str:
    """Patroni's ``<scope>-config`` ConfigMap of a shard, whose ``history`` annotation records each promotion."""
    return f"{shard_name(parent, shard)}-config"


# Patroni's ConfigMaps of a shard that the hooks watch, by name: they change rarely and say its state
# is there (the finalize hook removes it). Never ``-leader``: Patroni renews it every loop.
WATCHED_STATE = ("config", "sync", "failover")


def watched_config_maps(parent: str, shards: int) -> list[str]:
    """Each shard's ``-config``, ``-sync`` and ``-failover`` ConfigMap: read by name, never children."""
    return [f"{shard_name(parent, shard)}-{suffix}" for shard in range(shards) for suffix in WATCHED_STATE]


def _replicated_names(parent: str) -> list[tuple[str, str, int]]:
    """Each name Kubernetes derives from ``parent`` once shards have members, at its longest, with its limit.

    Longer than today's (``names.derived``): each shard is a StatefulSet, whose pods carry
    ``controller-revision-hash=<name>-db-<shard>-<hash>``. Today's limit stays for one member.
    """
    last = names.MAX_SHARDS - 1
    shard = shard_name(parent, last)
    return [
        ("a shard's StatefulSet name", shard, names.DNS_LABEL_MAX),
        (
            "a member pod's label controller-revision-hash",
            f"{shard}-{'x' * names.REVISION_HASH_MAX}",
            names.LABEL_VALUE_MAX,
        ),
        ("a member pod's hostname", member_name(parent, last, MAX_MEMBER_ORDINAL), names.DNS_LABEL_MAX),
        ("a shard's standby Service name", role_service_name(parent, last, STANDBY), names.DNS_LABEL_MAX),
    ]


MAX_REPLICATED_NAME_LENGTH = max(
    length
    for length in range(1, names.MAX_NAME_LENGTH + 1)
    if all(len(value) <= limit for _, value, limit in _replicated_names("x" * length))
)


def decide(parent: str, spec: ShardDBSpec, observed: Observed) -> Outcome:
    """The replication to render for ``spec``, given the shards that exist.

    Refused, most pressing first: an engine Patroni does not run; a name too long for the
    per-shard names; any change of shape once shards exist, except growing 2 members to 3.
    Going from one member to two would have to move a single copy's data into a cluster
    Patroni bootstraps itself; the hooks cannot do that safely, so they say so instead.
    Last, ``PGPASSWORD`` in the members' env (``_password_refusal``): a shape refusal's message
    comes first, but the members are held whenever the variable is asked of them.
    """
    outcome = _decide_shape(parent, spec, observed)
    if not sets_pgpassword(spec):
        return outcome
    kept = observed.plan
    if kept is not None and kept.patroni:
        # Shards with members run on as they are: an edit of the spec rolls the members
        # (``template_choice``), so without the hold the next one would give them the variable,
        # and a standby restarted with it would not stream either (its walreceiver is libpq too,
        # and Patroni passes its environment to PostgreSQL: read in its source, not run); none is
        # rolled, grown or added.
        return Outcome(kept, outcome.refusal or _password_refusal(kept.members), hold=True)
    if kept is None and spec.replication.members >= 2:
        return Outcome(None, outcome.refusal or _password_refusal(spec.replication.members))
    return outcome  # single copies: PGPASSWORD is harmless there, and the default seed reads it


def sets_pgpassword(spec: ShardDBSpec) -> bool:
    """``spec.db.env`` names ``PGPASSWORD`` (a value or a reference alike: the members would get it)."""
    return any(isinstance(var, dict) and var.get("name") == PGPASSWORD for var in spec.db.env)


def _password_refusal(members: int) -> Refusal:
    """Refused rather than dropped from the members' env: the hooks never quietly edit what a user set.

    Seen with Patroni 4.1.5 (the Patroni tier's ``test_pgpassword.py``): Patroni gives its
    ``pg_basebackup`` its whole environment plus a password file for the replication user, and
    libpq takes ``PGPASSWORD`` before any password file, so a standby logs in as the replication
    user with the superuser's password and never clones. By Patroni's source the same holds for
    ``pg_rewind`` and for a standby's walreceiver (PostgreSQL gets Patroni's environment too).
    Keeping the variable for the seed Job alone would make the members' env differ from the spec
    without a word, and break a user's own scripts in the member that read it;
    ``POSTGRES_PASSWORD`` already gives the default seed the same password, and no libpq client in
    a member reads it.
    """
    return Refusal(
        PASSWORD_REFUSED,
        f"{PGPASSWORD_FIELD} is set, but with {MEMBERS_FIELD} {members} every member would get it, and "
        "libpq reads it before Patroni's password file: a standby's pg_basebackup would log in as the "
        "replication user with it and never clone; remove it and set POSTGRES_PASSWORD (read by the "
        "default seed) instead; shards that exist keep running as they are",
    )


def _decide_shape(parent: str, spec: ShardDBSpec, observed: Observed) -> Outcome:
    """``decide`` for the shape alone: the engine, the name's length and changes of members or synchronous."""
    asked = Plan(spec.replication.members, spec.replication.synchronous if spec.replication.members >= 2 else False)
    kept = observed.plan
    if asked.patroni and engine(spec.db_image) is not Engine.POSTGRESQL:
        return Outcome(
            kept,
            Refusal(
                UNSUPPORTED,
                f"{MEMBERS_FIELD} is {asked.members}, but {spec.db_image} runs "
                f"{engine(spec.db_image).value}: standbys are run by Patroni, for PostgreSQL only; "
                "set it to 1",
            ),
        )
    if asked.patroni and len(parent) > MAX_REPLICATED_NAME_LENGTH:
        return Outcome(
            kept,
            Refusal(
                NAME_TOO_LONG,
                f"{MEMBERS_FIELD} is {asked.members}, but metadata.name has {len(parent)} characters; "
                f"with members at most {MAX_REPLICATED_NAME_LENGTH} fit, else "
                f"{_binding_limit()} would exceed its limit",
            ),
        )
    if kept is None or kept == asked or _grows_safely(kept, asked):
        return Outcome(asked)
    return Outcome(kept, _change_refused(kept, asked))


def _grows_safely(kept: Plan, asked: Plan) -> bool:
    """2 → 3 adds a standby that Patroni clones from the primary: no member's data is touched."""
    return kept.patroni and asked.members > kept.members and asked.synchronous == kept.synchronous


def _change_refused(kept: Plan, asked: Plan) -> Refusal:
    if kept.members != asked.members:
        if not kept.patroni:
            why = (
                "the shards hold their data as single copies, and moving it into a cluster Patroni "
                "bootstraps is not done in place"
            )
        elif asked.patroni:
            why = "a standby is only ever added (2 to 3); removing one is not done in place"
        else:
            why = "the shards run under Patroni, and going back to single copies is not done in place"
        return Refusal(
            CHANGE_REFUSED,
            f"{MEMBERS_FIELD} may not change from {kept.members} to {asked.members} once the shards "
            f"exist: {why}; the shards keep {kept.members} member{'s' if kept.members > 1 else ''} "
            "and every volume is kept",
        )
    return Refusal(
        CHANGE_REFUSED,
        f"{SYNCHRONOUS_FIELD} may not change from {str(kept.synchronous).lower()} to "
        f"{str(asked.synchronous).lower()} once the shards exist: Patroni reads it only when a shard's "
        "cluster is first bootstrapped",
    )


def _binding_limit() -> str:
    too_long = "x" * (MAX_REPLICATED_NAME_LENGTH + 1)
    return next(what for what, value, limit in _replicated_names(too_long) if len(value) > limit)


# --- what Patroni marks on the member pods, and when a shard is ready -------------------------

# Patroni's kubernetes DCS (patroni/dcs/kubernetes.py, 4.1): the members of a scope are the pods
# matching its ``labels`` plus ``scope_label=<scope>``; it patches its own pod's ``role_label`` to
# ``leader_label_value`` ("primary" by default since Patroni 4; "master" before) on the leader and
# ``follower_label_value`` ("replica") on a running standby, removes it otherwise, and writes its
# member data as JSON in the pod annotation ``status``. Ours are namespaced, so they never meet
# another application's ``role`` or ``cluster-name``.
SCOPE_LABEL = f"{names.GROUP}/shard"
ROLE_LABEL = f"{names.GROUP}/role"
LEADER_LABEL_VALUE = "primary"
FOLLOWER_LABEL_VALUE = "replica"
STATUS_ANNOTATION = "status"
HISTORY_ANNOTATION = "history"  # on ``<scope>-config``: each promotion's timeline, position, reason and time
RUNNING = "running"
STREAMING = "streaming"

# Why a shard with members is not ready (``ShardHealth.reason``): the status names each, and the
# lifecycle makes each a Degraded reason of the same name (``hooks/trouble/roles.py`` says when).
READY = "Ready"
NO_PRIMARY = "NoPrimary"
NO_SYNC_STANDBY = "NoSyncStandby"
TWO_PRIMARIES = "TwoPrimaries"
# Not a shard's readiness but one member's: a standby of a shard with a primary that does not stream
# from it (``hooks/trouble/roles.py`` says when it counts).
STANDBY_NOT_STREAMING = "StandbyNotStreaming"


@dataclass(frozen=True)
class MemberPod:
    """One observed member pod, as far as readiness and the status read it."""

    name: str
    role: str | None = None  # ROLE_LABEL, as Patroni set it
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
        status = _patroni_status(annotations.get(STATUS_ANNOTATION))
        role = labels.get(ROLE_LABEL)
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

    Two pods labelled primary leave every lag unknown: which one the standbys follow is not known.
    """
    live = sorted((member for member in members if not member.deleting), key=lambda member: member.name)
    primaries = [member for member in live if member.role == LEADER_LABEL_VALUE]
    head = primaries[0].xlog_location if len(primaries) == 1 else None
    return tuple(
        MemberState(
            member.name,
            member.role,
            member.state,
            member.replication_state,
            member.timeline,
            None if member.role == LEADER_LABEL_VALUE else _lag(head, member.receive_lsn),
            None if member.role == LEADER_LABEL_VALUE else _lag(head, member.replay_lsn),
        )
        for member in live
    )


def _lag(head: int | None, position: int | None) -> int | None:
    if head is None or position is None:
        return None
    return max(head - position, 0)


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
        text = annotations.get(HISTORY_ANNOTATION)
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
    status names both, and nothing is routed by the readiness of one of them. Every answer carries
    each member's state and the last failover, which readiness does not read.
    """
    return replace(
        _readiness(shard, plan, members, sync_record), members=member_states(members), last_failover=last_failover
    )


def _readiness(shard: str, plan: Plan, members: list[MemberPod], sync_record: SyncRecord) -> ShardHealth:
    live = [member for member in members if not member.deleting]
    primaries = sorted(member.name for member in live if member.role == LEADER_LABEL_VALUE)
    if len(primaries) > 1:
        return ShardHealth(False, TWO_PRIMARIES, f"shard {shard}: {' and '.join(primaries)} are both labelled primary")
    primary = next((member for member in live if member.role == LEADER_LABEL_VALUE), None)
    if primary is None or not primary.ready or primary.state != RUNNING:
        what = "no member is primary" if primary is None else f"its primary {primary.name} is not ready yet"
        return ShardHealth(False, NO_PRIMARY, f"shard {shard}: {what}")
    streaming = tuple(
        sorted(
            member.name
            for member in live
            if member.role == FOLLOWER_LABEL_VALUE
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


@dataclass(frozen=True)
class Endpoint:
    """One endpoint of an EndpointSlice: the pod it targets and its ready condition (unset counts as ready)."""

    pod: str | None
    ready: bool | None = None


def registered(primary: str | None, endpoints: list[Endpoint]) -> bool:
    """The shard's primary is a ready endpoint of its ``<shard>-primary`` Service, so clients and the cache reach it."""
    return primary is not None and any(each.pod == primary and each.ready is not False for each in endpoints)


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
