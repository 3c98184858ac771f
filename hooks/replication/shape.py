"""What ``spec.replication`` asks for, given the shards that exist, and when the hooks refuse it: pure, typed, no I/O.

One member is today's shard, a single PostgreSQL, rendered as it always was. Two or three run each
shard under Patroni (``objects`` renders its objects), which alone decides who is primary: the hooks
never promote, fence or elect.

The refusals keep data safe. A refused ShardDB keeps the replication shape its shards already
have (``Outcome.plan``), or gets no shards at all when none exist yet; a refusal never asks for
a child to go away. The lifecycle (``hooks/lifecycle/gates.py``) reports a refusal as Degraded.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from .. import names
from ..spec import ShardDBSpec

MEMBERS_FIELD = "spec.replication.members"
SYNCHRONOUS_FIELD = "spec.replication.synchronous"
STRICT_FIELD = "spec.replication.strict"
# libpq's password variable: refused in the members' env (``_password_refusal`` says why).
PGPASSWORD = "PGPASSWORD"
PGPASSWORD_FIELD = f"spec.db.env[{PGPASSWORD}]"
# What every member needs from the user's Secret, through ``spec.db.env``: the passwords Patroni logs in to
# PostgreSQL with (every address asks one), and the credentials its REST API asks of each unsafe call
# (switchover, failover, restart, reinitialize, failsafe, a config change). Patroni reads each from its
# environment; patronictl and Patroni's own calls to its peers send the REST API's.
CREDENTIALS = (
    "PATRONI_SUPERUSER_PASSWORD",
    "PATRONI_REPLICATION_PASSWORD",
    "PATRONI_RESTAPI_USERNAME",
    "PATRONI_RESTAPI_PASSWORD",
)


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
    strict: bool = False  # synchronous only: writes wait while no synchronous standby runs

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
    strict: bool = False

    @property
    def has_shards(self) -> bool:
        return self.single_copy or self.members is not None

    @property
    def plan(self) -> Plan | None:
        """The shape the shards have now; None when no shard exists."""
        if self.members is not None:
            return Plan(self.members, bool(self.synchronous), self.strict)
        return SINGLE_COPY if self.single_copy else None

    @staticmethod
    def from_annotations(single_copy: bool, annotations: list[dict[str, str]]) -> Observed:
        """From the annotations of every per-shard StatefulSet observed; a missing or bad record counts as none.

        Shards made together carry one record; should two disagree, the largest member count
        is kept, so a refusal never reads a shard as smaller than it is.
        """
        members = [names.count(each.get(names.MEMBERS_ANNOTATION)) for each in annotations]
        members = [count for count in members if count >= 2]
        if not members:
            return Observed(single_copy=single_copy)
        synchronous = any(each.get(names.SYNCHRONOUS_ANNOTATION) == "true" for each in annotations)
        strict = any(each.get(names.STRICT_ANNOTATION) == "true" for each in annotations)
        return Observed(single_copy=single_copy, members=max(members), synchronous=synchronous, strict=strict)


UNSUPPORTED = "ReplicationUnsupported"
NAME_TOO_LONG = "ReplicationNameTooLong"
CHANGE_REFUSED = "ReplicationChangeRefused"
PASSWORD_REFUSED = "ReplicationPasswordRefused"
CREDENTIALS_MISSING = "ReplicationCredentialsMissing"
# Every reason a refusal gives: Degraded's reason, each documented (``docs/api/status.md``).
REFUSAL_REASONS = (UNSUPPORTED, NAME_TOO_LONG, CHANGE_REFUSED, PASSWORD_REFUSED, CREDENTIALS_MISSING)


@dataclass(frozen=True)
class Refusal:
    """Why the spec's replication is not applied, for a Degraded condition (reason, message naming the field)."""

    reason: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """What to render (None: no shard at all) and, when the spec is not honoured, why.

    ``hold``: every running child keeps the template it runs and no new shard is made, whatever else
    the spec asks; set for every refusal once shards exist, so a refused spec moves nothing.
    """

    plan: Plan | None
    refusal: Refusal | None = None
    hold: bool = False


def record(plan: Plan) -> dict[str, str]:
    """The annotations a per-shard StatefulSet carries, read back by ``Observed.from_annotations``."""
    recorded = {
        names.MEMBERS_ANNOTATION: str(plan.members),
        names.SYNCHRONOUS_ANNOTATION: "true" if plan.synchronous else "false",
    }
    return {**recorded, names.STRICT_ANNOTATION: "true"} if plan.strict else recorded


