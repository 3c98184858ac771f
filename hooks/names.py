"""Fixed names and labels of a ShardDB's children: one place, so every module agrees."""

from __future__ import annotations

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

DB_PORT = 5432


def db_name(parent: str) -> str:
    """The headless Service and the StatefulSet share this name."""
    return f"{parent}-db"


def cache_name(parent: str) -> str:
    return f"{parent}-cache"


def seed_job_name(parent: str, shards: int) -> str:
    """One seed Job per shard count: growing the cluster runs a new one."""
    return f"{parent}-seed-{shards}"


def shard_pod_name(parent: str, ordinal: int) -> str:
    return f"{parent}-db-{ordinal}"


def selector_labels(parent: str, component: str) -> dict[str, str]:
    """Labels a selector matches on; never change them (StatefulSet selectors are immutable)."""
    return {NAME_LABEL: APP, INSTANCE_LABEL: parent, COMPONENT_LABEL: component}


def labels(parent: str, component: str) -> dict[str, str]:
    return {**selector_labels(parent, component), PART_OF_LABEL: APP, MANAGED_BY_LABEL: MANAGED_BY}
