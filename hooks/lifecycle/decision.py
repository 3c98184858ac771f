"""What the lifecycle answers, built by every step of it: the phase, each child's size and template, and
the conditions without their clock (``render`` makes the objects, ``conditions.stamp`` adds the times).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from ..backup.runs import BaseBackups
from ..replication.health import ShardHealth
from ..replication.shape import SINGLE_COPY, Plan
from ..workloads import TemplateRecord


class Phase(StrEnum):
    PROVISIONING = "Provisioning"
    SEEDING = "Seeding"
    REGISTERING = "Registering"
    STARTING_CACHE = "StartingCache"
    AVAILABLE = "Available"
    DRAINING_CACHE = "DrainingCache"
    DRAINING_SHARDS = "DrainingShards"
    FINALIZED = "Finalized"
    HIBERNATING = "Hibernating"
    HIBERNATED = "Hibernated"
    NAME_TOO_LONG = "NameTooLong"
    NAME_INVALID = "NameInvalid"


# Progressing's reasons that the rollout reads back from the last answer, as well as writes.
COMPLETE = "Complete"  # Progressing's reason once everything asked for runs
ROLLING_UPDATE = "RollingUpdate"  # Progressing's reason while a pod template rolls out
STATEFULSET_UPDATED = "StatefulSetUpdated"  # written, not yet read by its controller


@dataclass(frozen=True)
class ConditionState:
    """A condition without its clock; ``conditions.stamp`` adds the times."""

    type: str
    status: bool
    reason: str
    message: str


@dataclass(frozen=True)
class ShardSetAnswer:
    """A shard with members: its StatefulSet's size, the member template it runs and what that was made from."""

    shard: int
    replicas: int
    template: dict[str, Any]
    made: TemplateRecord
    claim_templates: tuple[dict[str, Any], ...] = ()  # an existing StatefulSet's, kept as observed


@dataclass(frozen=True)
class Decision:
    phase: Phase
    shards: int  # StatefulSet replicas to ask for
    storage_size: str
    storage_class: str | None
    seeded_shards: int
    seed_jobs: tuple[int, ...]  # shard counts whose seed Job is a desired child
    cache_replicas: int | None  # None: the cache Deployment (and its Service) is not a desired child
    ready_shards: int
    registered_shards: int
    cache_ready_replicas: int
    cache_ready: bool
    conditions: tuple[ConditionState, ...]
    finalized: bool = False
    # Immutable StatefulSet fields: new ones start Parallel with fresh claim templates,
    # an existing one keeps exactly what it has (any change would make every update fail).
    pod_management_policy: str = "Parallel"
    claim_templates: tuple[dict[str, Any], ...] = ()
    # Components whose pods get a PodDisruptionBudget: they come and go with what they protect.
    budgets: frozenset[str] = frozenset()
    cache_service: bool = False  # the cache's ClusterIP Service, with the cache while it serves
    cache_held: bool = False  # the cache keeps its current pod template until the shards have rolled
    # The pod templates to render, each built once: the spec's, or the one held as last applied.
    db_template: dict[str, Any] = field(default_factory=dict)
    cache_template: dict[str, Any] = field(default_factory=dict)
    frozen: bool = False  # every observed child is answered as it is; nothing created or deleted
    updated_shards: int = 0
    update_revision: str = ""
    cache_updated_replicas: int = 0
    # When a pod's grace runs out and the answer changes with no event: ask to be called again then.
    recheck_at: datetime | None = None
    # When the answer changes though no call need be asked for (a missing child's grace): the ETag's deadline.
    holds_until: datetime | None = None
    # What each template was made from, recorded on its child; the components whose newer template waits.
    db_made: TemplateRecord = field(default_factory=TemplateRecord)
    cache_made: TemplateRecord = field(default_factory=TemplateRecord)
    newer_templates: tuple[str, ...] = ()
    # While a child without a template record may lag an edit: the generation it is known to match.
    unrecorded_generation: int | None = None
    # What the shards run as: one member is today's StatefulSet ``<name>-db``; more are Patroni's, one
    # StatefulSet per shard (``shard_sets``); None: refused before any shard existed, so none is rendered.
    replication: Plan | None = SINGLE_COPY
    shard_sets: tuple[ShardSetAnswer, ...] = ()
    shard_health: tuple[tuple[int, ShardHealth], ...] = ()  # (shard, its health) per shard with members, for the status
    # Deletion, members gone: the Job (and its Role) that removes Patroni's ConfigMaps (``replication/cleanup.py``).
    patroni_cleanup: bool = False
    # With members, while any member runs an older template: the Job that evicts them, standbys first
    # (``hooks/replication/rollout.py``).
    member_rollout: bool = False
    # With members and ``spec.backup``, while the shards run: the CronJob of base backups (``backup/cronjob.py``).
    base_backups: bool = False
    # The schedule the CronJob is written with: ``spec.backup.schedule``, or while the API server would refuse it,
    # the one the CronJob has (None: none yet, so none is made until the schedule is fixed).
    backup_schedule: str | None = None
    # What the base backups' CronJob records of its runs, for the status (None: no backup, or no CronJob yet).
    base_backup_runs: BaseBackups | None = None
    # When the next base backup is due (``backup/runs.due``), for the status; None: no CronJob or no schedule.
    base_backup_due: datetime | None = None

    @property
    def members(self) -> bool:
        """The shards are not today's single copies: Patroni's, or none at all (refused)."""
        return self.replication is None or self.replication.patroni
