"""The spec as the hook reads it: pod fields, their defaults, and core/v1 values kept as the user wrote them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from hooks import corev1
from hooks.replication.config import slot_wal_keep_mb
from hooks.spec import DEFAULT_DATA_PATH, ShardDBSpec
from tools.crd_schema import POD_FIELDS

from ..support.samples import EVERY_FIELD

Obj = dict[str, Any]

MINIMAL: Obj = {"shards": 3, "dbImage": "postgres:16", "cache": {"image": "redis:7"}}


def spec(**changes: Any) -> ShardDBSpec:
    return ShardDBSpec.model_validate({**copy.deepcopy(MINIMAL), **changes})


def test_absent_db_gets_every_default() -> None:
    db = spec().db
    assert (db.port, db.data_path) == (5432, DEFAULT_DATA_PATH)
    assert (db.resources, db.affinity, db.pod_security_context, db.security_context) == (None, None, None, None)
    assert (db.env, db.env_from, db.tolerations, db.topology_spread_constraints) == ([], [], [], [])
    assert (db.pod_labels, db.pod_annotations, db.node_selector, db.priority_class_name) == ({}, {}, {}, None)


def test_cache_listens_on_6379_by_default() -> None:
    assert spec().cache.port == 6379


def test_pull_secrets_and_service_account_are_unset_by_default() -> None:
    assert (spec().image_pull_secrets, spec().service_account_name) == ([], None)


def test_every_core_v1_value_is_kept_as_written() -> None:
    parsed = ShardDBSpec.model_validate(EVERY_FIELD)
    for pod, given in ((parsed.db, EVERY_FIELD["db"]), (parsed.cache, EVERY_FIELD["cache"])):
        fields = {info.alias or name: name for name, info in type(pod).model_fields.items()}
        assert {alias: getattr(pod, fields[alias]) for alias in POD_FIELDS} == {
            alias: given[alias] for alias in POD_FIELDS
        }
    assert parsed.image_pull_secrets == EVERY_FIELD["imagePullSecrets"]


def test_pod_labels_and_annotations_come_from_pod_metadata() -> None:
    db = spec(db={"podMetadata": {"labels": {"team": "payments"}, "annotations": {"a": "b"}}}).db
    assert (db.pod_labels, db.pod_annotations) == ({"team": "payments"}, {"a": "b"})


def test_own_fields_are_read_by_their_names() -> None:
    parsed = ShardDBSpec.model_validate(EVERY_FIELD)
    assert (parsed.service_account_name, parsed.db.priority_class_name) == ("sharddb-demo", "high")
    assert (parsed.db.port, parsed.db.data_path, parsed.cache.port) == (5433, "/data/shard", 6380)


def test_a_whole_number_written_as_a_float_is_passed_on_as_an_integer() -> None:
    toleration = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30.0}
    (kept,) = spec(db={"tolerations": [toleration]}).db.tolerations
    assert kept["tolerationSeconds"] == 30
    assert isinstance(kept["tolerationSeconds"], int)


def test_a_null_value_is_unset_as_the_api_server_prunes_it() -> None:
    db = spec(db={"affinity": None, "tolerations": None, "nodeSelector": None}).db
    assert (db.affinity, db.tolerations, db.node_selector) == (None, [], {})


def test_every_error_in_one_value_is_named() -> None:
    bad = [{"operator": "Maybe", "effect": "Sometimes", "tolerationSeconds": "long"}]
    with pytest.raises(ValidationError) as refused:
        spec(cache={"image": "redis:7", "tolerations": bad})
    where = {".".join(str(part) for part in error["loc"]) for error in refused.value.errors()}
    assert where == {f"cache.tolerations.0.{name}" for name in ("operator", "effect", "tolerationSeconds")}


def test_published_schema_is_the_crds_with_unknown_fields_refused() -> None:
    published = ShardDBSpec.model_json_schema(by_alias=True)["$defs"]["DbPod"]["properties"]["affinity"]
    node_affinity = published["properties"]["nodeAffinity"]
    assert node_affinity["additionalProperties"] is False
    without = {k: v for k, v in node_affinity.items() if k != "additionalProperties"}
    assert without.keys() == corev1.crd_schema("affinity")["properties"]["nodeAffinity"].keys()


def test_a_huge_bad_value_is_not_quoted_in_full() -> None:
    with pytest.raises(ValidationError) as refused:
        spec(db={"tolerations": [{"operator": "x" * 100_000}]})
    (error,) = refused.value.errors()
    assert len(error["msg"]) <= 300


@pytest.mark.parametrize("size", ["512Ki", "0", "-1Gi"])
def test_a_wal_bound_the_crd_refuses_is_still_answered_as_one_megabyte(size: str) -> None:
    """The CRD's CEL rule refuses it (the cluster tier shows it); a request the schema allows is always answered."""
    base = {"shards": 1, "dbImage": "postgres:16", "cache": {"image": "redis:7"}}
    spec = ShardDBSpec.model_validate({**base, "replication": {"members": 2, "maxSlotWalKeepSize": size}})
    assert slot_wal_keep_mb(spec) == 1
