"""``<name>-point``: the template of the Jobs that write one restore point on every shard, run by a person.

A restore to a time brings each shard to what its own primary had committed by its own clock; a write that
spans shards may straddle that moment. A restore point written by ``pause`` marks a moment when no shard was
committing, so a restore to it (``recoveryTarget.targetName``) finds every shard at the same place in the
application's writes, but for a write made of separate transactions on several shards, one in flight.

The CronJob is never scheduled (``suspend``): a restore point is asked for before something, by name::

    kubectl create job before-migration --from=cronjob/<name>-point

and the Job's name (its pod's ``batch.kubernetes.io/job-name`` label, by the downward API) is the point's.
Its pod logs in to each shard's ``-primary`` Service as the base backups' Job does: the superuser, over TLS,
with the password Patroni has; no token is mounted. A failed Job is not retried: a retry would write the name
again after the first try had written it on some shards; ask again under another name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import names
from . import cronjob, pause

Obj = dict[str, Any]

SUFFIX = "point"
# The API server needs a schedule even where none is ever run.
SCHEDULE = "@yearly"
HISTORY = 3
DEADLINE_SECONDS = 300  # ATTEMPTS lock timeouts and their pauses fit well within it
JOB_NAME_FIELD = f"metadata.labels['{names.JOB_NAME_LABEL}']"
PROGRAM = Path(pause.__file__).read_text(encoding="utf-8")


def name(parent: str) -> str:
    """``<name>-point``: shorter than ``<name>-backup``, so the name limits the base backups set hold it too."""
    return f"{parent}-{SUFFIX}"


def hosts(parent: str, shards: int) -> list[str]:
    """Each shard's primary Service, the program's arguments."""
    return [names.role_service_name(parent, shard, names.PRIMARY) for shard in range(shards)]


def env(port: int, db_env: list[Obj]) -> list[Obj]:
    """The base backups' Job's login, over TLS only, and the point's name: the Job's."""
    point = {"name": pause.NAME_ENV, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": JOB_NAME_FIELD}}}
    tls = [{"name": "PGSSLMODE", "value": "require"}, {"name": "PGCONNECT_TIMEOUT", "value": "10"}]
    return [*cronjob.login(port, db_env), *tls, point]


def restore_points(parent: str, shards: int, pod: Obj) -> Obj:
    """Suspended; each Job once (no retry), as the pod ``pod`` runs ``PROGRAM``, given each shard's primary, with
    no token."""
    (container,) = pod["containers"]
    pod = {
        **pod,
        "automountServiceAccountToken": False,  # it never speaks to the API server
        "containers": [{**container, "command": [*container["command"], *hosts(parent, shards)]}],
    }
    labels = names.labels(parent, names.BACKUP)
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name(parent), "labels": labels},
        "spec": {
            "schedule": SCHEDULE,
            "suspend": True,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": HISTORY,
            "failedJobsHistoryLimit": HISTORY,
            "jobTemplate": {
                "metadata": {"labels": labels},
                "spec": {
                    "backoffLimit": 0,
                    "activeDeadlineSeconds": DEADLINE_SECONDS,
                    "template": {"metadata": {"labels": labels}, "spec": pod},
                },
            },
        },
    }
