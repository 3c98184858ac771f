"""What a member gains from ``spec.restore``: Patroni's custom bootstrap from the source ShardDB's backups.

Each shard of the new ShardDB starts from the same shard of the source (``<source>-db-<shard>`` in its
store): Patroni runs ``barman-cloud-restore`` instead of initdb, then PostgreSQL replays the source's
archived WAL to the target and promotes, on a new timeline. Patroni then sets this ShardDB's own
passwords, and the standbys clone from the new primary as usual. Patroni reads the bootstrap section only
when a shard's cluster is first made, so a shard that already runs never restores again.

Before it restores, a member checks that its own archive folder (``spec.backup``) holds no WAL yet
(``member.unused_archive``): a restored cluster archives on its own path, never over another cluster's
history.

The source store may live elsewhere, with other credentials: they reach the engine under names of their
own (``RESTORE_*``) and become boto3's only for the restore's commands, so the member's own archiving
keeps its store's.
"""

from __future__ import annotations

import shlex
from typing import Any

from .. import names
from . import commands, member
from .spec import Backup, Restore

Obj = dict[str, Any]

METHOD = "restore"
PREFIX = "RESTORE_"
CA_VOLUME = "restore-ca"
CA_DIR = "/etc/sharddb/restore-ca"
LATEST = "latest"
# boto3's names, each taken from the source's for the restore's commands alone.
BOTO_NAMES = (member.ACCESS_KEY_ENV, member.SECRET_KEY_ENV, member.REGION_ENV)


def server(restore: Restore, shard: int) -> str:
    """The source shard's folder in its store: the source's Patroni scope."""
    return names.shard_name(restore.source.name, shard)


def backup_id(restore: Restore) -> str:
    """The base backup to start from: the one named, the engine's choice before targetTime, or the newest."""
    target = restore.recovery_target
    if target.backup_id is not None:
        return target.backup_id
    return commands.AUTO if target.target_time is not None else LATEST


def as_source(restore: Restore, args: list[str]) -> str:
    """One shell line running ``args`` with the source store's credentials, region and CA as boto3's."""
    has_ca = restore.source.object_store.endpoint_ca is not None
    unset = [] if has_ca else ["-u", member.CA_ENV]
    taken = [*BOTO_NAMES, *([member.CA_ENV] if has_ca else [])]
    assigned = [f'{name}="${{{PREFIX}{name}}}"' for name in taken]
    return " ".join(["env", *unset, *assigned, commands.line(args)])


def restore_command(restore: Restore, shard: int) -> str:
    """PostgreSQL's ``restore_command`` while it replays the source's WAL."""
    return as_source(restore, commands.wal_restore(restore.source.object_store, server(restore, shard)))


def script(restore: Restore, backup: Backup | None, scope: str, shard: int, data_dir: str) -> str:
    """The bootstrap: check the own archive folder is unused, then restore the base backup into ``data_dir``."""
    lines = ["set -eu", *(member.unused_archive(backup, scope) if backup is not None else [])]
    chosen = backup_id(restore)
    time = restore.recovery_target.target_time if chosen == commands.AUTO else None
    args = commands.restore(restore.source.object_store, server(restore, shard), chosen, data_dir, time)
    lines.append(as_source(restore, args))
    return "\n".join(lines)


def postgres_time(rfc3339: str) -> str:
    """``targetTime`` as PostgreSQL's ``recovery_target_time`` takes it: its offset in digits.

    The server checks that setting before it loads its time zone abbreviations, so ``Z`` is refused there
    ("invalid value for parameter"), as the Patroni tier showed; ``+00:00`` is the same moment.
    """
    date, time = rfc3339[:10], rfc3339[11:]
    if time[-1:] in ("Z", "z"):
        time = time[:-1] + "+00:00"
    return f"{date} {time}"


def bootstrap(restore: Restore, backup: Backup | None, scope: str, shard: int, data_dir: str) -> Obj:
    """Patroni's ``bootstrap`` keys for a custom method: the script, and the recovery it starts PostgreSQL with."""
    target = restore.recovery_target
    recovery: dict[str, str] = {
        "restore_command": restore_command(restore, shard),
        # Follow the source's last timeline: its failovers are part of its history.
        "recovery_target_timeline": "latest",
    }
    if target.target_time is not None:
        recovery["recovery_target_time"] = postgres_time(target.target_time)
    if target.target_name is not None:
        recovery["recovery_target_name"] = target.target_name
    if target.target_time is not None or target.target_name is not None:
        recovery["recovery_target_action"] = "promote"
    return {
        "method": METHOD,
        METHOD: {
            "command": shlex.join(["sh", "-c", script(restore, backup, scope, shard, data_dir)]),
            # No --scope or --datadir appended: the script knows both.
            "no_params": True,
            "recovery_conf": recovery,
        },
    }


def env(restore: Restore) -> list[Obj]:
    """The source store's access key by reference, its region, and its CA file when one is named (``RESTORE_*``)."""
    return member.store_env(restore.source.object_store, PREFIX, CA_DIR)


def volumes(restore: Restore) -> list[Obj]:
    """The source store's CA Secret key as ``ca.crt``, when one is named."""
    return member.store_volumes(restore.source.object_store, CA_VOLUME)


def mounts(restore: Restore) -> list[Obj]:
    return member.store_mounts(restore.source.object_store, CA_VOLUME, CA_DIR)
