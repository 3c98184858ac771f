"""The ShardDB spec as the hooks read it, with the documented defaults.

The CRD validates and defaults too; the hook re-checks because Metacontroller
may hand it objects written before a schema change, and a bad value must be a
clear 4xx rather than a broken child.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints, field_validator
from pydantic_core import PydanticCustomError

from . import names, quantity
from .backup.spec import Backup, Restore
from .corev1 import CoreV1
from .model import DnsName, NonEmpty
from .model import Spec as _Spec
from .model import integral as _integral

AbsolutePath = Annotated[str, StringConstraints(pattern=r"^/")]
Port = Annotated[int, Field(ge=1, le=65535)]


Command = Annotated[list[NonEmpty], Field(min_length=1)]

DEFAULT_STORAGE_SIZE = "1Gi"
MEBIBYTE = 1024 * 1024
# A Kubernetes quantity's syntax, as the CRD checks it (``quantity.canonical`` checks the rest).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
MAX_SHARDS = names.MAX_SHARDS
MAX_CACHE_REPLICAS = 1024
MAX_GRACE_SECONDS = 86400
DEFAULT_DRAIN_GRACE_SECONDS = 60
DEFAULT_FLUSH_GRACE_SECONDS = 30
DEFAULT_SEED_TIMEOUT_SECONDS = 3600
MAX_SEED_TIMEOUT_SECONDS = 7 * 86400
DEFAULT_POD_START_GRACE_SECONDS = 120
MAX_POD_START_GRACE_SECONDS = 3600
DEFAULT_DB_PORT = names.DB_PORT
DEFAULT_CACHE_PORT = 6379
DEFAULT_DATA_PATH = "/var/lib/postgresql/data"
# The labels our selectors match: a pod label of the user's may never change them.
SELECTOR_LABELS = (names.NAME_LABEL, names.INSTANCE_LABEL, names.COMPONENT_LABEL)

# Default commands, each one POSIX sh that works as written in the official image
# it names; every one is overridable in the spec. They read only what the hook
# puts in the pod: SHARDDB_HOSTS and SHARDDB_PORT (seed Job), PGDATA and
# SHARDDB_DRAIN_SECONDS (shard pods), SHARDDB_CACHE_PORT (cache pods), plus the
# user's db/cache env.
#
# Seed (postgres image, run with the Job's command, so no entrypoint and the image's
# user, root unless a security context says otherwise): wait until every shard
# answers pg_isready (no credentials needed); then, if PGPASSWORD or
# POSTGRES_PASSWORD is set, log in to each as PGUSER/POSTGRES_USER (default
# postgres) with psql and run SELECT 1. It only reads, so running it again is safe.
DEFAULT_SEED_COMMAND: tuple[str, ...] = (
    "sh",
    "-c",
    """set -u
: "${SHARDDB_HOSTS:?names no shard}"
for host in $SHARDDB_HOSTS; do
  tries=0
  until pg_isready -q -h "$host" -p "$SHARDDB_PORT" -t 3; do
    tries=$((tries + 1))
    if [ "$tries" -ge 150 ]; then
      echo "seed: $host:$SHARDDB_PORT does not accept connections; giving up" >&2
      exit 1
    fi
    sleep 2
  done
  echo "seed: $host:$SHARDDB_PORT accepts connections"
done
password="${PGPASSWORD:-${POSTGRES_PASSWORD:-}}"
if [ -n "$password" ]; then
  export PGPASSWORD="$password"
  export PGCONNECT_TIMEOUT="${PGCONNECT_TIMEOUT:-10}"
  user="${PGUSER:-${POSTGRES_USER:-postgres}}"
  database="${PGDATABASE:-${POSTGRES_DB:-$user}}"
  for host in $SHARDDB_HOSTS; do
    if ! psql -X -w -q -A -t -h "$host" -p "$SHARDDB_PORT" -U "$user" -d "$database" -c 'SELECT 1' >/dev/null; then
      echo "seed: cannot log in to $host as $user" >&2
      exit 1
    fi
    echo "seed: logged in to $host as $user"
  done
