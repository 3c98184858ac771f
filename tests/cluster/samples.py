"""ShardDB objects for the cluster tests: the project's example if there is one, else a minimal one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sharddb.yaml"

Obj = dict[str, Any]

SPEC: Obj = {"shards": 3, "dbImage": "postgres:16", "cache": {"image": "redis:7", "replicas": 2}}


def sharddb(name: str, namespace: str, spec: Obj | None = None) -> Obj:
    """A ShardDB with ``spec`` (default: a minimal valid one)."""
    return {
        "apiVersion": "mygroup.example.com/v1alpha1",
        "kind": "ShardDB",
        "metadata": {"name": name, "namespace": namespace},
        "spec": copy.deepcopy(SPEC if spec is None else spec),
    }


def example(namespace: str) -> Obj:
    """The first ShardDB of ``examples/sharddb.yaml``, moved into ``namespace``; a minimal one if absent."""
    if not EXAMPLE.exists():
        return sharddb("example", namespace)
    for doc in yaml.safe_load_all(EXAMPLE.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "ShardDB":
            doc["metadata"]["namespace"] = namespace
            return doc
    raise AssertionError(f"{EXAMPLE.relative_to(ROOT)} holds no ShardDB")
