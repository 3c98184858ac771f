"""The few facts the lifecycle decides on, as plain frozen dataclasses (``observe`` fills them), so the
decision is a pure function tests can feed directly, without HTTP or Kubernetes-shaped JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from .backup.runs import BaseBackups
from .hook_request import Condition
from .replication.sets import ShardSetView
from .replication.shape import Observed
from .spec import ShardDBSpec
from .trouble.lost import LostPod
from .trouble.missing import MissingPod
from .trouble.stuck import StuckPod
from .workloads import CacheView, SeedJobView, StatefulSetView


@dataclass(frozen=True)
class Snapshot:
    name: str
    namespace: str
    generation: int
    spec: ShardDBSpec
    finalizing: bool = False
    prior_seeded: int = 0
    prior_conditions: tuple[Condition, ...] = ()
    statefulset: StatefulSetView | None = None
    service: bool = False
    cache_service: bool = False
    budgets: frozenset[str] = field(default_factory=frozenset)  # components with a disruption budget
    cache: CacheView | None = None
    seed_jobs: tuple[SeedJobView, ...] = ()
    registered: frozenset[int] = field(default_factory=frozenset)
    cache_pods: int = 0
    shard_pods: int = 0
    stuck_pods: tuple[StuckPod, ...] = ()
    missing_pods: tuple[MissingPod, ...] = ()  # shard pods asked for that the StatefulSet could not create
    lost_pods: tuple[LostPod, ...] = ()  # pods on a node that stopped reporting, Terminating ones too
    created: datetime | None = None  # the ShardDB's creationTimestamp: where a missing child's grace starts
    # Every observed child by (kind, name), with its replicas where it has some: what an answer changes.
    observed: Mapping[tuple[str, str], int | None] = field(default_factory=dict)
    # When the request is answered, read once at the edge; None (no clock) gives no pod a grace.
    now: datetime | None = None
    # The user's request to apply the running hooks' templates (the ShardDB's apply-templates annotation).
    apply_templates: str | None = None
    # The generation the last answer saw, as its status says (None: it says nothing); ``template_choice.edited``.
    answered_generation: int | None = None
    # Shards with members, one StatefulSet each, by shard; and the replication shape the shards show.
    shard_sets: tuple[ShardSetView, ...] = ()
    replication: Observed = field(default_factory=Observed)
    # The Job that removes Patroni's ConfigMaps on deletion (``hooks/replication/cleanup.py``), if observed.
    cleanup_job: SeedJobView | None = None
    # Whether any of Patroni's watched ConfigMaps of this ShardDB exists; None: they are not watched here.
    patroni_state: bool | None = None
    # The base backups' CronJob's record of its runs, if it is observed (``backup/runs.py``).
    base_backups: BaseBackups | None = None

    def unrecorded(self) -> bool:
        """A running StatefulSet or cache Deployment carries no record of what its template was made from."""
        workloads = (self.statefulset, self.cache, *(each.statefulset for each in self.shard_sets))
        return any(child is not None and child.made.inputs is None for child in workloads)

    @property
    def edited(self) -> bool:
        """The spec changed since the last answer: the generation it saw is older than the parent's.

        Without a status saying so, only the spec a ShardDB was created with (generation 1) is
        known to have made its children; any later one may not have reached them.
        """
        return self.generation > (self.answered_generation if self.answered_generation is not None else 1)

    @property
    def unrecorded_generation(self) -> int | None:
        """The generation a child without a record is known to match, while an edit may not have reached it.

        Metacontroller writes the status even where a child's write failed; kept there, the edit still
        rolls at the next answer instead of the spec reading as unchanged. None once nothing lags.
        """
        if not self.unrecorded() or not self.edited:
            return None
        return self.answered_generation if self.answered_generation is not None else 1

    @property
    def existing_shards(self) -> int:
        """Shards that exist: today's StatefulSet's replicas, or one past the highest shard with members."""
        if self.statefulset is not None:
            return self.statefulset.replicas
        return max((each.shard + 1 for each in self.shard_sets), default=0)

    def shard_set(self, shard: int) -> ShardSetView | None:
        return next((each for each in self.shard_sets if each.shard == shard), None)

    def seed_job(self, shards: int) -> SeedJobView | None:
        return next((job for job in self.seed_jobs if job.shards == shards), None)