fi
set -- $SHARDDB_HOSTS
echo "seed: $# shards ready"
""",
)
# Drain (preStop in a shard pod, run as the container's user): the pod is already out of
# its Service's endpoints and DNS, so no new client finds it; wait up to half the grace
# period for the open client sessions to end, then end those left (SIGTERM to their
# backends: each rolls back and disconnects, as a fast shutdown would). The server itself
# is stopped by the kubelet's stop signal right after (the official image's is SIGINT, a
# fast shutdown; SIGTERM would be a smart one, with no session left to wait for), with
# the other half of the grace for its shutdown checkpoint. The hook never stops the server
# itself: the server's exit ends the container, and a hook still running then is killed
# (the kubelet reports FailedPreStopHook, exit 137), so it must be done before. Client
# sessions are the backends whose process title names a client: "postgres: USER DB
# HOST(PORT) ..." or "... [local] ...". Nothing here needs credentials.
DEFAULT_DRAIN_COMMAND: tuple[str, ...] = (
    "sh",
    "-c",
    """set -u
: "${SHARDDB_DRAIN_SECONDS:?is not set}"
clients() {
  for dir in /proc/[0-9]*; do
    title=$(tr '\\0' ' ' <"$dir/cmdline" 2>/dev/null) || continue
    case $title in "postgres: "*) ;; *) continue ;; esac
    if printf '%s\\n' "$title" | grep -Eq '^postgres: ([^ ]+: )?[^ ]+ [^ ]+ (\\[local\\]|[^ ]+\\([0-9]+\\))( |$)'; then
      echo "${dir#/proc/}"
    fi
  done
}
limit=$((SHARDDB_DRAIN_SECONDS / 2))
waited=0
open=$(clients)
while [ -n "$open" ] && [ "$waited" -lt "$limit" ]; do
  sleep 1
  waited=$((waited + 1))
  open=$(clients)
done
[ -z "$open" ] && exit 0
set -- $open
echo "drain: $# client sessions still open after ${waited}s; ending them" >&2
kill -TERM "$@" 2>/dev/null
exit 0
""",
)
# Flush (preStop in a cache pod): SAVE, a blocking snapshot to the image's /data,
# through valkey-cli when the image has it (valkey) and redis-cli otherwise
# (redis); success only when the server answers OK. The official images set no
# password; with one, give the CLI its password variable in cache.env
# (REDISCLI_AUTH for redis-cli).
DEFAULT_FLUSH_COMMAND: tuple[str, ...] = (
    "sh",
    "-c",
    """set -u
if command -v valkey-cli >/dev/null 2>&1; then cli=valkey-cli; else cli=redis-cli; fi
reply=$("$cli" -p "$SHARDDB_CACHE_PORT" SAVE)
[ "$reply" = OK ] && exit 0
echo "flush: $cli SAVE on port $SHARDDB_CACHE_PORT answered: $reply" >&2
exit 1
""",
)

# Security contexts under which the default images run in the Kubernetes
# "restricted" Pod Security profile (non-root, no privilege escalation, no
# capabilities, RuntimeDefault seccomp). uid/gid 999 is the service user of the
# official postgres (Debian), redis, valkey, mysql and mariadb images, and each of their
# entrypoints skips its chown/gosu step when not started as root. fsGroup makes a
# new volume group-writable, so postgres can create PGDATA (<dataPath>/pgdata)
# inside it; OnRootMismatch skips the recursive ownership walk on later mounts.
# The renderer applies them when the user gives no podSecurityContext /
# securityContext, to the shard pods and seed Job (db) and the cache pods; copy
# them, never mutate them.
DEFAULT_DB_POD_SECURITY_CONTEXT: dict[str, object] = {
    "runAsNonRoot": True,
    "runAsUser": 999,
    "runAsGroup": 999,
    "fsGroup": 999,
    "fsGroupChangePolicy": "OnRootMismatch",
    "seccompProfile": {"type": "RuntimeDefault"},
}
DEFAULT_CACHE_POD_SECURITY_CONTEXT: dict[str, object] = {
    "runAsNonRoot": True,
    "runAsUser": 999,
    "runAsGroup": 999,
    "seccompProfile": {"type": "RuntimeDefault"},
}
DEFAULT_CONTAINER_SECURITY_CONTEXT: dict[str, object] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


class Storage(_Spec):
    """Per-shard persistent volume; fixed once the StatefulSet exists (immutable there)."""

    size: Annotated[str, StringConstraints(min_length=1, pattern=QUANTITY_PATTERN)] = DEFAULT_STORAGE_SIZE
    storage_class_name: NonEmpty | None = Field(default=None, alias="storageClassName")

    @field_validator("size")
    @classmethod
    def _quantity(cls, value: str) -> str:
        """The claim template needs it in the server's spelling; text that is no quantity is a 4xx."""
        quantity.canonical(value)
        return value


