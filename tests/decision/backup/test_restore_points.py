"""``<name>-point``: a CronJob never scheduled, whose Jobs, made by hand, mark every shard at one moment."""

from __future__ import annotations

import ast
from typing import Any

from hooks import names, render
from hooks.backup import pause, restore_points
from hooks.replication import objects
from hooks.spec import ShardDBSpec

from ...support.backups import STORE
from ...support.replication import BASE

Obj = dict[str, Any]
PASSWORD = {"secretKeyRef": {"name": "demo-db", "key": "superuser"}}


def spec() -> ShardDBSpec:
    fields: Obj = {
        **BASE,
        "replication": {"members": 2},
        "db": {"env": [{"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": PASSWORD}]},
        "backup": {"objectStore": STORE},
    }
    return ShardDBSpec.model_validate(fields)


def rendered(shards: int = 3) -> Obj:
    return render.restore_points("demo", spec(), shards)


def pod(shards: int = 3) -> Obj:
    found: Obj = rendered(shards)["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return found


def container(shards: int = 3) -> Obj:
    found: Obj = pod(shards)["containers"][0]
    return found


def env() -> dict[str, Obj]:
    found: dict[str, Obj] = {var["name"]: var for var in container()["env"]}
    return found


def test_the_cronjob_is_named_for_the_sharddb_and_never_scheduled() -> None:
    job = rendered()
    assert job["metadata"]["name"] == "demo-point"
    assert job["spec"]["suspend"] is True


def test_a_failed_job_is_never_retried_under_the_same_name() -> None:
    assert rendered()["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 0


def test_its_job_ends_within_a_deadline_that_holds_every_try() -> None:
    deadline = rendered()["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"]
    tries = pause.ATTEMPTS * (pause.LOCK_TIMEOUT_MS / 1000 + pause.RETRY_SECONDS)
    assert deadline > tries


def test_the_program_runs_in_the_member_image_against_each_shards_primary_service() -> None:
    command = container(shards=3)["command"]
    assert command[:3] == ["python3", "-c", restore_points.PROGRAM]
    assert command[3:] == ["demo-db-0-primary", "demo-db-1-primary", "demo-db-2-primary"]
    assert container()["image"] == spec().db_image


def test_the_program_is_the_pause_module_and_imports_only_what_the_image_has() -> None:
    tree = ast.parse(restore_points.PROGRAM)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "contextlib", "importlib", "os", "sys", "time", "typing"}


def test_the_point_is_named_after_the_job_by_the_downward_api() -> None:
    field = env()[pause.NAME_ENV]["valueFrom"]["fieldRef"]
    assert field == {"apiVersion": "v1", "fieldPath": "metadata.labels['batch.kubernetes.io/job-name']"}


def test_it_logs_in_as_the_superuser_over_tls_with_patronis_password_by_reference() -> None:
    found = env()
    assert found["PGUSER"]["value"] == names.SUPERUSER
    assert found["PGSSLMODE"]["value"] == "require"
    assert found["PGPASSWORD"]["valueFrom"] == PASSWORD


def test_no_token_is_mounted() -> None:
    assert pod()["automountServiceAccountToken"] is False


def test_its_pods_are_among_those_the_members_policy_admits_to_postgresql() -> None:
    labels = rendered()["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    policy = objects.member_policy("demo", 0, 5432, [], backups=True)
    peers = [peer["podSelector"]["matchLabels"] for peer in policy["spec"]["ingress"][0]["from"]]
    assert any(all(labels.get(key) == value for key, value in peer.items()) for peer in peers)
