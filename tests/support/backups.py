"""A ShardDB that backs up, as the hook tests send it: its store, and its CronJob's record of its runs."""

from __future__ import annotations

from typing import Any

from .replication import answer, applied, healthy, parent, primary_slice, request, sync_record

Obj = dict[str, Any]
STORE = {
    "destinationPath": "s3://backups/orders",
    "endpointURL": "https://s3.example.com",
    "s3Credentials": {
        "accessKeyId": {"name": "backup-s3", "key": "ACCESS_KEY_ID"},
        "secretAccessKey": {"name": "backup-s3", "key": "ACCESS_SECRET_KEY"},
    },
}


def with_runs(status: Obj) -> Obj:
    """The answer for a running ShardDB with members that backs up, its CronJob recording ``status``."""
    body = parent({"backup": {"objectStore": STORE}})
    marks = [*healthy(), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    reply = answer(request(body))
    for _stage in ("ready", "registered", "running"):
        reply = answer(request(body, applied(reply["children"]), marks))
    children = applied(reply["children"])
    children["CronJob.batch/v1"]["demo-backup"]["status"] = status
    return answer(request(body, children, marks))


# A CronJob whose last run succeeded, and whose next run is going.
RUNS_WITH_ONE_GOING = {
    "lastScheduleTime": "2026-12-07T00:00:00Z",
    "lastSuccessfulTime": "2026-12-06T00:41:07Z",
    "active": [{"kind": "Job", "name": "demo-backup-29420640", "namespace": "shop"}],
}


def cronjob_recording(status: Obj) -> Obj:
    """The base backups' CronJob of ShardDB ``demo`` as observed, recording ``status``."""
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "demo-backup", "namespace": "shop", "creationTimestamp": "2026-12-01T10:00:00Z"},
        "spec": {"schedule": "0 0 * * *"},
        "status": status,
    }
