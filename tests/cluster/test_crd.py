"""The ShardDB CRD installs, serves its names, defaults a sample, and prints useful columns."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tools import crd_schema

from ..support.kube import Kube, error_message
from ..support.samples import EVERY_FIELD, SPEC, examples, sharddb
from .conftest import CRD_NAME
from .loop import Loop

EXAMPLES = examples()


def test_crd_is_established_with_its_names_accepted(kube: Kube) -> None:
    crd = kube.get("CustomResourceDefinition", CRD_NAME)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    assert crd["status"]["acceptedNames"]["shortNames"] == ["sdb"]
    assert crd["status"]["acceptedNames"]["categories"] == ["all", "sharddb"]


def _contains(stored: Any, given: Any) -> bool:
    """Every field given is stored as given (defaults may add more)."""
    if isinstance(given, dict):
        return isinstance(stored, dict) and all(_contains(stored.get(k), v) for k, v in given.items())
    return bool(stored == given)


@pytest.mark.parametrize("sample", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_example_sharddb_is_accepted_as_written(kube: Kube, namespace: str, sample: dict[str, Any]) -> None:
    body = copy.deepcopy(sample)
    body["metadata"]["namespace"] = namespace
    response = kube.create(body)
    assert response.status_code == 201, error_message(response)
    assert _contains(response.json()["spec"], sample["spec"])


def test_omitted_fields_get_the_hooks_defaults(kube: Kube, namespace: str) -> None:
    spec = {"shards": 2, "dbImage": "postgres:16", "cache": {"image": "redis:7"}}
    response = kube.create(sharddb("defaults", namespace, spec))
    assert response.status_code == 201, error_message(response)
    assert response.json()["spec"] == {
        "shards": 2,
        "dbImage": "postgres:16",
        "db": {"port": 5432, "dataPath": "/var/lib/postgresql/data"},
        "cache": {"image": "redis:7", "replicas": 1, "flushGracePeriodSeconds": 30, "port": 6379},
        "storage": {"size": "1Gi"},
        "replication": {"members": 1, "synchronous": True, "strict": False},
        "seedTimeoutSeconds": 3600,
        "drainGracePeriodSeconds": 60,
        "podStartGraceSeconds": 120,
        "paused": False,
        "hibernated": False,
    }


def test_a_sharddb_setting_every_field_round_trips_unchanged(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb("full", namespace, EVERY_FIELD))
    assert response.status_code == 201, error_message(response)
    assert response.json()["spec"] == EVERY_FIELD
    assert kube.get("ShardDB", "full", namespace)["spec"] == EVERY_FIELD


def test_a_null_core_v1_value_is_dropped_as_unset(kube: Kube, namespace: str) -> None:
    spec = {**SPEC, "db": {"affinity": None, "tolerations": None}}
    response = kube.create(sharddb("nulls", namespace, spec))
    assert response.status_code == 201, error_message(response)
    assert response.json()["spec"]["db"] == {"port": 5432, "dataPath": "/var/lib/postgresql/data"}


def test_committed_core_v1_schemas_are_what_this_api_server_generates(kube: Kube) -> None:
    openapi, version = crd_schema.fetch(kube.http)
    generated = crd_schema.generate(openapi, version, crd_schema.CRD_FILE.read_text())
    assert generated.crd == crd_schema.CRD_FILE.read_text(), "crds/sharddb.yaml is stale: run `make crd`"
    assert generated.hook == crd_schema.HOOK_FILE.read_text(), "hooks/corev1.json is stale: run `make crd`"


def test_short_name_and_category_find_sharddbs(kube: Kube, namespace: str) -> None:
    assert kube.create(sharddb("found", namespace)).status_code == 201
    for resource in ("sdb", "sharddb", "all"):
        result = kube.kubectl("get", resource, "-n", namespace, "-o", "name")
        assert result.returncode == 0, result.stderr
        assert "sharddb.mygroup.example.com/found" in result.stdout.split(), resource


def test_kubectl_get_prints_shards_ready_phase_cache_progress_health_newer_template_age(
    kube: Kube, namespace: str
) -> None:
    assert kube.create(sharddb("listed", namespace)).status_code == 201
    result = kube.kubectl("get", "sharddb", "-n", namespace)
    assert result.returncode == 0, result.stderr
    header = result.stdout.splitlines()[0].split()
    assert header == ["NAME", "SHARDS", "READY", "PHASE", "CACHE", "PROGRESS", "HEALTH", "NEWER-TEMPLATE", "AGE"]


def test_kubectl_get_wide_adds_updated_shards(kube: Kube, namespace: str) -> None:
    assert kube.create(sharddb("wide", namespace)).status_code == 201
    result = kube.kubectl("get", "sharddb", "-n", namespace, "-o", "wide")
    assert result.returncode == 0, result.stderr
    assert "UPDATED" in result.stdout.splitlines()[0].split()


def test_kubectl_get_shows_an_available_sharddb_as_ready(kube: Kube, namespace: str) -> None:
    loop = Loop(kube, namespace)
    loop.create(SPEC)
    loop.until("Available")
    result = kube.kubectl("get", "sharddb", "demo", "-n", namespace, "--no-headers")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:7] == ["demo", "3", "True", "Available", "true", "Complete", "AsExpected"]


def test_schema_documents_every_field_for_kubectl_explain(kube: Kube) -> None:
    result = kube.kubectl("explain", "sharddb.spec.cache.flushGracePeriodSeconds")
    assert result.returncode == 0, result.stderr
    assert "its termination grace period" in " ".join(result.stdout.split())


def test_strict_without_synchronous_is_refused_naming_the_field(kube: Kube, namespace: str) -> None:
    replication = {"members": 2, "synchronous": False, "strict": True}
    response = kube.create(sharddb("loose", namespace, {**SPEC, "replication": replication}))
    assert response.status_code == 422, error_message(response)
    assert "spec.replication.strict needs spec.replication.synchronous true" in error_message(response)


BACKUP = {
    "objectStore": {
        "destinationPath": "s3://backups/orders",
        "s3Credentials": {
            "accessKeyId": {"name": "backup-s3", "key": "ACCESS_KEY_ID"},
            "secretAccessKey": {"name": "backup-s3", "key": "ACCESS_SECRET_KEY"},
        },
    }
}


def test_a_backup_of_single_copy_shards_is_refused_naming_the_field(kube: Kube, namespace: str) -> None:
    """The engine runs in the Patroni member image; a single copy runs a plain PostgreSQL image."""
    response = kube.create(sharddb("alone", namespace, {**SPEC, "backup": BACKUP}))
    assert response.status_code == 422, error_message(response)
    assert "spec.backup needs spec.replication.members 2 or 3" in error_message(response)


def test_a_backup_of_shards_with_members_is_accepted_with_its_defaults(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb("kept", namespace, {**SPEC, "replication": {"members": 2}, "backup": BACKUP}))
    assert response.status_code == 201, error_message(response)
    stored = response.json()["spec"]["backup"]
    assert (stored["archiveTimeoutSeconds"], stored["objectStore"]["region"]) == (60, "us-east-1")
    assert (stored["schedule"], stored.get("retentionPolicy")) == ("0 0 * * *", None)


@pytest.mark.parametrize(
    ("field", "value"),
    [("schedule", "daily"), ("schedule", "0 0 * *"), ("retentionPolicy", "30"), ("retentionPolicy", "0d")],
)
def test_a_schedule_or_retention_policy_that_does_not_parse_is_refused_naming_the_field(
    kube: Kube, namespace: str, field: str, value: str
) -> None:
    backup = {**BACKUP, field: value}
    response = kube.create(sharddb("odd", namespace, {**SPEC, "replication": {"members": 2}, "backup": backup}))
    assert response.status_code == 422, error_message(response)
    assert f"spec.backup.{field}" in error_message(response)


@pytest.mark.parametrize(
    ("field", "value"),
    [("destinationPath", "https://backups/orders"), ("endpointURL", "http://s3.example.com")],
)
def test_a_store_address_that_is_not_s3_over_https_is_refused_naming_the_field(
    kube: Kube, namespace: str, field: str, value: str
) -> None:
    backup = {"objectStore": {**BACKUP["objectStore"], field: value}}
    response = kube.create(sharddb("plain", namespace, {**SPEC, "replication": {"members": 2}, "backup": backup}))
    assert response.status_code == 422, error_message(response)
    assert f"spec.backup.objectStore.{field}" in error_message(response)


MEMBERS = {**SPEC, "replication": {"members": 2}}
RESTORE = {"source": {"name": "orders", "objectStore": BACKUP["objectStore"]}}


def test_a_restore_into_single_copy_shards_is_refused_naming_the_field(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb("alone", namespace, {**SPEC, "restore": RESTORE}))
    assert response.status_code == 422, error_message(response)
    assert "spec.restore needs spec.replication.members 2 or 3" in error_message(response)


def test_a_restore_into_a_new_sharddb_with_members_is_accepted(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb("again", namespace, {**MEMBERS, "restore": RESTORE}))
    assert response.status_code == 201, error_message(response)
    assert response.json()["spec"]["restore"]["source"]["objectStore"]["region"] == "us-east-1"


def test_a_restore_asked_of_a_running_sharddb_is_refused_naming_the_field(kube: Kube, namespace: str) -> None:
    assert kube.create(sharddb("running", namespace, MEMBERS)).status_code == 201
    response = kube.merge_patch("ShardDB", "running", namespace, {"spec": {"restore": RESTORE}})
    assert response.status_code == 422, error_message(response)
    assert "spec.restore is read only when a ShardDB is created" in error_message(response)


def test_a_restores_target_changed_later_is_refused(kube: Kube, namespace: str) -> None:
    assert kube.create(sharddb("restored", namespace, {**MEMBERS, "restore": RESTORE})).status_code == 201
    target = {"spec": {"restore": {"recoveryTarget": {"targetName": "later"}}}}
    response = kube.merge_patch("ShardDB", "restored", namespace, target)
    assert response.status_code == 422, error_message(response)
    assert "spec.restore is read only when a ShardDB is created" in error_message(response)


def test_shards_added_while_a_restore_is_set_are_refused_and_accepted_once_it_is_removed(
    kube: Kube, namespace: str
) -> None:
    assert kube.create(sharddb("grown", namespace, {**MEMBERS, "restore": RESTORE})).status_code == 201
    refused = kube.merge_patch("ShardDB", "grown", namespace, {"spec": {"shards": SPEC["shards"] + 1}})
    assert refused.status_code == 422, error_message(refused)
    assert "spec.shards may not change while spec.restore is set" in error_message(refused)
    removed = kube.merge_patch("ShardDB", "grown", namespace, {"spec": {"restore": None}})
    assert removed.status_code == 200, error_message(removed)
    grown = kube.merge_patch("ShardDB", "grown", namespace, {"spec": {"shards": SPEC["shards"] + 1}})
    assert grown.status_code == 200, error_message(grown)


def test_a_restore_archiving_into_its_sources_own_folders_is_refused_naming_the_field(
    kube: Kube, namespace: str
) -> None:
    """Same name, same path: the restored cluster's new timeline would land in the source's folders."""
    source = {"name": "orders", "objectStore": {**BACKUP["objectStore"], "destinationPath": "s3://backups/orders/"}}
    spec = {**MEMBERS, "backup": BACKUP, "restore": {"source": source}}
    response = kube.create(sharddb("orders", namespace, spec))
    assert response.status_code == 422, error_message(response)
    assert "spec.backup.objectStore.destinationPath is where the restore's source" in error_message(response)


def test_a_restore_under_another_name_may_archive_beside_its_source(kube: Kube, namespace: str) -> None:
    response = kube.create(sharddb("orders-again", namespace, {**MEMBERS, "backup": BACKUP, "restore": RESTORE}))
    assert response.status_code == 201, error_message(response)


def test_a_restore_to_both_a_time_and_a_name_is_refused_naming_the_field(kube: Kube, namespace: str) -> None:
    target = {"targetTime": "2026-12-07T05:00:00Z", "targetName": "before-migration"}
    response = kube.create(sharddb("both", namespace, {**MEMBERS, "restore": {**RESTORE, "recoveryTarget": target}}))
    assert response.status_code == 422, error_message(response)
    assert "spec.restore.recoveryTarget: give targetTime or targetName, not both" in error_message(response)


@pytest.mark.parametrize(("field", "value"), [("targetTime", "2026-12-07 05:00"), ("backupID", "latest")])
def test_a_target_that_does_not_parse_is_refused_naming_the_field(
    kube: Kube, namespace: str, field: str, value: str
) -> None:
    restore = {**RESTORE, "recoveryTarget": {field: value}}
    response = kube.create(sharddb("odd", namespace, {**MEMBERS, "restore": restore}))
    assert response.status_code == 422, error_message(response)
    assert f"spec.restore.recoveryTarget.{field}" in error_message(response)


@pytest.mark.parametrize("size", ["512Ki", "0", "-1Gi"])
def test_a_wal_bound_under_one_mebibyte_is_refused_naming_the_field(kube: Kube, namespace: str, size: str) -> None:
    replication = {"members": 2, "maxSlotWalKeepSize": size}
    response = kube.create(sharddb("tight", namespace, {**SPEC, "replication": replication}))
    assert response.status_code == 422, error_message(response)
    assert "spec.replication.maxSlotWalKeepSize must be a Kubernetes quantity of at least 1Mi" in error_message(
        response
    )