class PodMetadata(_Spec):
    """Labels and annotations added to every pod of one kind (shards or cache)."""

    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("labels")
    @classmethod
    def _keeps_our_selector(cls, labels: dict[str, str]) -> dict[str, str]:
        """The selectors of the StatefulSet and Deployment match these; the CRD refuses them the same way."""
        if any(label in labels for label in SELECTOR_LABELS):
            raise PydanticCustomError(
                "reserved_label",
                "may not set {labels}: ShardDB selects its pods by them",
                {"labels": ", ".join(SELECTOR_LABELS[:-1]) + " or " + SELECTOR_LABELS[-1]},
            )
        return labels


class PodFields(_Spec):
    """How a pod runs beyond its image, shared by shards and cache; core/v1 values stay plain JSON."""

    port: Port
    resources: Annotated[dict[str, Any] | None, CoreV1("resources")] = None
    env: Annotated[list[dict[str, Any]], CoreV1("env")] = Field(default_factory=list)
    env_from: Annotated[list[dict[str, Any]], CoreV1("envFrom")] = Field(default_factory=list, alias="envFrom")
    pod_metadata: PodMetadata = Field(default_factory=PodMetadata, alias="podMetadata")
    node_selector: Annotated[dict[str, str], CoreV1("nodeSelector")] = Field(default_factory=dict, alias="nodeSelector")
    tolerations: Annotated[list[dict[str, Any]], CoreV1("tolerations")] = Field(default_factory=list)
    affinity: Annotated[dict[str, Any] | None, CoreV1("affinity")] = None
    topology_spread_constraints: Annotated[list[dict[str, Any]], CoreV1("topologySpreadConstraints")] = Field(
        default_factory=list, alias="topologySpreadConstraints"
    )
    priority_class_name: DnsName | None = Field(default=None, alias="priorityClassName")
    pod_security_context: Annotated[dict[str, Any] | None, CoreV1("podSecurityContext")] = Field(
        default=None, alias="podSecurityContext"
    )
    security_context: Annotated[dict[str, Any] | None, CoreV1("securityContext")] = Field(
        default=None, alias="securityContext"
    )

    _integral = field_validator("port", mode="before")(_integral)

    @field_validator("resources")
    @classmethod
    def _quantities(cls, resources: dict[str, Any] | None) -> dict[str, Any] | None:
        """Pods get requests and limits in the server's spelling, so each must be a quantity it parses.

        The schema's pattern lets through a few the server refuses (``1e.5``).
        """
        for part in ("requests", "limits"):
            for name, value in ((resources or {}).get(part) or {}).items():
                try:
                    quantity.canonical(value)
                except quantity.QuantityError as error:
                    raise PydanticCustomError(
                        "quantity", "{part}.{name}: {problem}", {"part": part, "name": name, "problem": str(error)}
                    ) from None
        return resources

    @property
    def pod_labels(self) -> dict[str, str]:
        """``podMetadata.labels``, flat beside the other pod fields (never a selector label)."""
        return self.pod_metadata.labels

    @property
    def pod_annotations(self) -> dict[str, str]:
        """``podMetadata.annotations``, flat beside the other pod fields."""
        return self.pod_metadata.annotations


class DbPod(PodFields):
    """The shard pods; their volume is mounted at ``data_path``."""

    port: Port = DEFAULT_DB_PORT
    data_path: AbsolutePath = Field(default=DEFAULT_DATA_PATH, alias="dataPath")


class Cache(PodFields):
    image: NonEmpty
    replicas: Annotated[int, Field(ge=0, le=MAX_CACHE_REPLICAS)] = 1
    flush_command: Command | None = Field(default=None, alias="flushCommand")
    flush_grace_period_seconds: Annotated[int, Field(ge=1, le=MAX_GRACE_SECONDS)] = Field(
        default=DEFAULT_FLUSH_GRACE_SECONDS, alias="flushGracePeriodSeconds"
    )
    port: Port = DEFAULT_CACHE_PORT

    _integral = field_validator("replicas", "flush_grace_period_seconds", "port", mode="before")(_integral)


MAX_MEMBERS = names.MAX_MEMBERS


