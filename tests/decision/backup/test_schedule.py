"""A ``spec.backup.schedule`` the API server would refuse for a CronJob: the CronJob keeps what it has, and the
ShardDB says why, naming the field (``backup/schedule.py``; held to the API server by the cluster tier)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hooks import names
from hooks.backup import schedule

from ...support.backups import STORE
from ...support.replication import answer, applied, healthy, parent, primary_slice, request, sync_record

Obj = dict[str, Any]
REFUSED = "61 * * * *"
MARKS = [*healthy(), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]


def running(schedule: str) -> tuple[Obj, Obj]:
    """A running ShardDB that backs up on ``schedule``: its body and the children of its last answer."""
    body = parent({"backup": {"objectStore": STORE, "schedule": schedule}})
    reply = answer(request(body))
    for _stage in ("ready", "registered", "running"):
        reply = answer(request(body, applied(reply["children"]), MARKS))
    return body, applied(reply["children"])


def edited(children: Obj, schedule: str) -> Obj:
    """The answer once ``spec.backup.schedule`` is edited to ``schedule``."""
    body = parent({"backup": {"objectStore": STORE, "schedule": schedule}})
    return answer(request(body, children, MARKS))


def backup_cronjob(reply: Obj) -> Obj | None:
    name = names.backup_name("demo")
    return next((c for c in reply["children"] if c["kind"] == "CronJob" and c["metadata"]["name"] == name), None)


def degraded(reply: Obj) -> Obj:
    found: Obj = next(c for c in reply["status"]["conditions"] if c["type"] == "Degraded")
    return found


def test_a_refused_schedule_keeps_the_cronjobs_own() -> None:
    _, children = running("@hourly")
    kept = backup_cronjob(edited(children, REFUSED))
    assert kept is not None
    assert kept["spec"]["schedule"] == "@hourly"


def test_a_refused_schedule_is_degraded_naming_the_field_why_and_what_is_kept() -> None:
    _, children = running("@hourly")
    condition = degraded(edited(children, REFUSED))
    assert (condition["status"], condition["reason"]) == ("True", "BackupScheduleRefused")
    assert "spec.backup.schedule '61 * * * *' is refused for a CronJob (minute '61'" in condition["message"]
    assert "the CronJob keeps '@hourly'" in condition["message"]


def test_a_refused_schedule_leaves_the_sharddb_available_and_every_other_child_as_it_was() -> None:
    _, children = running("@hourly")
    before = answer(request(parent({"backup": {"objectStore": STORE, "schedule": "@hourly"}}), children, MARKS))
    after = edited(children, REFUSED)
    available = next(c for c in after["status"]["conditions"] if c["type"] == "Available")
    assert available["status"] == "True"
    assert after["children"] == before["children"]


def test_a_new_sharddb_with_a_refused_schedule_gets_no_base_backups_cronjob_until_it_is_fixed() -> None:
    _, children = running(REFUSED)
    assert "demo-backup" not in children.get("CronJob.batch/v1", {})
    assert "demo-point" in children.get("CronJob.batch/v1", {})
    assert "no base backups' CronJob is made until it is" in degraded(edited(children, REFUSED))["message"]


def test_a_fixed_schedule_is_written_and_the_sharddb_is_no_longer_degraded_for_it() -> None:
    _, children = running("@hourly")
    reply = edited(children, "30 2 * * *")
    found = backup_cronjob(reply)
    assert found is not None
    assert found["spec"]["schedule"] == "30 2 * * *"
    assert degraded(reply)["reason"] != "BackupScheduleRefused"


# --- the next time a schedule runs (held to Kubernetes' own cron parser by tests/cluster/test_backup_times.py) ---


def test_a_time_exactly_on_the_schedule_gives_the_next_one_not_itself() -> None:
    at = datetime(2026, 12, 7, 0, 0, tzinfo=UTC)
    assert schedule.following("0 0 * * *", at) == datetime(2026, 12, 8, 0, 0, tzinfo=UTC)


def test_a_day_named_in_both_day_fields_runs_on_either() -> None:
    at = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)  # a Monday; the 11th is a Friday
    assert schedule.following("0 0 13 * 5", at) == datetime(2026, 12, 11, 0, 0, tzinfo=UTC)


def test_a_star_in_one_day_field_runs_only_where_both_match() -> None:
    at = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    assert schedule.following("0 0 */1 * 5", at) == datetime(2026, 12, 11, 0, 0, tzinfo=UTC)
    assert schedule.following("0 0 13 * *", at) == datetime(2026, 12, 13, 0, 0, tzinfo=UTC)


def test_a_time_in_another_zone_is_read_in_utc() -> None:
    at = datetime(2026, 12, 7, 1, 30, tzinfo=timezone(timedelta(hours=2)))  # 23:30 UTC the day before
    assert schedule.following("0 0 * * *", at) == datetime(2026, 12, 7, 0, 0, tzinfo=UTC)


def test_a_schedule_with_no_time_gives_none() -> None:
    assert schedule.following("0 0 31 2 *", datetime(2026, 12, 7, tzinfo=UTC)) is None


def test_a_refused_schedule_gives_none() -> None:
    assert schedule.following(REFUSED, datetime(2026, 12, 7, tzinfo=UTC)) is None
