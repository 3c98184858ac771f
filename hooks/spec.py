"""The ShardDB spec as the hooks read it, with the documented defaults.

The CRD validates and defaults too; the hook re-checks because Metacontroller
may hand it objects written before a schema change, and a bad value must be a
clear 4xx rather than a broken child.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from . import quantity

NonEmpty = Annotated[str, StringConstraints(min_length=1, strip_whitespace=False)]


def _integral(value: object) -> object:
    """JSON Schema counts 3.0 as an integer, so do we; 3.5, "3" and true stay errors."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Command = Annotated[list[NonEmpty], Field(min_length=1)]

DEFAULT_STORAGE_SIZE = "1Gi"
MAX_SHARDS = 1024
MAX_CACHE_REPLICAS = 1024
MAX_GRACE_SECONDS = 86400
DEFAULT_DRAIN_GRACE_SECONDS = 60
DEFAULT_FLUSH_GRACE_SECONDS = 30

# Defaults speak PostgreSQL (port 5432) for shards and Redis for the cache; every
# one is overridable in the spec.
DEFAULT_SEED_COMMAND: tuple[str, ...] = (
    "sh",
    "-c",
    "for i in $(seq 0 $((SHARDDB_SHARDS - 1))); do "
    'until pg_isready -h "$SHARDDB_NAME-db-$i.$SHARDDB_SERVICE" -p 5432; do sleep 2; done; '
    "done",
)
DEFAULT_DRAIN_COMMAND: tuple[str, ...] = (
    "sh",
    "-c",
    'pg_ctl stop -D "$PGDATA" -m smart -t "$SHARDDB_DRAIN_SECONDS" || true',
)
DEFAULT_FLUSH_COMMAND: tuple[str, ...] = ("sh", "-c", "redis-cli SAVE || true")


class _Spec(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, populate_by_name=True)


class Storage(_Spec):
    """Per-shard persistent volume; fixed once the StatefulSet exists (immutable there)."""

    size: NonEmpty = DEFAULT_STORAGE_SIZE
    storage_class_name: NonEmpty | None = Field(default=None, alias="storageClassName")

    @field_validator("size")
    @classmethod
    def _quantity(cls, value: str) -> str:
        """The claim template needs it in the server's spelling; text that is no quantity is a 4xx."""
        quantity.canonical(value)
        return value


class Cache(_Spec):
    image: NonEmpty
    replicas: Annotated[int, Field(ge=0, le=MAX_CACHE_REPLICAS)] = 1
    flush_command: Command | None = Field(default=None, alias="flushCommand")
    flush_grace_period_seconds: Annotated[int, Field(ge=1, le=MAX_GRACE_SECONDS)] = Field(
        default=DEFAULT_FLUSH_GRACE_SECONDS, alias="flushGracePeriodSeconds"
    )

    _integral = field_validator("replicas", "flush_grace_period_seconds", mode="before")(_integral)


class ShardDBSpec(_Spec):
    shards: Annotated[int, Field(ge=1, le=MAX_SHARDS)]
    db_image: NonEmpty = Field(alias="dbImage")
    cache: Cache
    storage: Storage = Storage()
    seed_command: Command | None = Field(default=None, alias="seedCommand")
    drain_command: Command | None = Field(default=None, alias="drainCommand")
    drain_grace_period_seconds: Annotated[int, Field(ge=1, le=MAX_GRACE_SECONDS)] = Field(
        default=DEFAULT_DRAIN_GRACE_SECONDS, alias="drainGracePeriodSeconds"
    )
    # Freeze every child as it is (deletion still tears down in order).
    paused: bool = False
    # Run the teardown order but keep the ShardDB, its volumes and its seed memory.
    hibernated: bool = False

    _integral = field_validator("shards", "drain_grace_period_seconds", mode="before")(_integral)

    @property
    def seed(self) -> list[str]:
        return list(self.seed_command or DEFAULT_SEED_COMMAND)

    @property
    def drain(self) -> list[str]:
        return list(self.drain_command or DEFAULT_DRAIN_COMMAND)

    @property
    def flush(self) -> list[str]:
        return list(self.cache.flush_command or DEFAULT_FLUSH_COMMAND)
