"""What the hooks read of each workload child: a StatefulSet, the cache Deployment, a seed Job, and what a
child records of its pod template; plain frozen dataclasses that ``observe`` fills and the lifecycle reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import last_applied, names, template_choice


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
