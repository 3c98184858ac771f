"""Every shard's base backup on ``spec.backup.schedule``: a CronJob whose Job has each shard's standby take one.

barman-cloud-backup copies the data folder it backs up, so it must run where that folder is: in a member.
The Job logs in to the shard's standby Service (its primary Service when no standby answers) as the
superuser, over TLS with the password, as Patroni's own sessions do, and runs the engine there with
``COPY ... TO PROGRAM``: PostgreSQL starts it as its own user in the member's container, with the
member's environment (the store's credentials, region and CA) and its socket (trust, for the engine's
own session). So the Job needs no API access (no token is mounted), no exec permission, no port or
sidecar in the members; PostgreSQL's port admits it, as it does the seed Job.

One shard at a time, so a node carries one backup's reads; a shard that fails does not stop the next,
and the Job fails at the end, naming each. A shard fails too when its primary's ``pg_stat_archiver`` says
archiving fails: a base backup restores nothing past the last segment archived. Then retention (skipped for
such a shard, so its older backups stay): ``barman-cloud-backup-delete`` in the Job's own
pod (the store's credentials and CA, no database) deletes what no restore within the window needs, never
the newest base backup. The engine's messages go to the member's log; the Job's log says which shard, from
which member, and whether it ended well.

The CronJob goes with the shards: a hibernated or deleted ShardDB has no member to back up. One Job at a
time (``Forbid``): a backup that outlasts its period is not run twice.
"""

from __future__ import annotations

import shlex
from typing import Any

from .. import names
from ..names import SUPERUSER
from . import commands, member
from .spec import Backup

Obj = dict[str, Any]

PASSWORD_SOURCE = "PATRONI_SUPERUSER_PASSWORD"
# Where the engine reaches its member's PostgreSQL: the image's socket folder, where pg_hba trusts the pod.
SOCKET_DIR = "/var/run/postgresql"
HISTORY = 3  # finished Jobs kept, successful and failed, for their logs
BACKOFF_LIMIT = 1  # a failed run is retried once; the next scheduled run tries again anyway
# A run that could not start within this long of its time (the controller down, the previous one still
# running) is skipped: the next one comes on schedule.
STARTING_DEADLINE_SECONDS = 3600
# How long a failure of the archiver seen by the Job waits to be read again: the archiver retries a failed segment
# at its next round, at most a minute later (PostgreSQL's archiver wakes at least once a minute).
ARCHIVER_ROUND_SECONDS = 65

# ``take <scope> <engine's line>``: the backup of one shard, from a standby when one answers.
TAKE = """\
set -u
export PGCONNECT_TIMEOUT=10 PGSSLMODE=require PGDATABASE=postgres PGAPPNAME=sharddb-backup
say() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $*"; }
take() {
  why=""
  for role in standby primary; do
    if why=$(psql -h "$1-$role" -XAtqc "SELECT 1" 2>&1 >/dev/null); then
      say "$1: base backup from its $role ($1-$role)"
      if psql -h "$1-$role" -XAtq -v ON_ERROR_STOP=1 -v program="$2" >/dev/null <<'SQL'
COPY (SELECT 1) TO PROGRAM :'program';
SQL
      then
        say "$1: base backup taken"
        return 0
      fi
      say "$1: base backup failed; the member's log holds the engine's messages"
      return 1
    fi
  done
  say "$1: no member to back up from at $1-standby or $1-primary: $why"
  return 1
}
# ``archiving <scope>``: whether the shard's primary archives, by its own pg_stat_archiver: a failure after the
# last segment archived fails the run. Seen once, it is read again after the archiver's next round (it retries a
# failed segment within a minute), so a store's passing hiccup is not a failure.
ARCHIVER="SELECT last_failed_wal, last_failed_time FROM pg_catalog.pg_stat_archiver
  WHERE last_failed_time > coalesce(last_archived_time, '-infinity')"
archiving() {
  for attempt in 1 2; do
    if ! said=$(psql -h "$1-primary" -XAtq -F ' ' -c "$ARCHIVER" 2>&1); then
      say "$1: archiving not read at $1-primary: $said"
      return 1
    fi
    [ -z "$said" ] && return 0
    [ "$attempt" = 1 ] && say "$1: the archiver failed ($said); read again after its next round" && sleep RECHECK
  done
  say "$1: archiving fails: the last failure (segment, time): $said; nothing archived since, so no backup of it" \
    "restores past that; the primary's log holds the engine's messages"
  return 1
}
failed=""
archive_failed=""
"""

