"""The hook requests as OpenAPI components, from the very types that decode them.

Published at ``/openapi.json`` so that readers and schema-driven fuzzers see the
real contract, not a placeholder; nothing here is used to decode a request.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..hook_request import CustomizeRequest, SyncRequest
from ..spec import QUANTITY_PATTERN, ShardDBSpec

REF = "#/components/schemas/{name}"


def components() -> dict[str, Any]:
    """Schemas by name: Metacontroller's request types, with the parent's spec as the ShardDB spec."""
    _, schemas = msgspec.json.schema_components([SyncRequest, CustomizeRequest], ref_template=REF)
    spec = ShardDBSpec.model_json_schema(by_alias=True, ref_template=REF.replace("{name}", "{model}"))
    schemas.update(spec.pop("$defs", {}))
    schemas["ShardDBSpec"] = spec
    schemas["Parent"]["properties"]["spec"] = {"$ref": REF.format(name="ShardDBSpec")}
    # Parts of observed children the answer may carry back must hold only what JSON can carry back;
    # so must the fields the hooks skip, since a paused ShardDB answers with whole children.
    for schema in schemas.values():
        if schema.get("type") == "object" and "properties" in schema:
            schema.setdefault("additionalProperties", {"$ref": REF.format(name="JsonValue")})
    schemas["JsonValue"] = JSON_VALUE
    for owner, fields in (("StatefulSetSpec", ("template",)), ("DeploymentSpec", ("template",))):
        for field in fields:
            schemas[owner]["properties"][field] = {**JSON_OBJECT, "default": {}}
    schemas["StatefulSetSpec"]["properties"]["volumeClaimTemplates"] = {
        "type": "array",
        "items": JSON_OBJECT,
        "default": [],
    }
    published: dict[str, Any] = _plain_quantities(schemas)
    return published


JSON_OBJECT = {"type": "object", "additionalProperties": {"$ref": REF.format(name="JsonValue")}}
# Any JSON a Kubernetes client reads back: integers within 64 bits (deeper than 64 levels is refused too).
JSON_VALUE = {
    "anyOf": [
        {"type": "string"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
        {"type": "number", "minimum": -1e18, "maximum": 1e18},
        {"type": "array", "items": {"$ref": REF.format(name="JsonValue")}},
        JSON_OBJECT,
    ]
}


# What every quantity the hooks accept looks like, for schema-driven clients: the CRD's
# pattern also admits spellings the API server refuses (``1e.5``) or mangles (``1000E``).
PLAIN_STRING = {"type": "string", "pattern": r"^[0-9]{1,6}(\.[0-9]{1,3})?([KMGT]i|[mkMGT])?$"}
PLAIN_QUANTITY = {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 999_999_999}, PLAIN_STRING]}


def _plain_quantities(node: Any) -> Any:
    """The published schema with every quantity described as ``PLAIN_QUANTITY``."""
    if isinstance(node, dict):
        if node.get("pattern") == QUANTITY_PATTERN:
            plain = PLAIN_QUANTITY if node.get("x-kubernetes-int-or-string") else PLAIN_STRING
            return {**{k: v for k, v in node.items() if k in ("default", "description")}, **plain}
        return {key: _plain_quantities(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_plain_quantities(item) for item in node]
    return node


def request_body(name: str) -> dict[str, Any]:
    """``openapi_extra`` for a route whose JSON body is the component ``name``."""
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": REF.format(name=name)}}}}
    }
