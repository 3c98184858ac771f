"""The examples (``examples/``) as a user applies them, on the test images, with a session's own password.

Shared by the tiers that run them on real nodes: the data tier (``tests/data/``) and the installed
tier (``tests/installed/``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from testbed.images import workloads

Obj = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE = EXAMPLES / "sharddb.yaml"
# The examples name postgres:16, redis:7, mariadb:10.11, memcached:1.6 and the Patroni recipe's image
# (a placeholder the user builds); the test images are Debian bookworm's PostgreSQL 15, Redis 7.0,
# MariaDB 10.11, memcached 1.6, and PostgreSQL 15 with Patroni (the Patroni tier's).
IMAGES = {
    "postgres:16": workloads.POSTGRES,
    "registry.example.com/postgres-patroni:15-4.1.5": workloads.POSTGRES_PATRONI,
    "redis:7": workloads.REDIS,
    "mariadb:10.11": workloads.MARIADB,
    "memcached:1.6": workloads.MEMCACHED,
}
# Per-session credentials of the example's Secret; never the example's placeholder.
PASSWORD = "data-tier-password"


def example(name: str, namespace: str, path: Path = EXAMPLE) -> list[Obj]:
    """An example (``examples/sharddb.yaml`` unless told) as a user would apply it, under ``name``, on the test images.

    Its Secret, if it has one, becomes ``<name>-db`` with every key set to ``PASSWORD``.
    """
    documents = [copy.deepcopy(doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    *secrets, sharddb = documents
    assert len(secrets) <= 1, f"{path.name}: one Secret at most"
    for secret in secrets:
        secret["metadata"] = {"name": f"{name}-db", "namespace": namespace}
        secret["stringData"] = dict.fromkeys(secret["stringData"], PASSWORD)
    sharddb["metadata"] = {"name": name, "namespace": namespace}
    spec = sharddb["spec"]
    spec["dbImage"] = IMAGES[spec["dbImage"]]
    spec["cache"]["image"] = IMAGES[spec["cache"]["image"]]
    for part in (spec["db"], spec["cache"]):
        for variable in part.get("env", []):
            if ref := variable.get("valueFrom", {}).get("secretKeyRef"):
                ref["name"] = f"{name}-db"
    return [*secrets, sharddb]


# The Secret of an example with members, in the tiers that apply one: Patroni's four credentials, never the
# example's placeholders.
MEMBER_CREDENTIALS = {
    "superuser": PASSWORD,
    "replication": "installed-tier-replication",
    "restapi-username": "patroni",
    "restapi-password": "installed-tier-restapi",
}


def members_example(path: Path, name: str, namespace: str) -> list[Obj]:
    """An example with members (its Secret ``<name>-db``, then the ShardDB ``name``) as a user applies it: in
    ``namespace``, on the test images, its Secret holding ``MEMBER_CREDENTIALS``; nothing else changes."""
    secret, sharddb = (doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    assert (secret["kind"], secret["metadata"]["name"]) == ("Secret", f"{name}-db"), secret["metadata"]
    assert (sharddb["kind"], sharddb["metadata"]["name"]) == ("ShardDB", name), sharddb["metadata"]
    assert set(secret["stringData"]) == set(MEMBER_CREDENTIALS), secret["stringData"]
    secret["metadata"]["namespace"] = sharddb["metadata"]["namespace"] = namespace
    secret["stringData"] = dict(MEMBER_CREDENTIALS)
    spec = sharddb["spec"]
    spec["dbImage"] = IMAGES[spec["dbImage"]]
    spec["cache"]["image"] = IMAGES[spec["cache"]["image"]]
    return [secret, sharddb]
