"""``make crd``: how an OpenAPI v3 document becomes structural CRD schemas, on a small hand-written document.

The real document is the API server's; tests/cluster/test_crd.py checks the
committed files against it.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tools.crd_schema import (
    INT_OR_STRING,
    POD_FIELDS,
    POD_SPEC,
    QUANTITY,
    QUANTITY_PATTERN,
    REPLICATION_FIELDS,
    SPEC_FIELDS,
    Converter,
    GenerateError,
    Source,
    api_of,
    first_sentence,
    merge,
)

Obj = dict[str, Any]


def ref(name: str) -> Obj:
    return {"allOf": [{"$ref": f"#/components/schemas/{name}"}]}


SCHEMAS: Obj = {
    QUANTITY: {"description": "Quantity is a fixed-point number.\n\nLong grammar.", "oneOf": [{"type": "string"}]},
    INT_OR_STRING: {"description": "IntOrString holds either.", "format": "int-or-string", "oneOf": []},
    "Thing": {
        "description": "Thing is a thing. More text.",
        "type": "object",
        "required": ["kind"],
        "properties": {
            "kind": {"description": "Kind of thing.", "type": "string", "default": "", "enum": ["A", "B"]},
            "size": {"description": "Size of it.", **ref(QUANTITY)},
            "port": {"description": "Port by number or name.", **ref(INT_OR_STRING)},
        },
    },
    "Named": {"type": "object", "properties": {"name": {"description": "Name.", "type": "string", "default": ""}}},
    "Loop": {"type": "object", "properties": {"again": ref("Loop")}},
    POD_SPEC: {
        "type": "object",
        "properties": {
            "thing": {"description": "If specified, the thing.", "default": {}, **ref("Thing")},
            "named": {
                "type": "array",
                "items": {"default": {}, **ref("Named")},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "name",
            },
            "loop": ref("Loop"),
        },
    },
}


def convert(field: str) -> Obj:
    return Converter(SCHEMAS).field(Source(POD_SPEC, field, "Ours."))


def test_a_reference_is_inlined_with_our_description_and_the_type_named() -> None:
    thing = convert("thing")
    assert thing["description"] == "Ours (core/v1 Thing)."
    assert thing["type"] == "object"
    assert thing["required"] == ["kind"]
    assert "default" not in thing


def test_a_type_is_named_with_its_group_and_version() -> None:
    assert api_of("io.k8s.api.networking.v1.NetworkPolicyIngressRule") == "networking/v1"
    assert api_of("io.k8s.api.core.v1.Container") == "core/v1"


def test_nested_descriptions_keep_their_first_sentence() -> None:
    assert convert("thing")["properties"]["size"]["description"] == "Size of it."
    assert first_sentence("Use e.g. this one. Then more.\n\nPossible enum values: A") == "Use e.g. this one."


def test_enums_are_kept_and_defaults_dropped() -> None:
    assert convert("thing")["properties"]["kind"] == {
        "description": "Kind of thing.",
        "type": "string",
        "enum": ["A", "B"],
    }


def test_a_quantity_is_an_int_or_string_with_the_quantity_pattern() -> None:
    size = convert("thing")["properties"]["size"]
    assert size["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert size["x-kubernetes-int-or-string"] is True
    assert size["pattern"] == QUANTITY_PATTERN


def test_an_int_or_string_is_either_type_without_a_format() -> None:
    assert convert("thing")["properties"]["port"] == {
        "description": "Port by number or name.",
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


def test_patch_strategies_are_dropped_and_list_types_kept() -> None:
    named = convert("named")
    assert not [key for key in named if key.startswith("x-kubernetes-patch")]
    assert (named["x-kubernetes-list-type"], named["x-kubernetes-list-map-keys"]) == ("map", ["name"])


def test_a_list_map_key_that_is_not_required_keeps_its_default() -> None:
    assert convert("named")["items"]["properties"]["name"]["default"] == ""


def test_a_recursive_type_is_refused() -> None:
    with pytest.raises(GenerateError, match="recursive"):
        convert("loop")


CRD = """spec:
  properties:
    mine:
      type: string
    # >>> make crd: spec fields
    stale: {}
    # <<< make crd
    db:
      properties:
        # >>> make crd: pod fields
        # <<< make crd
    replication:
      properties:
        # >>> make crd: replication fields
        # <<< make crd
"""


def test_merge_fills_each_marked_block_and_leaves_the_rest() -> None:
    fields = (*SPEC_FIELDS, *POD_FIELDS, *REPLICATION_FIELDS)
    schemas = {name: {"type": "string", "description": name} for name in fields}
    merged = merge(CRD, schemas, "1.34")
    parsed = yaml.safe_load(merged)["spec"]["properties"]
    assert set(parsed) == {"mine", *SPEC_FIELDS, "db", "replication"}
    assert set(parsed["db"]["properties"]) == set(POD_FIELDS)
    assert set(parsed["replication"]["properties"]) == set(REPLICATION_FIELDS)
    assert merge(merged, schemas, "1.34") == merged


def test_a_crd_without_the_markers_is_refused() -> None:
    with pytest.raises(GenerateError, match="marker"):
        merge("spec: {}\n", {}, "1.34")
