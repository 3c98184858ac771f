"""Fixed names and labels of a ShardDB's children: one place, so every module agrees."""

from __future__ import annotations

import re

GROUP = "mygroup.example.com"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ShardDB"

NAME_LABEL = "app.kubernetes.io/name"
INSTANCE_LABEL = "app.kubernetes.io/instance"
COMPONENT_LABEL = "app.kubernetes.io/component"
PART_OF_LABEL = "app.kubernetes.io/part-of"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"

APP = "sharddb"
MANAGED_BY = "metacontroller"

DB = "db"
CACHE = "cache"
SEED = "seed"

# Memory kept on the StatefulSet (always a child), so a stale parent status
# cannot make the hook forget that a seed already succeeded.
SEEDED_SHARDS_ANNOTATION = f"{GROUP}/seeded-shards"
# What a pod template was made from, on the StatefulSet and the cache Deployment (``hooks/template_choice.py``):
# the spec's pod-shaping fields (a hash), the release epoch, the apply-templates request last honoured.
TEMPLATE_INPUTS_ANNOTATION = f"{GROUP}/template-inputs"
TEMPLATE_EPOCH_ANNOTATION = f"{GROUP}/template-epoch"
TEMPLATES_APPLIED_ANNOTATION = f"{GROUP}/templates-applied"
# On a ShardDB: set it (to any new value) to have both templates rendered by the running hooks applied once.
APPLY_TEMPLATES_ANNOTATION = f"{GROUP}/apply-templates"

DB_PORT = 5432

# The most shards a ShardDB may have: bounds the longest ordinal a name must hold.
MAX_SHARDS = 1024

# Kubernetes' limits on what we and its controllers derive from a ShardDB's name.
DNS_LABEL_MAX = 63  # Service names, pod hostnames, Job names
LABEL_VALUE_MAX = 63
# A StatefulSet labels each pod ``controller-revision-hash=<statefulset>-<hash>``; the hash
# is a 32-bit FNV hash in Kubernetes' safe alphabet, at most 10 characters.
REVISION_HASH_MAX = 10


def db_name(parent: str) -> str:
    """The headless Service and the StatefulSet share this name."""
    return f"{parent}-db"


def cache_name(parent: str) -> str:
    return f"{parent}-cache"


def seed_job_name(parent: str, shards: int) -> str:
    """One seed Job per shard count: growing the cluster runs a new one."""
    return f"{parent}-seed-{shards}"


def shard_pod_name(parent: str, ordinal: int) -> str:
    return f"{db_name(parent)}-{ordinal}"


def shard_ordinal(parent: str, pod: str) -> int | None:
    """The ordinal of a shard pod named by ``shard_pod_name``; None for any other name."""
    return _number_after(pod, f"{db_name(parent)}-")


def seed_job_shards(parent: str, job: str) -> int | None:
    """The shard count of a seed Job named by ``seed_job_name``; None for any other name."""
    shards = _number_after(job, seed_job_name(parent, 0).removesuffix("0"))
    return shards or None


def count(text: str | None) -> int:
    """A count we wrote into an annotation; anything else reads as zero."""
    return _number_after(text or "", "") or 0


def _number_after(text: str, prefix: str) -> int | None:
    """The decimal after ``prefix``, written as Kubernetes writes ordinals (no sign, no leading zero)."""
    digits = text[len(prefix) :] if text.startswith(prefix) else ""
    widest = len(str(MAX_SHARDS))
    if digits.isascii() and digits.isdecimal() and len(digits) <= widest and (digits == "0" or digits[0] != "0"):
        return int(digits)
    return None


def derived(parent: str) -> list[tuple[str, str, int]]:
    """Each name or label value Kubernetes derives from ``parent``, at its longest, with its limit.

    Built by the same functions that name the children, so a new child or a longer
    suffix moves ``MAX_NAME_LENGTH`` with it.
    """
    last_shard = shard_pod_name(parent, MAX_SHARDS - 1)
    return [
        ("the label app.kubernetes.io/instance", parent, LABEL_VALUE_MAX),
        ("the headless Service name", db_name(parent), DNS_LABEL_MAX),
        ("the cache Service name", cache_name(parent), DNS_LABEL_MAX),
        ("a shard pod's hostname", last_shard, DNS_LABEL_MAX),
        ("a shard pod's label statefulset.kubernetes.io/pod-name", last_shard, LABEL_VALUE_MAX),
        (
            "a shard pod's label controller-revision-hash",
            f"{db_name(parent)}-{'x' * REVISION_HASH_MAX}",
            LABEL_VALUE_MAX,
        ),
        ("a seed Job's name (and its pods' job-name label)", seed_job_name(parent, MAX_SHARDS), DNS_LABEL_MAX),
    ]