class Replication(_Spec):
    """Copies of each shard: 1 is today's single PostgreSQL; 2 or 3 run it under Patroni (``hooks/replication/``).

    Three at most: one synchronous standby gives the guarantee (a commit on two members), a third
    keeps it through the loss of one; more buys nothing Patroni's failover uses.
    """

    members: Annotated[int, Field(ge=1, le=MAX_MEMBERS)] = 1
    # An acknowledged commit is on two members; false trades that for never waiting on a standby.
    synchronous: bool = True
    # Writes wait while no synchronous standby runs, rather than go on with one copy (Patroni's strict mode).
    strict: bool = False
    # WAL a primary keeps for a standby that is away (its replication slot): None is a quarter of the
    # shard's volume, so a standby stuck Pending never fills the primary's disk.
    max_slot_wal_keep_size: Annotated[str, StringConstraints(min_length=1, pattern=QUANTITY_PATTERN)] | None = Field(
        default=None, alias="maxSlotWalKeepSize"
    )

    # Who may reach the members' PostgreSQL port (NetworkPolicyPeers) besides the shard's own members and the
    # seed Job; None leaves the port open to every source, as before this field.
    clients: Annotated[list[dict[str, Any]] | None, CoreV1("clients")] = None

    _integral = field_validator("members", mode="before")(_integral)

    @field_validator("max_slot_wal_keep_size")
    @classmethod
    def _wal_quantity(cls, value: str | None) -> str | None:
        """A quantity the hooks can read; below 1Mi the CRD refuses it, and the hooks read it as 1 MB.

        The rules the CRD checks in CEL (strict only when synchronous, at least 1Mi) are not the
        hooks' to refuse again: a request the schema allows is always answered.
        """
        if value is not None:
            quantity.canonical(value)
        return value


class ShardDBSpec(_Spec):
    shards: Annotated[int, Field(ge=1, le=MAX_SHARDS)]
    db_image: NonEmpty = Field(alias="dbImage")
    image_pull_secrets: Annotated[list[dict[str, Any]], CoreV1("imagePullSecrets")] = Field(
        default_factory=list, alias="imagePullSecrets"
    )
    service_account_name: DnsName | None = Field(default=None, alias="serviceAccountName")
    db: DbPod = DbPod()
    cache: Cache
    storage: Storage = Storage()
    replication: Replication = Replication()
    # None: no backup (the CRD allows it only with members, whose image carries the engine).
    backup: Backup | None = None
    # None: every shard starts empty and is seeded; else each starts from another ShardDB's backups, never seeded.
    restore: Restore | None = None
    seed_command: Command | None = Field(default=None, alias="seedCommand")
    # A seed that waits forever on a shard that never answers must end as a failure.
    seed_timeout_seconds: Annotated[int, Field(ge=1, le=MAX_SEED_TIMEOUT_SECONDS)] = Field(
        default=DEFAULT_SEED_TIMEOUT_SECONDS, alias="seedTimeoutSeconds"
    )
    drain_command: Command | None = Field(default=None, alias="drainCommand")
    drain_grace_period_seconds: Annotated[int, Field(ge=1, le=MAX_GRACE_SECONDS)] = Field(
        default=DEFAULT_DRAIN_GRACE_SECONDS, alias="drainGracePeriodSeconds"
    )
    # How long a pod's passing trouble (no node yet, a Secret on its way) is progress, not damage.
    pod_start_grace_seconds: Annotated[int, Field(ge=0, le=MAX_POD_START_GRACE_SECONDS)] = Field(
        default=DEFAULT_POD_START_GRACE_SECONDS, alias="podStartGraceSeconds"
    )
    # Freeze every child as it is (deletion still tears down in order).
    paused: bool = False
    # Run the teardown order but keep the ShardDB, its volumes and its seed memory.
    hibernated: bool = False

    _integral = field_validator(
        "shards", "drain_grace_period_seconds", "seed_timeout_seconds", "pod_start_grace_seconds", mode="before"
    )(_integral)

    @property
    def seed(self) -> list[str]:
        return list(self.seed_command or DEFAULT_SEED_COMMAND)

    @property
    def drain(self) -> list[str]:
        return list(self.drain_command or DEFAULT_DRAIN_COMMAND)

    @property
    def flush(self) -> list[str]:
        return list(self.cache.flush_command or DEFAULT_FLUSH_COMMAND)
