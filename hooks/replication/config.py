"""Patroni's configuration for the members of one shard: what every member is told, and the timing it runs by.

It rides in the member pods' template (an annotation projected as a file, ``template``), so a change
to it rolls like any other template change and no ConfigMap is ever a child. The pod-specific and
secret parts come from the pod's env; Patroni's environment overrides its file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .. import names, quantity
from ..backup import fresh as backup_fresh
from ..backup import member as backup_member
from ..backup import restore as backup_restore
from ..backup.spec import Backup, Restore
from ..spec import MEBIBYTE, ShardDBSpec
from . import tls
from .callback import callbacks

Obj = dict[str, Any]

PATRONI_VERSION = "4.1.5"
PATRONI_PORT = 8008
PATRONI_PORT_NAME = "patroni"

# Patroni's configuration, JSON (which is YAML) in a pod template annotation, projected by the
# downward API as the file the image's entrypoint hands to Patroni (PATRONI_CONFIG_FILE).
CONFIG_ANNOTATION = f"{names.GROUP}/patroni-config"
CONFIG_VOLUME = "patroni-config"
CONFIG_DIR = "/etc/patroni"
CONFIG_FILE = "patroni.yml"
# The API server's defaults for a downward API volume and an object field selector, written out so
# the stored template equals the rendered one.
DOWNWARD_API_DEFAULT_MODE = 0o644

# Timing (seconds). Patroni raises a ttl under 20 to 20 and keeps loop_wait + 2 * retry_timeout
# <= ttl, so a primary that loses the API server and cannot reach every member either (failsafe
# mode, below) demotes itself before its lock can expire. The floor ttl and a 5 s loop bound a
# lost node's failover at ttl + loop_wait (25 s) rather than the 40 s of Patroni's 30/10/10, for
# one leader-lock patch per shard every 5 s.
TTL = 20
LOOP_WAIT = 5
RETRY_TIMEOUT = 7
# A standby more than this far behind (bytes) is not promoted on a failover.
MAXIMUM_LAG_ON_FAILOVER = 1024 * 1024
SUPERUSER = names.SUPERUSER
REPLICATION_USER = "replicator"
# Patroni's initdb options; checksums let pg_rewind bring an old primary back as a standby.
INITDB_OPTIONS: tuple[Obj | str, ...] = ({"encoding": "UTF8"}, "data-checksums")


@dataclass(frozen=True)
class PatroniConfig:
    """What Patroni is told in every member of one shard; the pod-specific and secret parts come from its env.

    The pod's name, namespace and IP come from the downward API (PATRONI_NAME,
    PATRONI_KUBERNETES_NAMESPACE, PATRONI_KUBERNETES_POD_IP), and the passwords from the user's
    Secret through ``spec.db.env`` (``shape.CREDENTIALS``: the superuser's, the replication user's and
    the REST API's):
    Patroni's environment overrides its file, so no secret is ever in a template.
    """

    parent: str
    shard: int
    port: int
    data_path: str
    synchronous: bool
    # WAL kept for replication slots, in whole megabytes (``slot_wal_keep_mb``).
    max_slot_wal_keep_mb: int = 256
    strict: bool = False
    # ``spec.backup``: the primary archives each segment, and every member may restore from the archive.
    backup: Backup | None = None
    # ``spec.restore``: each shard's cluster is first made from the source's backups rather than by initdb.
    restore: Restore | None = None

    @property
    def scope(self) -> str:
        return names.shard_name(self.parent, self.shard)

    def as_dict(self) -> Obj:
        return {
            "scope": self.scope,
            "kubernetes": self._kubernetes(),
            # Unsafe calls (switchover, restart, a config change) only from a member's address, and with
            # the REST API's credentials (PATRONI_RESTAPI_USERNAME/PASSWORD, from the user's Secret);
            # the NetworkPolicy keeps everyone else from reaching the port at all. HTTPS only (``tls``).
            "restapi": {"listen": f"0.0.0.0:{PATRONI_PORT}", "allowlist_include_members": True, **tls.restapi()},
            # patronictl in a member (the runbooks') calls the members over HTTPS: no CA is shared, so it
            # verifies no certificate, as Patroni's own calls between members do not.
            "ctl": {"insecure": True},
            "bootstrap": self._bootstrap(),
            "postgresql": self._postgresql(),
        }

    def _kubernetes(self) -> Obj:
        """Patroni's Kubernetes DCS: where it keeps its state, and the labels the Services select."""
        return {
            # ConfigMaps: Endpoints are deprecated since Kubernetes 1.33; Patroni 4.1 has no Leases.
            # No ``ports``: Patroni writes them only into Endpoints.
            "use_endpoints": False,
            "labels": names.selector_labels(self.parent, names.DB),
            "scope_label": names.SCOPE_LABEL,
            "role_label": names.ROLE_LABEL,
            "leader_label_value": names.LEADER_LABEL_VALUE,
            "follower_label_value": names.FOLLOWER_LABEL_VALUE,
        }

    def _bootstrap(self) -> Obj:
        """Read once, when a shard's cluster is first bootstrapped: hence the refusal to change it later."""
        return {
            "dcs": {
                "ttl": TTL,
                "loop_wait": LOOP_WAIT,
                "retry_timeout": RETRY_TIMEOUT,
                "maximum_lag_on_failover": MAXIMUM_LAG_ON_FAILOVER,
                "synchronous_mode": self.synchronous,
                # Not strict unless asked: with its only standby gone, the primary drops it from
                # synchronous_standby_names and writes go on, rather than hang until a standby is
                # back (cloudnative-pg#5257). Only the synchronous standby is ever promoted.
                "synchronous_mode_strict": self.strict,
                # The API server unreachable but every member answering Patroni's REST API: the
                # primary keeps serving instead of demoting after retry_timeout. A primary that
                # cannot reach its standby either still demotes, so it stays fenced.
                "failsafe_mode": True,
                "postgresql": {"use_pg_rewind": True, "use_slots": True},
            },
            "initdb": list(INITDB_OPTIONS),
            **self._method(),
        }

    def _method(self) -> Obj:
        """A custom bootstrap in place of Patroni's initdb: ``spec.restore``'s (a restored cluster keeps the source's
        checksums), else, when the shard archives, initdb after its archive folder is checked."""
        data_dir = f"{self.data_path.rstrip('/')}/pgdata"
        if self.restore is not None:
            return backup_restore.bootstrap(self.restore, self.backup, self.scope, self.shard, data_dir)
        if self.backup is not None:
            flags = [initdb_flag(option) for option in INITDB_OPTIONS]
            return backup_fresh.bootstrap(self.backup, self.scope, data_dir, SUPERUSER, flags)
        return {}

    def _postgresql(self) -> Obj:
        """PostgreSQL as Patroni runs it in this member: addresses, files, callbacks, users and who may log in."""
        data = self.data_path.rstrip("/")
        archive = backup_member.parameters(self.backup, self.scope) if self.backup else {}
        recovery = {"recovery_conf": backup_member.recovery(self.backup, self.scope)} if self.backup else {}
        return {
            "listen": f"0.0.0.0:{self.port}",
            # A slot keeps WAL for a standby that is away; past this bound the primary lets it go and
            # the standby catches up by cloning anew (or, with backups, from the archive), rather than
            # the primary's volume filling.
            "parameters": {
                "max_slot_wal_keep_size": f"{self.max_slot_wal_keep_mb}MB",
                **tls.server_parameters(),
                **archive,
            },
            **recovery,
            # A new primary takes the primary label off its shard's other members (``callback``).
            "callbacks": callbacks(),
            "data_dir": f"{data}/pgdata",
            # On the volume: the root filesystem may be read-only.
            "pgpass": f"{data}/pgpass",
            # The superuser's settings serve Patroni's own session and pg_rewind's from another member.
            "authentication": {
                "superuser": {"username": SUPERUSER, **tls.client()},
                "replication": {"username": REPLICATION_USER, **tls.client()},
            },
            # Trust on the pod's own socket only (as the official image does, and as the image
            # recipe's Patroni tests ran); every address needs TLS and a password: a session without
            # TLS finds no line, and is refused.
            "pg_hba": [
                "local all all trust",
                f"hostssl replication {REPLICATION_USER} all scram-sha-256",
                "hostssl all all all scram-sha-256",
            ],
        }

    def as_text(self) -> str:
        """JSON, which Patroni reads as YAML; keys sorted, so the template is the same bytes every time."""
        return json.dumps(self.as_dict(), indent=2, sort_keys=True)


def initdb_flag(option: Obj | str) -> str:
    """One of Patroni's initdb options as initdb's own flag: ``{"encoding": "UTF8"}`` is ``--encoding=UTF8``."""
    if isinstance(option, str):
        return f"--{option}"
    ((key, value),) = option.items()
    return f"--{key}={value}"


def slot_wal_keep_mb(spec: ShardDBSpec) -> int:
    """``spec.replication.maxSlotWalKeepSize`` in whole megabytes (rounded down), else a quarter of the shard's volume.

    The volume holds the data and ``pg_wal`` together: a quarter leaves the data room while a
    standby is away for as long as that much WAL takes to write.
    """
    asked = spec.replication.max_slot_wal_keep_size
    size = quantity.parse(asked) if asked is not None else quantity.parse(spec.storage.size) / 4
    return max(1, int(size // MEBIBYTE))
