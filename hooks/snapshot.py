"""The few facts the lifecycle decides on, as plain frozen dataclasses (``observe`` fills them), so the
decision is a pure function tests can feed directly, without HTTP or Kubernetes-shaped JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import last_applied, names, template_choice
from .hook_request import Condition
from .replication import Observed, ShardHealth
from .spec import ShardDBSpec
from .trouble.lost import LostPod
from .trouble.missing import MissingPod
from .trouble.stuck import StuckPod


@dataclass(frozen=True)
class TemplateRecord:
    """What a child's annotations say its pod template was made from (``hooks/template_choice.py``); None: unsaid."""

    inputs: str | None = None
    epoch: int | None = None
    applied: str | None = None

    @classmethod
    def read(cls, annotations: Mapping[str, str]) -> TemplateRecord:
        epoch = annotations.get(names.TEMPLATE_EPOCH_ANNOTATION, "")
        return cls(
            inputs=annotations.get(names.TEMPLATE_INPUTS_ANNOTATION),
            epoch=int(epoch) if epoch.isdigit() else None,
            applied=annotations.get(names.TEMPLATES_APPLIED_ANNOTATION),
        )

    def recorded(self, template: dict[str, Any], last_applied: str | None) -> template_choice.Recorded:
        asked = _asked_template(last_applied)
        held = asked if asked is not None else template
        return template_choice.Recorded(template, held, asked is not None, self.inputs, self.epoch, self.applied)


@dataclass(frozen=True)
class StatefulSetView:
    replicas: int
    status_replicas: int
    ready: int
    seeded_annotation: int
    storage_size: str | None
    storage_class: str | None
    # Fields the API server refuses to change, kept verbatim so the answer reproduces them.
    pod_management_policy: str | None = None
    claim_templates: tuple[dict[str, Any], ...] = ()
    rollout: Rollout = field(default_factory=lambda: Rollout())
    template: dict[str, Any] = field(default_factory=dict)  # the pod template as stored
    last_applied: str | None = None  # Metacontroller's record of what the hooks last asked for
    made: TemplateRecord = field(default_factory=lambda: TemplateRecord())

    def held_template(self) -> dict[str, Any]:
        """The pod template to keep while the ShardDB stops: a teardown never rolls the shards."""
        return _held_template(self.last_applied, self.template)

    def recorded(self) -> template_choice.Recorded:
        return self.made.recorded(self.template, self.last_applied)


def _held_template(recorded: str | None, stored: dict[str, Any]) -> dict[str, Any]:
    """The pod template last asked for, else the stored one; read only when a hold needs it.

    Answering with exactly what was last applied makes a hold cost Metacontroller no write.
    """
    asked = _asked_template(recorded)
    return asked if asked is not None else stored


def _asked_template(recorded: str | None) -> dict[str, Any] | None:
    """The pod template in Metacontroller's record of the last answer, if it has one."""
    last = last_applied.read(recorded)
    spec = last.get("spec") if last is not None else None
    template = spec.get("template") if isinstance(spec, dict) else None
    return template if isinstance(template, dict) else None


@dataclass(frozen=True)
class Rollout:
    """How far a workload's controller has carried out its latest spec."""

    generation: int = 0
    observed_generation: int = 0
    updated: int = 0
    current_revision: str = ""
    update_revision: str = ""
    # OnDelete (a shard with members): pods change only when deleted, and the StatefulSet controller
    # never makes the update revision current (kubernetes#73492), so only the counts tell.
    on_delete: bool = False
    status_replicas: int = 0
    # OnDelete, read from the member pods themselves: live pods labelled with another revision than
    # the update revision. None when the pods are not observed. The counts alone mistake a member
    # stopping (a failover, a drain) for an outdated one: status.replicas counts a terminating pod,
    # status.updatedReplicas does not.
    outdated_pods: int | None = None

    def new_revision(self) -> bool:
        """A StatefulSet is replacing pods: it becomes current only once all are updated and ready.

        OnDelete: some pod that exists still runs an older revision (a pod created by a scale-up
        is made at the update revision, so it never counts).
        """
        if self.on_delete:
            caught_up = self.observed_generation >= self.generation
            if self.outdated_pods is not None:
                return caught_up and self.outdated_pods > 0
            return caught_up and self.updated < self.status_replicas
        return bool(self.current_revision and self.update_revision) and self.current_revision != self.update_revision

    def settled(self, replicas: int) -> bool:
        """The controller has seen the latest spec and every replica runs the latest template."""
        return self.observed_generation >= self.generation and self.updated >= replicas and not self.new_revision()


@dataclass(frozen=True)
class CacheView:
    replicas: int
    status_replicas: int
    ready: int
    stuck: bool
    rollout: Rollout = field(default_factory=lambda: Rollout())
    template: dict[str, Any] = field(default_factory=dict)  # the pod template as stored
    last_applied: str | None = None  # Metacontroller's record of what the hooks last asked for
    made: TemplateRecord = field(default_factory=lambda: TemplateRecord())
    # The Deployment's ReplicaFailure (FailedCreate): its ReplicaSet's refused create, in its own words.
    refused: str | None = None
    refused_since: datetime | None = None  # the condition's lastTransitionTime: where its grace starts

    def held_template(self) -> dict[str, Any]:
        """The pod template to keep while the cache waits for the shards, or the ShardDB stops."""
        return _held_template(self.last_applied, self.template)

    def recorded(self) -> template_choice.Recorded:
        return self.made.recorded(self.template, self.last_applied)


@dataclass(frozen=True)
class SeedJobView:
    shards: int
    succeeded: bool
    failed: bool
    reason: str = ""  # the Job controller's reason for failing (DeadlineExceeded, BackoffLimitExceeded)
    message: str = ""
    # Started by its controller, no pod counted at all and none observed: its pod was refused.
    podless_since: datetime | None = None


@dataclass(frozen=True)
class ShardSetView:
    """A shard with members: its StatefulSet ``<name>-db-<shard>``, what Patroni's marks say of it, and discovery."""

    shard: int
    statefulset: StatefulSetView
    health: ShardHealth
    registered: bool = False  # its primary is a ready endpoint of its ``-primary`` Service
    # The last moment anything moved on the shard (its StatefulSet's spec, a member created or turning
    # (un)ready): a shard without a primary or sync standby is given the start grace from it.
    since: datetime | None = None
    missing: tuple[MissingPod, ...] = ()  # members its StatefulSet asks for and could not create


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
    # The Job that removes Patroni's ConfigMaps on deletion (``hooks/patroni_cleanup.py``), if observed.
    cleanup_job: SeedJobView | None = None
    # Whether any of Patroni's watched ConfigMaps of this ShardDB exists; None: they are not watched here.
    patroni_state: bool | None = None

    def unrecorded(self) -> bool:
        """A running StatefulSet or cache Deployment carries no record of what its template was made from."""
        workloads = (self.statefulset, self.cache, *(each.statefulset for each in self.shard_sets))
        return any(child is not None and child.made.inputs is None for child in workloads)

    def shard_set(self, shard: int) -> ShardSetView | None:
        return next((each for each in self.shard_sets if each.shard == shard), None)

    def seed_job(self, shards: int) -> SeedJobView | None:
        return next((job for job in self.seed_jobs if job.shards == shards), None)