def _fits(length: int) -> bool:
    return all(len(value) <= limit for _, value, limit in derived("x" * length))


# The longest ShardDB name whose every derived name fits; the CRD refuses longer ones.
MAX_NAME_LENGTH = max(length for length in range(1, 254) if _fits(length))


def binding_limit() -> tuple[str, int]:
    """What a name one character too long breaks first, and that limit, for messages and docs."""
    return next((what, limit) for what, value, limit in derived("x" * (MAX_NAME_LENGTH + 1)) if len(value) > limit)


# A ShardDB's name must also be a DNS label starting with a letter: its Services are named after it.
NAME_PATTERN = "^[a-z]([-a-z0-9]*[a-z0-9])?$"


def unfit(parent: str) -> tuple[str, str] | None:
    """Why Kubernetes cannot run children named after ``parent`` (reason, message), or None."""
    if len(parent) > MAX_NAME_LENGTH:
        what, limit = binding_limit()
        return (
            "NameTooLong",
            f"metadata.name has {len(parent)} characters; at most {MAX_NAME_LENGTH} fit, "
            f"else {what} would exceed {limit} characters and the pods could not be created",
        )
    if re.fullmatch(NAME_PATTERN, parent) is None:
        return (
            "NameInvalid",
            "metadata.name must start with a letter and hold only lowercase letters, digits and '-': "
            "the Services are named after it",
        )
    return None


def selector_labels(parent: str, component: str) -> dict[str, str]:
    """Labels a selector matches on; never change them (StatefulSet selectors are immutable)."""
    return {NAME_LABEL: APP, INSTANCE_LABEL: parent, COMPONENT_LABEL: component}


def labels(parent: str, component: str) -> dict[str, str]:
    return {**selector_labels(parent, component), PART_OF_LABEL: APP, MANAGED_BY_LABEL: MANAGED_BY}


# --- shards with members (spec.replication.members >= 2): each shard a StatefulSet run by Patroni ---------

MAX_MEMBERS = 3  # members per shard: a primary and up to two standbys
MAX_MEMBER_ORDINAL = MAX_MEMBERS - 1
PRIMARY = "primary"
STANDBY = "standby"

# Recorded on each shard's StatefulSet, so the shape a shard was made with is read from the
# cluster, never from a status that may lag (``replication.shape.Observed.from_annotations``).
MEMBERS_ANNOTATION = f"{GROUP}/members"
SYNCHRONOUS_ANNOTATION = f"{GROUP}/synchronous"
# Set only on shards made strict, so every other shard's StatefulSet keeps the bytes it had.
STRICT_ANNOTATION = f"{GROUP}/strict"

# Patroni's kubernetes DCS (patroni/dcs/kubernetes.py, 4.1): the members of a scope are the pods
# matching its ``labels`` plus ``scope_label=<scope>``; it patches its own pod's ``role_label`` to
# ``leader_label_value`` ("primary" by default since Patroni 4; "master" before) on the leader and
# ``follower_label_value`` ("replica") on a running standby, removes it otherwise, and writes its
# member data as JSON in the pod annotation ``status``. Ours are namespaced, so they never meet
# another application's ``role`` or ``cluster-name``.
SCOPE_LABEL = f"{GROUP}/shard"
ROLE_LABEL = f"{GROUP}/role"
LEADER_LABEL_VALUE = "primary"
FOLLOWER_LABEL_VALUE = "replica"
STATUS_ANNOTATION = "status"
HISTORY_ANNOTATION = "history"  # on ``<scope>-config``: each promotion's timeline, position, reason and time
# The label a StatefulSet puts on each pod it makes: the revision (template) the pod was made from.
REVISION_LABEL = "controller-revision-hash"
# A shard's StatefulSet updates its members only when one is gone: a RollingUpdate replaces the highest
# ordinal first, which may be the primary, and then the new primary again (two hand-overs). The rollout
# Job (``replication/rollout.py``) chooses the order instead.
ON_DELETE = "OnDelete"
# The components of the Jobs that run Patroni's chores, each with its own Role.
CLEANUP = "cleanup"
ROLLOUT = "rollout"
# Patroni's superuser: its own sessions, pg_rewind's, and the base backups' Job's.
SUPERUSER = "postgres"
# The base backups' CronJob and its Jobs' pods (``backup/cronjob.py``).
BACKUP = "backup"
# The Job controller's label on each pod of a Job: the Job's name.
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
# Kubernetes refuses a longer CronJob name: its Jobs are named ``<cronjob>-<minutes since the epoch>``.
CRONJOB_NAME_MAX = 52

