"""When the next base backup is due (``status.backup.nextScheduleTime``, ``backup/runs.due``): the schedule's first
time after the last success, or before the first, after the CronJob was made; the overdue alert reads it."""

from __future__ import annotations

from typing import Any

from ...support.backups import STORE, with_runs
from ...support.replication import answer, applied, healthy, parent, primary_slice, request, sync_record

Obj = dict[str, Any]
MARKS = [*healthy(), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
MADE = "2026-12-05T09:14:00Z"


def backup(reply: Obj) -> Obj:
    found: Obj = reply["status"]["backup"]
    return found


def with_cronjob(status: Obj, schedule: str | None = None, made: str = MADE) -> Obj:
    """The answer for a running ShardDB backing up on ``schedule`` (the default when None), its CronJob made at
    ``made`` and recording ``status``."""
    fields: Obj = {"objectStore": STORE, **({"schedule": schedule} if schedule else {})}
    body = parent({"backup": fields})
    reply = answer(request(body))
    for _stage in ("ready", "registered", "running"):
        reply = answer(request(body, applied(reply["children"]), MARKS))
    children = applied(reply["children"])
    cronjob = children["CronJob.batch/v1"]["demo-backup"]
    cronjob["metadata"]["creationTimestamp"] = made
    cronjob["status"] = status
    return answer(request(body, children, MARKS))


def test_the_next_base_backup_is_due_at_the_schedules_first_time_after_the_last_success() -> None:
    reply = with_runs({"lastScheduleTime": "2026-12-07T00:00:00Z", "lastSuccessfulTime": "2026-12-07T00:38:12Z"})
    assert backup(reply)["nextScheduleTime"] == "2026-12-08T00:00:00Z"


def test_before_a_first_success_the_first_run_after_the_cronjob_was_made_is_due() -> None:
    assert backup(with_cronjob({}))["nextScheduleTime"] == "2026-12-06T00:00:00Z"


def test_a_failed_run_leaves_the_missed_time_due_so_it_reads_as_past() -> None:
    reply = with_cronjob({"lastScheduleTime": "2026-12-07T00:00:00Z", "lastSuccessfulTime": "2026-12-06T00:41:07Z"})
    assert backup(reply)["nextScheduleTime"] == "2026-12-07T00:00:00Z"


def test_the_due_time_follows_the_users_schedule() -> None:
    reply = with_cronjob({"lastSuccessfulTime": "2026-12-07T03:20:00Z"}, schedule="15 */6 * * *")
    assert backup(reply)["nextScheduleTime"] == "2026-12-07T06:15:00Z"


def test_a_schedule_that_never_comes_due_gives_no_due_time() -> None:
    assert "nextScheduleTime" not in backup(with_cronjob({}, schedule="0 0 31 2 *"))


def test_a_run_going_is_said_and_a_finished_one_is_not() -> None:
    active = [{"kind": "Job", "name": "demo-backup-29420640", "namespace": "shop"}]
    assert backup(with_cronjob({"active": active}))["running"] is True
    assert "running" not in backup(with_cronjob({"lastSuccessfulTime": "2026-12-07T00:38:12Z"}))


def test_the_status_is_the_same_answer_as_time_passes() -> None:
    status = {"lastScheduleTime": "2026-12-07T00:00:00Z", "lastSuccessfulTime": "2026-12-06T00:41:07Z"}
    assert backup(with_cronjob(status)) == backup(with_cronjob(status))
