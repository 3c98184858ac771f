"""Kubernetes' own OpenAPI-derived JSON schemas for our child kinds, loaded once.

``kubernetes_validate.validate`` re-reads its schema files on every call; the
generated-world tests validate thousands of objects, so build each validator once.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from referencing import Registry, Resource

KUBERNETES_VERSION = "1.34.0"  # strict: unknown fields are errors, so a misspelt field fails too


def _schema(name: str) -> Any:
    folder = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{KUBERNETES_VERSION}-local-strict"
    path = folder / name
    return json.loads(path.read_text())


@functools.cache
def _registry() -> Registry[Any]:
    return Resource.from_contents(_schema("_definitions.json")) @ Registry()


@functools.cache
def validator(kind: str, api_version: str) -> jsonschema.protocols.Validator:
    group = api_version.split("/")[0].split(".")[0] + "-" if "/" in api_version else ""
    schema = _schema(f"{kind.lower()}-{group}{api_version.rsplit('/', 1)[-1]}.json")
    registry = Resource.from_contents(schema) @ _registry()
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, registry=registry)


def problems(obj: dict[str, Any]) -> list[str]:
    """Every schema violation of ``obj`` as ``path: message``; empty when it is valid."""
    found = validator(obj["kind"], obj["apiVersion"]).iter_errors(obj)
    return sorted(f"{'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}" for error in found)
