"""The CRD's schema says what the hooks say: same spec fields, limits and defaults; every status field.

Read from the file, no API server needed: a drift between crds/sharddb.yaml and
hooks/spec.py or the status the hooks write fails here first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from hooks import corev1, handler, names
from hooks.lifecycle import Phase
from hooks.spec import SELECTOR_LABELS, ShardDBSpec
from testbed.models.world import World, bring_up
from tests.support.backups import RUNS_WITH_ONE_GOING, with_runs
from tests.support.crds import schema_errors
from tests.support.hook import direct
from tests.support.replication import failed_over, stages
from tests.support.samples import EVERY_FIELD
from tools.crd_schema import POD_FIELDS

ROOT = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((ROOT / "crds" / "sharddb.yaml").read_text())
(VERSION,) = CRD["spec"]["versions"]
SCHEMA = VERSION["schema"]["openAPIV3Schema"]
KEPT = (
    "type",
    "properties",
    "required",
    "items",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "enum",
    "minItems",
    "default",
)

Obj = dict[str, Any]


def _from_pydantic(node: Obj, defs: Obj) -> Obj:
    """Pydantic's JSON schema reduced to the keywords a structural CRD schema shares."""
    if "$ref" in node:
        node = {**defs[node["$ref"].rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
    if any(branch.get("type") == "null" for branch in node.get("anyOf", [])):  # Optional[X]: absent in the CRD
        (only,) = [branch for branch in node["anyOf"] if branch.get("type") != "null"]
        node = {**only, **{k: v for k, v in node.items() if k not in ("anyOf", "default")}}
        if "$ref" in node:  # an optional object of ours (spec.backup)
            return _from_pydantic(node, defs)
    out = {k: v for k, v in node.items() if k in KEPT and not (k == "default" and v is None)}
    if "properties" in out:
        out["properties"] = {k: _from_pydantic(v, defs) for k, v in out["properties"].items()}
    if "items" in out:
        out["items"] = _from_pydantic(out["items"], defs)
    if isinstance(out.get("default"), dict):
        out["default"] = _set_fields(out["default"])
    return out


def _set_fields(default: Obj) -> Obj:
    """A model's default without the fields it leaves unset (None, empty lists and maps), as the CRD writes it."""
    kept = {k: _set_fields(v) if isinstance(v, dict) else v for k, v in default.items()}
    return {k: v for k, v in kept.items() if v not in (None, [], {})}


def _from_crd(node: Obj) -> Obj:
    """The CRD schema reduced the same way; an object default of {} gets its fields' defaults."""
    out = {k: v for k, v in node.items() if k in KEPT}
    if "properties" in out:
        out["properties"] = {k: _from_crd(v) for k, v in out["properties"].items()}
    if "items" in out:
        out["items"] = _from_crd(out["items"])
    if out.get("default") == {} and "properties" in out:
        out["default"] = {k: v["default"] for k, v in out["properties"].items() if "default" in v}
    return out


def _descriptions_missing(node: Obj, where: str) -> list[str]:
    """Fields without a description; a list of plain strings or numbers is described by its field."""
    scalar_item = where.endswith("[]") and node.get("type") in ("string", "integer")
    missing = [] if node.get("description") or where == "metadata" or scalar_item else [where]
    for name, child in node.get("properties", {}).items():
        if where != "metadata":
            missing += _descriptions_missing(child, f"{where}.{name}" if where else name)
    if "items" in node:
        missing += _descriptions_missing(node["items"], f"{where}[]")
    return missing


def _hook_status() -> Obj:
    status: Obj = handler.sync(json.dumps(World().request()).encode(), finalize=False).body["status"]
    return status


def _lagging_status() -> Obj:
    """A status with the fields written only sometimes: an edit a child without a template record lags."""
    world = World()
    bring_up(world, direct)
    sts = world.statefulset()
    assert sts is not None
    sts["metadata"]["annotations"].pop(names.TEMPLATE_INPUTS_ANNOTATION)
    world.edit_spec(dbImage="postgres:17")
    status: Obj = handler.sync(json.dumps(world.request()).encode(), finalize=False).body["status"]
    return status


def test_spec_schema_matches_the_hooks_model() -> None:
    pydantic = ShardDBSpec.model_json_schema(by_alias=True, mode="validation")
    expected = _from_pydantic(pydantic, pydantic.get("$defs", {}))
    assert _from_crd(SCHEMA["properties"]["spec"]) == expected


def _generated_fields() -> dict[str, Obj]:
    """Every core/v1 field of the CRD by where it is, e.g. ``db.tolerations``."""
    spec = SCHEMA["properties"]["spec"]["properties"]
    found = {"imagePullSecrets": spec["imagePullSecrets"]}
    for pod in ("db", "cache"):
        for name in POD_FIELDS:
            found[f"{pod}.{name}"] = spec[pod]["properties"][name]
    return found


def test_core_v1_fields_carry_the_schemas_the_hook_validates_with() -> None:
    for where, schema in _generated_fields().items():
        assert schema == corev1.crd_schema(where.rsplit(".", 1)[-1]), where


def test_db_and_cache_take_the_same_pod_fields() -> None:
    spec = SCHEMA["properties"]["spec"]["properties"]
    for name in POD_FIELDS:
        assert spec["db"]["properties"][name] == spec["cache"]["properties"][name], name


def test_selector_labels_are_refused_in_pod_labels_by_the_crd() -> None:
    for pod in ("db", "cache"):
        labels = SCHEMA["properties"]["spec"]["properties"][pod]["properties"]["podMetadata"]["properties"]["labels"]
        (rule,) = labels["x-kubernetes-validations"]
        assert all(f"'{label}'" in rule["rule"] for label in SELECTOR_LABELS)


def _unset(node: Obj, value: Any, where: str) -> list[str]:
    """Fields of ``node`` that ``value`` leaves unset; a field of a list's items is set when any item sets it
    (peers of a NetworkPolicy are one of three shapes each)."""
    if value is None or value == []:
        return [where]
    if node.get("type") == "array":
        unset = [set(_unset(node["items"], item, f"{where}[0]")) for item in value]
        return sorted(set.intersection(*unset))
    properties = node.get("properties", {})
    return [path for name, child in properties.items() for path in _unset(child, value.get(name), f"{where}.{name}")]


def test_the_every_field_sample_sets_every_field_of_the_spec() -> None:
    # A recovery stops at a time or at a name, never both: the sample names one, and the other is unset.
    assert _unset(SCHEMA["properties"]["spec"], EVERY_FIELD, "spec") == ["spec.restore.recoveryTarget.targetTime"]


def test_spec_keeps_no_unknown_fields() -> None:
    def preserving(node: Obj, where: str) -> list[str]:
        found = [where] if node.get("x-kubernetes-preserve-unknown-fields") else []
        for name, child in node.get("properties", {}).items():
            found += preserving(child, f"{where}.{name}")
        return found

    assert preserving(SCHEMA["properties"]["spec"], "spec") == []
    assert preserving(SCHEMA["properties"]["status"], "status") == []


def test_every_field_has_a_description() -> None:
    assert _descriptions_missing(SCHEMA, "") == []


def test_status_schema_declares_every_field_the_hooks_write() -> None:
    status = _hook_status()
    declared = SCHEMA["properties"]["status"]["properties"]
    members = stages()["running"]["status"]
    backups = _backing_up_status()
    assert set(status) | set(_lagging_status()) | set(members) | set(backups) | {"observedGeneration"} == set(declared)
    condition_fields = set(declared["conditions"]["items"]["properties"])
    for condition in status["conditions"]:
        assert set(condition) <= condition_fields
        assert set(declared["conditions"]["items"]["required"]) <= set(condition)


def test_status_schema_declares_every_field_written_for_shards_with_members() -> None:
    """Else the API server prunes them, and Metacontroller writes the status at every sync."""
    status = failed_over()["status"]
    declared = SCHEMA["properties"]["status"]["properties"]
    assert set(status) <= set(declared)
    assert schema_errors(status, SCHEMA["properties"]["status"]) == []
    entry = declared["replication"]["properties"]["shards"]["items"]["properties"]
    assert {key for shard in status["replication"]["shards"] for key in shard} == set(entry)


def _backing_up_status() -> dict[str, Any]:
    """A running ShardDB that backs up, its CronJob's last run failed after an earlier success, and a run going."""
    status: dict[str, Any] = with_runs(RUNS_WITH_ONE_GOING)["status"]
    return status


def test_status_schema_declares_every_field_written_for_a_sharddb_that_backs_up() -> None:
    """Else the API server prunes them, and Metacontroller writes the status at every sync."""
    status = _backing_up_status()
    assert set(status["backup"]) == set(SCHEMA["properties"]["status"]["properties"]["backup"]["properties"])
    assert schema_errors(status, SCHEMA["properties"]["status"]) == []


def test_status_phase_enum_is_the_lifecycle_phases() -> None:
    assert SCHEMA["properties"]["status"]["properties"]["phase"]["enum"] == [phase.value for phase in Phase]


def test_conditions_are_a_list_map_keyed_by_type() -> None:
    conditions = SCHEMA["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]


def test_observed_generation_is_int64() -> None:
    assert SCHEMA["properties"]["status"]["properties"]["observedGeneration"] == {
        "type": "integer",
        "format": "int64",
        "description": "The metadata.generation this status was computed for.",
    }