# Patroni's kubernetes DCS with ConfigMaps keeps a scope's state in <scope>-<suffix>: the leader
# lock, the cluster config (its history and initialize key are annotations of it), the synchronous
# state and a requested switchover. "history" is a key of its own in the other DCSs; reserved too.
PATRONI_OWNED_SUFFIXES = ("leader", "config", "sync", "failover", "history")


def shard_name(parent: str, shard: int) -> str:
    """A shard with members: its StatefulSet, headless Service, budget and Patroni scope share this name.

    It is also the name of today's shard pod ``shard``: no clash, as a ShardDB is one shape or the other.
    """
    return f"{db_name(parent)}-{shard}"


def shard_of(parent: str, name: str) -> int | None:
    """The shard a per-shard object is named for (``<name>-db-<shard>``); None for any other name."""
    return shard_ordinal(parent, name)


def member_name(parent: str, shard: int, member: int) -> str:
    """Member ``member`` of a shard: the StatefulSet's pod, and Patroni's member name."""
    return f"{shard_name(parent, shard)}-{member}"


def role_service_name(parent: str, shard: int, role: str) -> str:
    """``<shard>-primary`` reaches the shard's primary only; ``<shard>-standby`` its standbys."""
    return f"{shard_name(parent, shard)}-{role}"


def backup_name(parent: str) -> str:
    """``<name>-backup``: the CronJob that takes every shard's base backup."""
    return f"{parent}-{BACKUP}"


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


def replicated_derived(parent: str) -> list[tuple[str, str, int]]:
    """Each name Kubernetes derives from ``parent`` once shards have members, at its longest, with its limit.

    Longer than today's (``derived``): each shard is a StatefulSet, whose pods carry
    ``controller-revision-hash=<name>-db-<shard>-<hash>``. Today's limit stays for one member.
    """
    last = MAX_SHARDS - 1
    shard = shard_name(parent, last)
    return [
        ("a shard's StatefulSet name", shard, DNS_LABEL_MAX),
        (
            "a member pod's label controller-revision-hash",
            f"{shard}-{'x' * REVISION_HASH_MAX}",
            LABEL_VALUE_MAX,
        ),
        ("a member pod's hostname", member_name(parent, last, MAX_MEMBER_ORDINAL), DNS_LABEL_MAX),
        ("a shard's standby Service name", role_service_name(parent, last, STANDBY), DNS_LABEL_MAX),
        ("the base backups' CronJob name", backup_name(parent), CRONJOB_NAME_MAX),
    ]


MAX_REPLICATED_NAME_LENGTH = max(
    length
    for length in range(1, MAX_NAME_LENGTH + 1)
    if all(len(value) <= limit for _, value, limit in replicated_derived("x" * length))
)


def replicated_binding_limit() -> str:
    """What a name one character longer than ``MAX_REPLICATED_NAME_LENGTH`` breaks first, for messages."""
    too_long = "x" * (MAX_REPLICATED_NAME_LENGTH + 1)
    return next(what for what, value, limit in replicated_derived(too_long) if len(value) > limit)


def patroni_owned(scope: str) -> frozenset[str]:
    """The names Patroni itself writes for ``scope``: never a child's."""
    return frozenset(f"{scope}-{suffix}" for suffix in PATRONI_OWNED_SUFFIXES)


def account_name(parent: str) -> str:
    """The ServiceAccount, Role and RoleBinding Patroni runs as, one set per ShardDB."""
    return f"{parent}-patroni"


def cleanup_name(parent: str) -> str:
    """The cleanup Job, its Role and RoleBinding: ``<name>-patroni-cleanup``, no longer than a standby Service."""
    return f"{account_name(parent)}-{CLEANUP}"


def rollout_role_name(parent: str) -> str:
    """The rollout's Role and RoleBinding: ``<name>-patroni-rollout``, as long as the cleanup's."""
    return f"{account_name(parent)}-{ROLLOUT}"


def rollout_job_name(parent: str, digest: str) -> str:
    """``<name>-rollout-<hash>``: no longer than ``<name>-patroni-cleanup``."""
    return f"{parent}-{ROLLOUT}-{digest}"
