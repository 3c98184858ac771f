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
