"""Pod templates of a ShardDB's workloads: shards, the seed Job and the cache.

Kept apart from the objects that carry them so the lifecycle can ask whether a
template is already rolled out (``applied.contains``) without rendering the rest.
"""

from __future__ import annotations

from typing import Any

from . import names
from .spec import ShardDBSpec

Obj = dict[str, Any]

CACHE_PORT = 6379
DATA_VOLUME = "data"
DATA_PATH = "/var/lib/postgresql/data"


def _probe(port: str, period: int, failures: int) -> Obj:
    return {"tcpSocket": {"port": port}, "periodSeconds": period, "failureThreshold": failures}


def db_template(parent: str, spec: ShardDBSpec) -> Obj:
    """A shard: the database on its volume, draining connections before it stops."""
    return {
        "metadata": {"labels": names.labels(parent, names.DB)},
        "spec": {
            "terminationGracePeriodSeconds": spec.drain_grace_period_seconds,
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "db",
                    "image": spec.db_image,
                    "ports": [{"name": "db", "containerPort": names.DB_PORT, "protocol": "TCP"}],
                    "env": [
                        {"name": "SHARDDB_NAME", "value": parent},
                        {"name": "SHARDDB_SERVICE", "value": names.db_name(parent)},
                        {"name": "SHARDDB_DRAIN_SECONDS", "value": str(spec.drain_grace_period_seconds)},
                        {"name": "PGDATA", "value": f"{DATA_PATH}/pgdata"},
                    ],
                    "readinessProbe": _probe("db", 5, 3),
                    "livenessProbe": {**_probe("db", 10, 6), "initialDelaySeconds": 30},
                    "lifecycle": {"preStop": {"exec": {"command": spec.drain}}},
                    "volumeMounts": [{"name": DATA_VOLUME, "mountPath": DATA_PATH}],
                }
            ],
        },
    }


def seed_template(parent: str, namespace: str, spec: ShardDBSpec, shards: int) -> Obj:
    """The seed: runs once, against every shard, with the database image's own clients."""
    return {
        "metadata": {"labels": names.labels(parent, names.SEED)},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "seed",
                    "image": spec.db_image,
                    "command": spec.seed,
                    "env": [
                        {"name": "SHARDDB_NAME", "value": parent},
                        {"name": "SHARDDB_NAMESPACE", "value": namespace},
                        {"name": "SHARDDB_SERVICE", "value": names.db_name(parent)},
                        {"name": "SHARDDB_SHARDS", "value": str(shards)},
                    ],
                }
            ],
        },
    }


def cache_template(parent: str, spec: ShardDBSpec) -> Obj:
    """A cache replica, flushing what it holds before it stops."""
    return {
        "metadata": {"labels": names.labels(parent, names.CACHE)},
        "spec": {
            "terminationGracePeriodSeconds": spec.cache.flush_grace_period_seconds,
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "cache",
                    "image": spec.cache.image,
                    "ports": [{"name": "cache", "containerPort": CACHE_PORT, "protocol": "TCP"}],
                    "env": [
                        {"name": "SHARDDB_NAME", "value": parent},
                        {"name": "SHARDDB_SERVICE", "value": names.db_name(parent)},
                    ],
                    "readinessProbe": _probe("cache", 5, 3),
                    "lifecycle": {"preStop": {"exec": {"command": spec.flush}}},
                }
            ],
        },
    }
