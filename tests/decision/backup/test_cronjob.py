"""Base backups on a schedule: the CronJob the hooks render for a ShardDB with members that backs up, and its Job."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest

from hooks import names, render, template_choice
from hooks.backup import commands, cronjob, member
from hooks.spec import ShardDBSpec

from ...support.backups import STORE, with_runs
from ...support.replication import BASE, answer, applied, child, healthy, parent, primary_slice, request, sync_record

Obj = dict[str, Any]
SECRET = {"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "demo-db", "key": "superuser"}}}


def spec(**backup: Any) -> ShardDBSpec:
    return ShardDBSpec.model_validate(
        {
            **BASE,
            "replication": {"members": 2},
            "db": {"env": [SECRET]},
            "backup": {"objectStore": STORE, **backup},
        }
    )


def rendered(the_spec: ShardDBSpec | None = None, shards: int = 2) -> Obj:
    the_spec = the_spec or spec()
    assert the_spec.backup is not None
    return render.base_backups("demo", the_spec, the_spec.backup, shards)


def pod(job: Obj) -> Obj:
    found: Obj = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return found


def container(job: Obj) -> Obj:
    found: list[Obj] = pod(job)["containers"]
    assert len(found) == 1
    return found[0]


def script(job: Obj) -> str:
    words: list[str] = container(job)["command"]
    assert words[:2] == ["sh", "-c"]
    return words[2]


def running_with(fields: Obj, *, hibernated: bool = False) -> Obj:
    """The answer for a running ShardDB with members and ``fields``."""
    body = parent({**fields, "hibernated": hibernated} if hibernated else fields)
    marks = [*healthy(), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    new = answer(request(body))
    return answer(request(body, applied(new["children"]), marks))


def cronjobs(reply: Obj) -> list[str]:
    return [each["metadata"]["name"] for each in reply["children"] if each["kind"] == "CronJob"]


def test_a_sharddb_with_members_that_backs_up_gets_its_base_backups_and_restore_points_cronjobs() -> None:
    assert cronjobs(running_with({"backup": {"objectStore": STORE}})) == ["demo-backup", "demo-point"]


def test_a_sharddb_that_does_not_back_up_gets_no_cronjob() -> None:
    assert cronjobs(running_with({})) == []


def test_a_hibernated_sharddb_has_no_cronjobs_since_no_member_runs_to_back_up() -> None:
    assert cronjobs(running_with({"backup": {"objectStore": STORE}}, hibernated=True)) == []


def test_a_deleted_sharddb_has_its_cronjobs_removed_first() -> None:
    body = parent({"backup": {"objectStore": STORE}})
    children = applied(running_with({"backup": {"objectStore": STORE}})["children"])
    marks = [*healthy(), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    stopping = answer(request(body, children, marks, finalizing=True), finalize=True)
    assert cronjobs(stopping) == []


def test_the_schedule_defaults_to_daily_at_midnight_and_runs_are_never_concurrent() -> None:
    job = rendered()
    assert job["spec"]["schedule"] == "0 0 * * *"
    assert job["spec"]["concurrencyPolicy"] == "Forbid"


def test_the_schedule_is_the_users() -> None:
    assert rendered(spec(schedule="@hourly"))["spec"]["schedule"] == "@hourly"


def test_a_new_schedule_or_retention_restarts_no_member() -> None:
    before = template_choice.inputs(spec(), "db")
    assert template_choice.inputs(spec(schedule="30 2 * * *", retentionPolicy="4w"), "db") == before


def test_each_shard_is_backed_up_in_turn_from_its_standby_service_first() -> None:
    text = script(rendered(shards=3))
    takes = [line.split()[1] for line in text.splitlines() if line.startswith("take ")]
    assert takes == ["demo-db-0", "demo-db-1", "demo-db-2"]
    assert "for role in standby primary" in text


def test_the_engine_runs_in_the_member_against_its_own_socket() -> None:
    text = script(rendered())
    (line,) = [line for line in text.splitlines() if line.startswith("take demo-db-1 ")]
    assert commands.BASE_BACKUP in line
    assert f"--host {cronjob.SOCKET_DIR}" in line
    assert "demo-db-1" in line.split(commands.BASE_BACKUP, 1)[1]
    assert "COPY (SELECT 1) TO PROGRAM :'program'" in text


def test_without_a_retention_policy_nothing_is_deleted() -> None:
    assert commands.BACKUP_DELETE not in script(rendered())


def test_a_retention_policy_is_a_recovery_window_applied_to_every_shard_keeping_the_newest_backup() -> None:
    text = script(rendered(spec(retentionPolicy="30d")))
    deletes = [line for line in text.splitlines() if line.startswith(commands.BACKUP_DELETE)]
    assert len(deletes) == 2
    assert all("--retention-policy 'RECOVERY WINDOW OF 30 DAYS'" in line for line in deletes)
    assert all("--minimum-redundancy 1" in line for line in deletes)


UNITS = [("2w", "RECOVERY WINDOW OF 2 WEEKS"), ("6m", "RECOVERY WINDOW OF 6 MONTHS")]


@pytest.mark.parametrize(("written", "window"), UNITS)
def test_a_retention_policy_counts_in_barmans_units(written: str, window: str) -> None:
    backup = spec(retentionPolicy=written).backup
    assert backup is not None
    assert backup.recovery_window == window


def test_the_job_logs_in_with_the_superusers_password_from_the_same_secret_as_patroni() -> None:
    env = {var["name"]: var for var in container(rendered())["env"]}
    assert env["PGPASSWORD"]["valueFrom"] == SECRET["valueFrom"]
    assert env["PGUSER"]["value"] == "postgres"


def test_the_job_has_the_stores_credentials_and_ca_for_retention() -> None:
    job = rendered(spec(objectStore={**STORE, "endpointCA": {"name": "store-ca", "key": "ca.crt"}}))
    env = {var["name"] for var in container(job)["env"]}
    assert {member.ACCESS_KEY_ENV, member.SECRET_KEY_ENV, member.CA_ENV} <= env
    assert [v["name"] for v in pod(job)["volumes"]] == [member.CA_VOLUME]
    assert [m["mountPath"] for m in container(job)["volumeMounts"]] == [member.CA_DIR]


def test_the_jobs_pod_mounts_no_token_since_it_never_speaks_to_the_api_server() -> None:
    assert pod(rendered())["automountServiceAccountToken"] is False


def test_the_jobs_pods_carry_the_backup_component_that_the_members_policy_admits() -> None:
    template = rendered()["spec"]["jobTemplate"]["spec"]["template"]
    assert template["metadata"]["labels"][names.COMPONENT_LABEL] == names.BACKUP


def test_the_jobs_pod_runs_restricted_as_the_members_do() -> None:
    security = container(rendered())["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}


def test_the_script_is_valid_shell() -> None:
    sh = shutil.which("sh")
    assert sh, "sh is needed to parse the backup Job's script"
    result = subprocess.run([sh, "-n", "-c", script(rendered(spec(retentionPolicy="7d")))], capture_output=True)
    assert result.returncode == 0, result.stderr


def test_the_cronjob_is_the_same_answer_when_nothing_changed() -> None:
    fields = {"backup": {"objectStore": STORE}}
    first = child(running_with(fields)["children"], "CronJob", "demo-backup")
    again = child(running_with(fields)["children"], "CronJob", "demo-backup")
    assert first == again


# --- what the CronJob records of its runs: the status, and Degraded when the last run failed -------------------

SCHEDULED = "2026-12-07T00:00:00Z"
EARLIER_SUCCESS = "2026-12-06T00:41:07Z"
LATER_SUCCESS = "2026-12-07T00:38:12Z"


def degraded(reply: Obj) -> Obj:
    found: Obj = next(c for c in reply["status"]["conditions"] if c["type"] == "Degraded")
    return found


def test_the_status_carries_what_the_cronjob_records_of_its_runs() -> None:
    reply = with_runs({"lastScheduleTime": SCHEDULED, "lastSuccessfulTime": LATER_SUCCESS})
    backup = reply["status"]["backup"]
    assert (backup["lastScheduleTime"], backup["lastSuccessfulTime"]) == (SCHEDULED, LATER_SUCCESS)


def test_a_cronjob_that_never_ran_gives_no_run_times_and_no_trouble() -> None:
    reply = with_runs({})
    assert not {"lastScheduleTime", "lastSuccessfulTime", "running"} & set(reply["status"]["backup"])
    assert degraded(reply)["status"] == "False"


def test_a_last_run_that_succeeded_is_no_trouble() -> None:
    reply = with_runs({"lastScheduleTime": SCHEDULED, "lastSuccessfulTime": LATER_SUCCESS})
    assert degraded(reply)["status"] == "False"


def test_a_run_still_going_is_no_trouble() -> None:
    active = [{"kind": "Job", "name": "demo-backup-29420640", "namespace": "shop"}]
    reply = with_runs({"lastScheduleTime": SCHEDULED, "lastSuccessfulTime": EARLIER_SUCCESS, "active": active})
    assert degraded(reply)["status"] == "False"


def test_a_last_run_that_ended_without_success_is_degraded_naming_the_run_and_how_to_read_why() -> None:
    condition = degraded(with_runs({"lastScheduleTime": SCHEDULED, "lastSuccessfulTime": EARLIER_SUCCESS}))
    assert (condition["status"], condition["reason"]) == ("True", "BaseBackupFailed")
    assert f"scheduled {SCHEDULED} failed (the last that succeeded ended {EARLIER_SUCCESS})" in condition["message"]
    assert "kubectl logs -l app.kubernetes.io/instance=demo,app.kubernetes.io/component=backup" in condition["message"]


def test_a_first_run_that_failed_says_none_has_succeeded() -> None:
    condition = degraded(with_runs({"lastScheduleTime": SCHEDULED}))
    assert condition["reason"] == "BaseBackupFailed"
    assert "none has succeeded yet" in condition["message"]


def test_a_failed_backup_leaves_the_sharddb_available() -> None:
    reply = with_runs({"lastScheduleTime": SCHEDULED})
    available = next(c for c in reply["status"]["conditions"] if c["type"] == "Available")
    assert available["status"] == "True"
