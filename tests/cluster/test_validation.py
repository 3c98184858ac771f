"""The API server refuses bad ShardDBs itself, with a message that names the field.

One refusal per case, each against a fresh namespace; the CRD's schema and its
CEL rules do this before any hook is called.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from hooks.errors import from_validation
from hooks.spec import ShardDBSpec

from ..support.kube import Kube, error_message
from ..support.samples import SPEC, sharddb

Obj = dict[str, Any]


def _spec(**changes: Any) -> Obj:
    spec = copy.deepcopy(SPEC)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = spec
        for key in parents:
            node = node.setdefault(key, {})
        if value is _DROP:
            node.pop(leaf)
        else:
            node[leaf] = value
    return spec


_DROP = object()

# (test id, spec, field the message must name, words the message must hold)
REFUSED_AT_CREATE: list[tuple[str, Obj, str, str]] = [
    ("shards-zero", _spec(shards=0), "spec.shards", "greater than or equal to 1"),
    ("shards-negative", _spec(shards=-2), "spec.shards", "greater than or equal to 1"),
    ("shards-over-limit", _spec(shards=1025), "spec.shards", "less than or equal to 1024"),
    ("shards-as-string", _spec(shards="three"), "spec.shards", "must be of type integer"),
    ("db-image-missing", _spec(dbImage=_DROP), "spec.dbImage", "Required value"),
    ("db-image-empty", _spec(dbImage=""), "spec.dbImage", "at least 1 chars long"),
    ("cache-missing", _spec(cache=_DROP), "spec.cache", "Required value"),
    ("cache-image-missing", _spec(cache__image=_DROP), "spec.cache.image", "Required value"),
    ("cache-image-empty", _spec(cache__image=""), "spec.cache.image", "at least 1 chars long"),
    ("cache-replicas-negative", _spec(cache__replicas=-1), "spec.cache.replicas", "greater than or equal to 0"),
    ("cache-flush-grace-zero", _spec(cache__flushGracePeriodSeconds=0), "spec.cache.flushGracePeriodSeconds", "1"),
    ("drain-grace-over-a-day", _spec(drainGracePeriodSeconds=86401), "spec.drainGracePeriodSeconds", "86400"),
    ("pod-start-grace-negative", _spec(podStartGraceSeconds=-1), "spec.podStartGraceSeconds", "or equal to 0"),
    ("pod-start-grace-over-an-hour", _spec(podStartGraceSeconds=3601), "spec.podStartGraceSeconds", "3600"),
    ("pod-start-grace-as-string", _spec(podStartGraceSeconds="2m"), "spec.podStartGraceSeconds", "type integer"),
    ("seed-command-empty-list", _spec(seedCommand=[]), "spec.seedCommand", "at least 1 items"),
    ("drain-command-empty-arg", _spec(drainCommand=["sh", ""]), "spec.drainCommand[1]", "at least 1 chars"),
    ("storage-size-empty", _spec(storage={"size": ""}), "spec.storage.size", "at least 1 chars long"),
    ("service-account-empty", _spec(serviceAccountName=""), "spec.serviceAccountName", "at least 1 chars long"),
    ("db-port-zero", _spec(db__port=0), "spec.db.port", "greater than or equal to 1"),
    ("cache-port-over-65535", _spec(cache__port=65536), "spec.cache.port", "less than or equal to 65535"),
    ("db-data-path-relative", _spec(db__dataPath="data"), "spec.db.dataPath", "should match '^/'"),
    ("priority-class-not-a-name", _spec(db__priorityClassName="High"), "spec.db.priorityClassName", "should match"),
    (
        "pod-label-overrides-selector",
        _spec(cache__podMetadata={"labels": {"app.kubernetes.io/instance": "other"}}),
        "spec.cache.podMetadata.labels",
        "ShardDB selects its pods by them",
    ),
]

# The core/v1 fields, refused by Kubernetes' own schema: (test id, spec, field, words, the hook's field)
REFUSED_BY_KUBERNETES_SCHEMA: list[tuple[str, Obj, str, str, str]] = [
    (
        "cpu-limit-not-a-quantity",
        _spec(db__resources={"limits": {"cpu": "lots"}}),
        "spec.db.resources.limits.cpu",
        "should match",
        "parent.spec.db.resources.limits.cpu",
    ),
    (
        "toleration-operator-maybe",
        _spec(db__tolerations=[{"key": "dedicated", "operator": "Maybe"}]),
        "spec.db.tolerations[0].operator",
        'Unsupported value: "Maybe": supported values: "Equal", "Exists"',
        "parent.spec.db.tolerations.0.operator",
    ),
    (
        "env-without-a-name",
        _spec(cache__env=[{"value": "x"}]),
        "spec.cache.env[0].name",
        "Required value",
        "parent.spec.cache.env.0.name",
    ),
    (
        "pull-secret-not-an-object",
        _spec(imagePullSecrets=["regcred"]),
        "spec.imagePullSecrets[0]",
        "must be of type object",
        "parent.spec.imagePullSecrets.0",
    ),
    (
        "spread-skew-not-an-integer",
        _spec(
            cache__topologySpreadConstraints=[
                {"maxSkew": "one", "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        ),
        "spec.cache.topologySpreadConstraints[0].maxSkew",
        "must be of type integer",
        "parent.spec.cache.topologySpreadConstraints.0.maxSkew",
    ),
]


@pytest.mark.parametrize(
    ("spec", "field", "words"), [c[1:] for c in REFUSED_AT_CREATE], ids=[c[0] for c in REFUSED_AT_CREATE]
)
def test_invalid_spec_is_refused_naming_the_field(
    kube: Kube, namespace: str, spec: Obj, field: str, words: str
) -> None:
    response = kube.create(sharddb("bad", namespace, spec))
    message = error_message(response)
    assert response.status_code == 422, message
    assert f"{field}:" in message
    assert words in message
    assert not kube.exists("ShardDB", "bad", namespace)


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [c[1:4] for c in REFUSED_BY_KUBERNETES_SCHEMA],
    ids=[c[0] for c in REFUSED_BY_KUBERNETES_SCHEMA],
)
def test_invalid_core_v1_value_is_refused_naming_the_field(
    kube: Kube, namespace: str, spec: Obj, field: str, words: str
) -> None:
    response = kube.create(sharddb("bad", namespace, spec))
    message = error_message(response)
    assert response.status_code == 422, message
    assert f"{field}: " in message
    assert words in message


@pytest.mark.parametrize(
    ("spec", "field"),
    [(c[1], c[4]) for c in REFUSED_BY_KUBERNETES_SCHEMA],
    ids=[c[0] for c in REFUSED_BY_KUBERNETES_SCHEMA],
)
def test_the_hook_refuses_the_same_core_v1_value_naming_the_same_field(spec: Obj, field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        ShardDBSpec.model_validate(spec)
    assert f"{field}: " in from_validation(refused.value, "parent.spec").message


def test_unknown_field_inside_affinity_is_refused_by_strict_validation(kube: Kube, namespace: str) -> None:
    affinity = {"nodeAffinity": {"preferred": [{"weight": 1}]}}
    response = kube.create(sharddb("bad", namespace, _spec(db__affinity=affinity)))
    assert response.status_code == 400, error_message(response)
    assert 'unknown field "spec.db.affinity.nodeAffinity.preferred"' in error_message(response)


def test_unknown_field_is_refused_by_strict_validation(kube: Kube, namespace: str) -> None:
    body = sharddb("bad", namespace, {**SPEC, "replicas": 3})
    result = kube.kubectl("apply", "--validate=strict", "-f", "-", stdin=yaml.safe_dump(body))
    assert result.returncode != 0
    assert 'unknown field "spec.replicas"' in result.stderr
    assert not kube.exists("ShardDB", "bad", namespace)


def test_unknown_nested_field_is_refused_over_rest(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb("bad", namespace, _spec(cache__size="1Gi")))
    assert response.status_code == 400, error_message(response)
    assert 'unknown field "spec.cache.size"' in error_message(response)


def _existing(kube: Kube, namespace: str, spec: Obj) -> None:
    response = kube.create(sharddb("live", namespace, spec))
    assert response.status_code == 201, error_message(response)


def test_decreasing_shards_is_refused_by_the_transition_rule(kube: Kube, namespace: str) -> None:
    _existing(kube, namespace, SPEC)
    response = kube.merge_patch("ShardDB", "live", namespace, {"spec": {"shards": 2}})
    message = error_message(response)
    assert response.status_code == 422, message
    assert "spec.shards: Forbidden: spec.shards may not decrease: shards hold data" in message
    assert kube.get("ShardDB", "live", namespace)["spec"]["shards"] == 3


def test_increasing_shards_is_accepted(kube: Kube, namespace: str) -> None:
    _existing(kube, namespace, SPEC)
    response = kube.merge_patch("ShardDB", "live", namespace, {"spec": {"shards": 4}})
    assert response.status_code == 200, error_message(response)
    assert response.json()["spec"]["shards"] == 4


def test_changing_storage_size_is_refused(kube: Kube, namespace: str) -> None:
    _existing(kube, namespace, {**SPEC, "storage": {"size": "10Gi"}})
    response = kube.merge_patch("ShardDB", "live", namespace, {"spec": {"storage": {"size": "20Gi"}}})
    message = error_message(response)
    assert response.status_code == 422, message
    assert "spec.storage: Forbidden: spec.storage is immutable" in message


def test_setting_a_storage_class_later_is_refused(kube: Kube, namespace: str) -> None:
    _existing(kube, namespace, SPEC)
    response = kube.merge_patch("ShardDB", "live", namespace, {"spec": {"storage": {"storageClassName": "fast"}}})
    message = error_message(response)
    assert response.status_code == 422, message
    assert "spec.storage: Forbidden: spec.storage is immutable" in message


def test_removing_storage_does_not_reset_it_to_the_default(kube: Kube, namespace: str) -> None:
    _existing(kube, namespace, {**SPEC, "storage": {"size": "10Gi"}})
    response = kube.merge_patch("ShardDB", "live", namespace, {"spec": {"storage": None}})
    assert response.status_code == 422, error_message(response)
    assert kube.get("ShardDB", "live", namespace)["spec"]["storage"] == {"size": "10Gi"}


def test_storage_size_that_is_not_a_quantity_is_refused(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb("bad", namespace, _spec(storage={"size": "lots"})))
    message = error_message(response)
    assert response.status_code == 422, message
    assert "spec.storage.size: Invalid value" in message
    assert "must be a positive Kubernetes quantity" in message