END = """\
if [ -n "$failed" ]; then
  say "failed:$failed"
  exit 1
fi
say "every shard backed up"
"""


def script(parent: str, backup: Backup, shards: int, port: int) -> str:
    """The Job's shell script: each shard's backup in order, then retention, then a failure if any step failed."""
    store = backup.object_store
    lines = [TAKE.replace("RECHECK", str(ARCHIVER_ROUND_SECONDS))]
    for shard in range(shards):
        scope = names.shard_name(parent, shard)
        engine = commands.base_backup(store, scope, SOCKET_DIR, port, SUPERUSER)
        lines.append(f'take {scope} {shlex.quote(commands.line(engine))} || failed="$failed {scope}"\n')
        archived = f'archive_failed="$archive_failed {scope}"'
        lines.append(f'archiving {scope} || {{ failed="$failed {scope}(archiving)"; {archived}; }}\n')
    window = backup.recovery_window
    if window is not None:
        for shard in range(shards):
            scope = names.shard_name(parent, shard)
            delete = commands.line(commands.backup_delete(store, scope, window))
            # A shard whose archiving fails keeps every backup and segment: its new backups may not restore.
            lines.append(
                f'case " $archive_failed " in *" {scope} "*) say "{scope}: retention skipped: archiving fails" ;;\n'
            )
            lines.append(f'*) say "{scope}: retention, {window}"\n')
            lines.append(f'{delete} || failed="$failed {scope}(retention)" ;;\nesac\n')
    lines.append(END)
    return "".join(lines)


def login(port: int, db_env: list[Obj]) -> list[Obj]:
    """libpq's login as the superuser, its password from the same entry of ``spec.db.env`` Patroni reads it from:
    the base backups' and the restore points' Jobs alike."""
    password = [{**entry, "name": "PGPASSWORD"} for entry in db_env if entry.get("name") == PASSWORD_SOURCE]
    return [{"name": "PGPORT", "value": str(port)}, {"name": "PGUSER", "value": SUPERUSER}, *password[:1]]


def env(backup: Backup, port: int, db_env: list[Obj]) -> list[Obj]:
    """libpq's login and boto3's environment, for retention."""
    return [*login(port, db_env), *member.env(backup)]


def cronjob(parent: str, backup: Backup, pod: Obj) -> Obj:
    """``<name>-backup``: one Job at a time, each backing up every shard in turn; ``pod`` runs ``script`` with ``env``
    in the member image (as the shard pods run), and gets no token and the store's CA here."""
    pod = {**pod, "automountServiceAccountToken": False}  # it never speaks to the API server
    volumes = member.volumes(backup)
    if volumes:
        (container,) = pod["containers"]
        pod["volumes"] = volumes
        pod["containers"] = [{**container, "volumeMounts": member.mounts(backup)}]
    labels = names.labels(parent, names.BACKUP)
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": names.backup_name(parent), "labels": labels},
        "spec": {
            "schedule": backup.schedule,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
            "successfulJobsHistoryLimit": HISTORY,
            "failedJobsHistoryLimit": HISTORY,
            "jobTemplate": {
                "metadata": {"labels": labels},
                "spec": {
                    "backoffLimit": BACKOFF_LIMIT,
                    "template": {"metadata": {"labels": labels}, "spec": pod},
                },
            },
        },
    }
