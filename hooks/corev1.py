"""The spec's core/v1 values (resources, env, tolerations, affinity, ...) checked with the CRD's own schemas.

``make crd`` writes each field's schema, generated from a real API server, both
into the CRD and into ``corev1.json`` beside this module, so the hook refuses
what the API server refuses and names the field the same way. Unknown fields
are refused too: the API server would drop them, and a value passed on to a pod
must not carry what Kubernetes would not keep.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationError
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError, PydanticUseDefault, core_schema

SCHEMA_FILE = "corev1.json"
Loc = tuple[str | int, ...]
# jsonschema quotes the bad value; a megabyte of it helps no one reading the 422 or the log.
MAX_PROBLEM = 300


@functools.cache
def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((resources.files(__package__) / SCHEMA_FILE).read_text())
    return document


def crd_schema(field: str) -> dict[str, Any]:
    """The schema of ``field`` exactly as the CRD holds it."""
    return copy.deepcopy(_document()["fields"][field])


def _closed(node: dict[str, Any]) -> dict[str, Any]:
    """The schema with unknown fields refused wherever the CRD would prune them."""
    out = dict(node)
    if "properties" in out:
        out["properties"] = {name: _closed(child) for name, child in out["properties"].items()}
        if not out.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _closed(out["additionalProperties"])
    if "items" in out:
        out["items"] = _closed(out["items"])
    return out


# Kubernetes' integer formats, enforced: a number outside them is no Kubernetes value (and no JSON we could send).
def _within(bits: int) -> Callable[[object], bool]:
    def check(value: object) -> bool:
        return not isinstance(value, int) or isinstance(value, bool) or -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)

    return check


FORMATS = jsonschema.FormatChecker(formats=())
FORMATS.checks("int32")(_within(32))
FORMATS.checks("int64")(_within(64))


@functools.cache
def _validator(field: str) -> Any:
    schema = _closed(crd_schema(field))
    return jsonschema.Draft202012Validator(schema, format_checker=FORMATS)


def _problems(error: Any) -> Iterator[InitErrorDetails]:
    """One jsonschema error as pydantic errors, naming a missing or unknown field at its own path."""
    where: Loc = tuple(error.absolute_path)
    found: list[tuple[Loc, str, Any]] = []
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        found = [
            ((*where, name), "unknown field", value) for name, value in error.instance.items() if name not in known
        ]
    elif error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value if name not in error.instance]
        found = [((*where, name), "Field required", error.instance) for name in missing]
    elif error.validator == "pattern" and error.schema.get("x-kubernetes-int-or-string"):
        found = [(where, f"{error.instance!r} is not a quantity such as 500m, 2 or 1Gi", error.instance)]
    else:
        found = [(where, error.message, error.instance)]
    for loc, problem, value in found:
        short = problem if len(problem) <= MAX_PROBLEM else problem[: MAX_PROBLEM - 1] + "…"
        yield InitErrorDetails(
            type=PydanticCustomError("kubernetes_schema", "{problem}", {"problem": short}), loc=loc, input=value
        )


def _whole_numbers(value: Any) -> Any:
    """JSON counts 3.0 as the integer 3; a pod's int32 field does not, so pass on 3."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(item) for item in value]
    return value


@dataclass(frozen=True)
class CoreV1:
    """``Annotated`` marker: check a value with the CRD's schema of ``field``, and publish that schema."""

    field: str

    def check(self, value: Any) -> Any:
        if value is None:  # the API server prunes a null it is given: the field is unset
            raise PydanticUseDefault()
        errors = [problem for error in _validator(self.field).iter_errors(value) for problem in _problems(error)]
        if errors:
            raise ValidationError.from_exception_data(self.field, errors)
        return _whole_numbers(value)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_before_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return _closed(crd_schema(self.field))
