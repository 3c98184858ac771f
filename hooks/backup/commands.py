"""barman-cloud's command lines for one shard, from ``spec.backup``: pure, so the Patroni tier runs these very lines.

Each shard is a "server" of its own in the engine's terms, named for its Patroni scope
(``<name>-db-<shard>``), under the ShardDB's ``destinationPath``: its WAL in ``<scope>/wals/`` and
its base backups in ``<scope>/base/``. The credentials, region and CA reach the engine through
boto3's own environment (``member.env``), never on a command line.
"""

from __future__ import annotations

import shlex

from .spec import ObjectStore

WAL_ARCHIVE = "barman-cloud-wal-archive"
WAL_RESTORE = "barman-cloud-wal-restore"
BASE_BACKUP = "barman-cloud-backup"
RESTORE = "barman-cloud-restore"
BACKUP_LIST = "barman-cloud-backup-list"
BACKUP_DELETE = "barman-cloud-backup-delete"
CHECK_WAL_ARCHIVE = "barman-cloud-check-wal-archive"
# backup_id for the engine's own choice: the newest base backup taken before --target-time, else the newest.
AUTO = "auto"
# Retention never deletes the newest base backup, whatever the window says.
MINIMUM_REDUNDANCY = 1
# Only S3 and S3-compatible stores for now; barman-cloud also speaks Azure and Google Cloud Storage.
CLOUD_PROVIDER = "aws-s3"
# PostgreSQL's placeholders in archive_command and restore_command.
WAL_PATH = "%p"
WAL_FILE = "%f"


def _store(store: ObjectStore) -> list[str]:
    """What every command says of the store: its provider and, unless it is AWS S3 itself, its endpoint."""
    args = ["--cloud-provider", CLOUD_PROVIDER]
    if store.endpoint_url is not None:
        args += ["--endpoint-url", store.endpoint_url]
    return args


def source(store: ObjectStore) -> str:
    """The destination path as the engine takes it: no trailing slash, so each shard's folder is one level down."""
    return store.destination_path.rstrip("/")


def wal_archive(store: ObjectStore, server: str) -> list[str]:
    """PostgreSQL's ``archive_command``: the segment ``%p``, gzip-compressed (the standard library's, nothing extra)."""
    return [WAL_ARCHIVE, *_store(store), "--gzip", source(store), server, WAL_PATH]


def wal_restore(store: ObjectStore, server: str) -> list[str]:
    """``restore_command``: the segment ``%f`` written to ``%p``; the engine finds its compression itself."""
    return [WAL_RESTORE, *_store(store), source(store), server, WAL_FILE, WAL_PATH]


def base_backup(store: ObjectStore, server: str, host: str, port: int, user: str) -> list[str]:
    """A base backup of the PostgreSQL at ``host`` (a socket folder in the member), gzip-compressed.

    Its checkpoint is immediate: on a standby the backup would otherwise wait for the next restartpoint,
    up to ``checkpoint_timeout``.
    """
    return [
        BASE_BACKUP,
        *_store(store),
        "--gzip",
        "--immediate-checkpoint",
        "--host",
        host,
        "--port",
        str(port),
        "--user",
        user,
        source(store),
        server,
    ]


def restore(
    store: ObjectStore, server: str, backup_id: str, data_dir: str, target_time: str | None = None
) -> list[str]:
    """Base backup ``backup_id`` (``latest``, ``auto``, or one the engine lists) of ``server`` into ``data_dir``.

    With ``auto`` and a ``target_time`` the engine picks the newest base backup taken before that time:
    a recovery cannot stop before its base backup's end.
    """
    target = ["--target-time", target_time] if target_time is not None else []
    return [RESTORE, *_store(store), *target, source(store), server, backup_id, data_dir]


def check_wal_archive(store: ObjectStore, server: str) -> list[str]:
    """Fails when ``server``'s folder already holds WAL: a new cluster must not archive over another's."""
    return [CHECK_WAL_ARCHIVE, *_store(store), source(store), server]


def backup_list(store: ObjectStore, server: str) -> list[str]:
    """The base backups of ``server`` the store holds, oldest first: what a restore can start from."""
    return [BACKUP_LIST, *_store(store), source(store), server]


def backup_delete(store: ObjectStore, server: str, window: str) -> list[str]:
    """Retention: the base backups of ``server`` no restore within ``window`` needs, and the WAL only they need."""
    return [
        BACKUP_DELETE,
        *_store(store),
        "--retention-policy",
        window,
        "--minimum-redundancy",
        str(MINIMUM_REDUNDANCY),
        source(store),
        server,
    ]


def line(args: list[str]) -> str:
    """One shell line; ``%p`` and ``%f`` stay bare, as PostgreSQL substitutes them before the shell runs."""
    return shlex.join(args)
