"""ShardDB objects for the cluster tests: the project's examples, and a minimal valid one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

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


def examples() -> dict[str, Obj]:
    """Every ShardDB in ``examples/*.yaml`` by file name; a minimal one if there are none."""
    found: dict[str, Obj] = {}
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "ShardDB":
                found[f"{path.stem}-{doc['metadata']['name']}"] = doc
    return found or {"minimal": sharddb("minimal", "default")}
