"""The hook requests as OpenAPI components, from the very types that decode them.

Published at ``/openapi.json`` so that readers and schema-driven fuzzers see the
real contract, not a placeholder; nothing here is used to decode a request.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .contract import CustomizeRequest, SyncRequest
from .spec import ShardDBSpec

REF = "#/components/schemas/{name}"


def components() -> dict[str, Any]:
    """Schemas by name: Metacontroller's request types, with the parent's spec as the ShardDB spec."""
    _, schemas = msgspec.json.schema_components([SyncRequest, CustomizeRequest], ref_template=REF)
    spec = ShardDBSpec.model_json_schema(by_alias=True, ref_template=REF.replace("{name}", "{model}"))
    schemas.update(spec.pop("$defs", {}))
    schemas["ShardDBSpec"] = spec
    schemas["Parent"]["properties"]["spec"] = {"$ref": REF.format(name="ShardDBSpec")}
    return schemas


def request_body(name: str) -> dict[str, Any]:
    """``openapi_extra`` for a route whose JSON body is the component ``name``."""
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": REF.format(name=name)}}}}
    }