def decide(parent: str, spec: ShardDBSpec, observed: Observed) -> Outcome:
    """The replication to render for ``spec``, given the shards that exist.

    Refused, most pressing first: an engine Patroni does not run; a name too long for the
    per-shard names; any change of shape once shards exist, except growing 2 members to 3.
    Going from one member to two would have to move a single copy's data into a cluster
    Patroni bootstraps itself; the hooks cannot do that safely, so they say so instead.
    Last, ``PGPASSWORD`` in the members' env (``_password_refusal``): a shape refusal's message
    comes first, but the members are held whenever the variable is asked of them. Whatever the
    refusal, shards that exist are held (``Outcome.hold``): no template, Job or Role moves.
    """
    outcome = _with_credentials(spec, observed, _with_password(spec, observed, _decide_shape(parent, spec, observed)))
    if outcome.refusal is not None and observed.has_shards:
        # A refusal changes nothing that runs: whatever else the spec asks waits with it.
        return replace(outcome, hold=True)
    return outcome


def _with_password(spec: ShardDBSpec, observed: Observed, outcome: Outcome) -> Outcome:
    """``outcome``, refused for ``PGPASSWORD`` in the members' env when members would get it."""
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


def _with_credentials(spec: ShardDBSpec, observed: Observed, outcome: Outcome) -> Outcome:
    """``outcome``, refused when members would run without every variable of ``CREDENTIALS``.

    Without them Patroni cannot log in to its own PostgreSQL nor a standby clone, and its REST API
    takes every unsafe call from anyone who reaches it. An earlier refusal's message comes first.
    """
    missing = missing_credentials(spec)
    if not missing or outcome.refusal is not None or spec.replication.members < 2:
        return outcome
    # The shards that exist run on as they are (``decide`` holds them); none is made otherwise.
    return Outcome(observed.plan, _credentials_refusal(spec.replication.members, missing))


def missing_credentials(spec: ShardDBSpec) -> tuple[str, ...]:
    """The variables of ``CREDENTIALS`` that ``spec.db.env`` does not name (a value or a reference alike)."""
    named = {var.get("name") for var in spec.db.env if isinstance(var, dict)}
    return tuple(name for name in CREDENTIALS if name not in named)


def _credentials_refusal(members: int, missing: tuple[str, ...]) -> Refusal:
    fields = ", ".join(f"spec.db.env[{name}]" for name in missing)
    return Refusal(
        CREDENTIALS_MISSING,
        f"{fields} {'is' if len(missing) == 1 else 'are'} missing, but with {MEMBERS_FIELD} {members} every "
        "member needs them from your Secret: Patroni logs in to PostgreSQL with the superuser's and the "
        "replication user's passwords, and its REST API takes a switchover, failover or restart only "
        "with the REST API's username and password; shards that exist keep running as they are",
    )


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
    replicated = spec.replication.members >= 2
    synchronous = spec.replication.synchronous and replicated
    asked = Plan(spec.replication.members, synchronous, spec.replication.strict and synchronous)
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
    if asked.patroni and len(parent) > names.MAX_REPLICATED_NAME_LENGTH:
        return Outcome(
            kept,
            Refusal(
                NAME_TOO_LONG,
                f"{MEMBERS_FIELD} is {asked.members}, but metadata.name has {len(parent)} characters; "
                f"with members at most {names.MAX_REPLICATED_NAME_LENGTH} fit, else "
                f"{names.replicated_binding_limit()} would exceed its limit",
            ),
        )
    if kept is None or kept == asked or _grows_safely(kept, asked):
        return Outcome(asked)
    return Outcome(kept, _change_refused(kept, asked))


def _grows_safely(kept: Plan, asked: Plan) -> bool:
    """2 → 3 adds a standby that Patroni clones from the primary: no member's data is touched."""
    return (
        kept.patroni
        and asked.members > kept.members
        and (asked.synchronous, asked.strict) == (kept.synchronous, kept.strict)
    )


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
    field, was, now = (
        (SYNCHRONOUS_FIELD, kept.synchronous, asked.synchronous)
        if kept.synchronous != asked.synchronous
        else (STRICT_FIELD, kept.strict, asked.strict)
    )
    return Refusal(
        CHANGE_REFUSED,
        f"{field} may not change from {str(was).lower()} to {str(now).lower()} once the shards exist: "
        "Patroni reads it only when a shard's cluster is first bootstrapped",
    )
