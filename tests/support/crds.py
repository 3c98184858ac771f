"""The ShardDB CRD as shipped (``crds/sharddb.yaml``), and a strict reader of a CRD's structural schema.

Shared by the manifests' tests (``tests/shipped/``) and the guide's (``tests/docs/``): an object
the reader finds no error in is one the API server stores without pruning a field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]
REPO = Path(__file__).resolve().parents[2]
CRD_FILE = REPO / "crds" / "sharddb.yaml"


def one(objs: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def schema_errors(value: Any, schema: Obj, path: str = "") -> list[str]:
    """Where ``value`` breaks a CRD's structural schema, counting fields the API server would prune."""
    if schema.get("x-kubernetes-int-or-string"):
        return [] if isinstance(value, int | str) and not isinstance(value, bool) else [f"{path}: int or string"]
    kind = schema.get("type")
    if kind == "object":
        return _object_errors(value, schema, path)
    if kind == "array":
        if not isinstance(value, list):
            return [f"{path}: expected an array"]
        return [
            error
            for i, item in enumerate(value)
            for error in schema_errors(item, schema.get("items", {}), f"{path}[{i}]")
        ]
    expected = {"string": str, "integer": int, "boolean": bool, "number": int | float}.get(str(kind))
    if expected is not None and (not isinstance(value, expected) or (kind != "boolean" and isinstance(value, bool))):
        return [f"{path}: expected {kind}, got {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} not one of {schema['enum']}"]
    return []


def _object_errors(value: Any, schema: Obj, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object"]
    errors = [f"{path}.{key}: required" for key in schema.get("required", []) if key not in value]
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    open_object = path == ".metadata" or schema.get("x-kubernetes-preserve-unknown-fields")
    for key, item in value.items():
        if properties and key in properties:
            errors += schema_errors(item, properties[key], f"{path}.{key}")
        elif isinstance(extra, dict):
            errors += schema_errors(item, extra, f"{path}.{key}")
        elif not open_object:
            errors.append(f"{path}.{key}: not in the schema (the API server would prune it)")
    return errors


def crd_schema(crd: Obj, version: str) -> Obj:
    served = {v["name"]: v for v in crd["spec"]["versions"]}
    assert version in served, f"{crd['metadata']['name']} does not serve {version}"
    schema: Obj = served[version]["schema"]["openAPIV3Schema"]
    return schema


def sharddb_crd() -> Obj:
    assert CRD_FILE.is_file(), "crds/sharddb.yaml is missing: the ShardDB CRD must ship with the controller"
    docs = [doc for doc in yaml.safe_load_all(CRD_FILE.read_text()) if doc]
    crd: Obj = one(docs, "CustomResourceDefinition", "sharddbs.mygroup.example.com")
    return crd
