"""ShardDB objects for the cluster tests: the project's examples, and a minimal valid one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from hooks.corev1 import crd_schema
from tools.crd_schema import POD_FIELDS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

Obj = dict[str, Any]

SPEC: Obj = {"shards": 3, "dbImage": "postgres:16", "cache": {"image": "redis:7", "replicas": 2}}


def every_field(schema: Obj) -> Any:
    """A value setting every field ``schema`` knows: one item per list, one key per map, each enum's first value.

    Schema-valid, not meant to run: it sets fields a real pod would take only one of.
    """
    if schema.get("x-kubernetes-int-or-string"):
        return "1"
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema["type"]
    if kind == "object" and "properties" in schema:
        return {name: every_field(child) for name, child in schema["properties"].items()}
    if kind == "object":
        return {"example.com/key": every_field(schema["additionalProperties"])}
    if kind == "array":
        return [every_field(schema["items"])]
    return {"string": "x", "integer": 1, "boolean": True}[kind]


def _pod(**own: Any) -> Obj:
    core = {name: every_field(crd_schema(name)) for name in POD_FIELDS}
    metadata = {"labels": {"team": "payments"}, "annotations": {"prometheus.io/scrape": "true"}}
    return {**own, "podMetadata": metadata, "priorityClassName": "high", **core}


# Another store than a ShardDB's own, elsewhere, with other credentials and a CA of its own: a restore's source.
ARCHIVE_STORE: Obj = {
    "destinationPath": "s3://archive/prod",
    "endpointURL": "https://s3.elsewhere.example.com",
    "endpointCA": {"name": "archive-ca", "key": "ca.crt"},
    "region": "eu-west-3",
    "s3Credentials": {
        "accessKeyId": {"name": "archive-s3", "key": "id"},
        "secretAccessKey": {"name": "archive-s3", "key": "secret"},
    },
}


# Every field of the spec, none at its default, the core/v1 ones down to their last leaf.
EVERY_FIELD: Obj = {
    "shards": 5,
    "dbImage": "postgres:17",
    "serviceAccountName": "sharddb-demo",
    "imagePullSecrets": every_field(crd_schema("imagePullSecrets")),
    "db": _pod(port=5433, dataPath="/data/shard"),
    "cache": _pod(
        image="valkey/valkey:8",
        replicas=3,
        flushCommand=["valkey-cli", "SAVE"],
        flushGracePeriodSeconds=45,
        port=6380,
    ),
    "storage": {"size": "5Gi", "storageClassName": "fast"},
    "replication": {
        "members": 2,
        "synchronous": False,
        "maxSlotWalKeepSize": "512Mi",
        "strict": False,
        "clients": [
            {"podSelector": {"matchLabels": {"app": "orders-api"}}},
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": "billing"},
                    "matchExpressions": [{"key": "team", "operator": "In", "values": ["billing"]}],
                },
                "podSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            },
            {"ipBlock": {"cidr": "10.20.0.0/16", "except": ["10.20.9.0/24"]}},
        ],
    },
    "backup": {
        "objectStore": {
            "destinationPath": "s3://backups/orders",
            "endpointURL": "https://s3.example.com",
            "endpointCA": {"name": "backup-ca", "key": "ca.crt"},
            "region": "eu-west-1",
            "s3Credentials": {
                "accessKeyId": {"name": "backup-s3", "key": "ACCESS_KEY_ID"},
                "secretAccessKey": {"name": "backup-s3", "key": "ACCESS_SECRET_KEY"},
            },
        },
        "archiveTimeoutSeconds": 120,
        "schedule": "30 2 * * 0",
        "retentionPolicy": "4w",
    },
    "restore": {
        "source": {"name": "orders-old", "objectStore": ARCHIVE_STORE},
        # A recovery stops at a name or at a time (targetTime), never both.
        "recoveryTarget": {"targetName": "before-migration", "backupID": "20261207T040000"},
    },
    "seedCommand": ["sh", "-c", "echo seeded"],
    "seedTimeoutSeconds": 600,
    "drainCommand": ["sh", "-c", "echo drained"],
    "drainGracePeriodSeconds": 90,
    "podStartGraceSeconds": 30,
    "paused": True,
    "hibernated": True,
}


def sharddb(name: str, namespace: str, spec: Obj | None = None) -> Obj:
    """A ShardDB with ``spec`` (default: a minimal valid one)."""
    return {
        "apiVersion": "mygroup.example.com/v1alpha1",
        "kind": "ShardDB",
        "metadata": {"name": name, "namespace": namespace},
        "spec": copy.deepcopy(SPEC if spec is None else spec),
    }


def examples() -> dict[str, Obj]:
    """Every ShardDB in ``examples/*.yaml`` by file name; a minimal one if there are none."""
    found: dict[str, Obj] = {}
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "ShardDB":
                found[f"{path.stem}-{doc['metadata']['name']}"] = doc
    return found or {"minimal": sharddb("minimal", "default")}
