"""What a member gains from ``spec.backup``: Patroni's archive and restore settings, and the store's credentials.

The primary archives each finished segment (``archive_mode: on``: a standby archives nothing, and the
member promoted after a failover archives its new timeline from where it starts); a segment not yet full
is archived after ``archiveTimeoutSeconds``. Every member may fetch from the archive what its primary
no longer holds (``restore_command``), as a standby that was away long does.

A shard's new cluster archives only to a folder no cluster has used: before it restores or runs initdb
(``restore``, ``fresh``), a member checks its folder holds no WAL (``unused_archive``), and stops the
bootstrap if it does, naming the field in its log and its termination message, which the status shows.

The access key comes from the user's Secret by reference (the hooks never read it), the CA from another
as a read-only volume; ``spec.db.env`` entries of the same names win, as they do for Patroni's.
"""

from __future__ import annotations

import shlex
from typing import Any

from . import commands
from .spec import Backup, ObjectStore, SecretKeySelector

Obj = dict[str, Any]

ACCESS_KEY_ENV = "AWS_ACCESS_KEY_ID"
SECRET_KEY_ENV = "AWS_SECRET_ACCESS_KEY"
REGION_ENV = "AWS_DEFAULT_REGION"
CA_ENV = "AWS_CA_BUNDLE"
CA_VOLUME = "backup-ca"
CA_DIR = "/etc/sharddb/backup-ca"
CA_FILE = "ca.crt"
# The kubelet reads a stopped container's reason from here (``terminationMessagePath``'s default).
TERMINATION_LOG = "/dev/termination-log"
# World-readable: a CA certificate is public, and a pod whose user's securityContext sets no fsGroup
# (the files are then root's) must still read it.
CA_MODE = 0o444


def parameters(backup: Backup, scope: str) -> dict[str, str]:
    """PostgreSQL's settings for archiving the shard ``scope`` (a restart: ``archive_mode``)."""
    store = backup.object_store
    return {
        "archive_mode": "on",
        "archive_command": commands.line(commands.wal_archive(store, scope)),
        "archive_timeout": f"{backup.archive_timeout_seconds}s",
    }


def recovery(backup: Backup, scope: str) -> dict[str, str]:
    """Patroni's ``recovery_conf`` for a standby: WAL from the archive when the primary no longer has it."""
    return {"restore_command": commands.line(commands.wal_restore(backup.object_store, scope))}


def secret_env(name: str, selector: SecretKeySelector) -> Obj:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": selector.name, "key": selector.key}}}


def store_env(store: ObjectStore, prefix: str = "", ca_dir: str = CA_DIR) -> list[Obj]:
    """boto3's environment for ``store``, each name after ``prefix``: the access key by reference, the region,
    and the CA file (under ``ca_dir``) when one is named."""
    out = [
        secret_env(prefix + ACCESS_KEY_ENV, store.s3_credentials.access_key_id),
        secret_env(prefix + SECRET_KEY_ENV, store.s3_credentials.secret_access_key),
        {"name": prefix + REGION_ENV, "value": store.region},
    ]
    if store.endpoint_ca is not None:
        out.append({"name": prefix + CA_ENV, "value": f"{ca_dir}/{CA_FILE}"})
    return out


def store_volumes(store: ObjectStore, volume: str = CA_VOLUME) -> list[Obj]:
    """``store``'s CA Secret's one key as ``ca.crt``, when one is named."""
    ca = store.endpoint_ca
    if ca is None:
        return []
    items = [{"key": ca.key, "path": CA_FILE}]
    return [{"name": volume, "secret": {"secretName": ca.name, "items": items, "defaultMode": CA_MODE}}]


def store_mounts(store: ObjectStore, volume: str = CA_VOLUME, ca_dir: str = CA_DIR) -> list[Obj]:
    return [{"name": volume, "mountPath": ca_dir, "readOnly": True}] if store.endpoint_ca else []


def env(backup: Backup) -> list[Obj]:
    """The member's own store's environment, under boto3's own names."""
    return store_env(backup.object_store)


def volumes(backup: Backup) -> list[Obj]:
    return store_volumes(backup.object_store)


def mounts(backup: Backup) -> list[Obj]:
    return store_mounts(backup.object_store)


def refusal(backup: Backup, scope: str) -> str:
    """What a member says when its own archive folder is not empty; it names the field to change."""
    path = f"{commands.source(backup.object_store)}/{scope}"
    return (
        f"spec.backup.objectStore.destinationPath: {path} already holds WAL (or could not be read, above): "
        "a new cluster archives only to a path no cluster has used; give the ShardDB a prefix of its own, "
        "or delete that folder once its backups are no longer needed"
    )


def unused_archive(backup: Backup, scope: str) -> list[str]:
    """Shell lines that stop (exit 1) unless the shard's own archive folder holds no WAL, saying why where the
    status reads it."""
    said = shlex.quote(refusal(backup, scope))
    check = commands.line(commands.check_wal_archive(backup.object_store, scope))
    return [
        f"if ! {check}; then",
        f"  echo {said} >&2",
        f"  echo {said} > {TERMINATION_LOG} 2>/dev/null || true",
        "  exit 1",
        "fi",
    ]
