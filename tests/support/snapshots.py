"""Typed snapshots to feed the decision: a spec, its workloads' views, and a ShardDB at each gate.

The builders the decision's tests share (``tests/decision/``, the runbooks' tests): each view
runs the template its spec renders unless a test says otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hooks import pod_templates, template_choice
from hooks.lifecycle import Decision
from hooks.snapshot import Snapshot
from hooks.spec import ShardDBSpec
from hooks.workloads import CacheView, Rollout, SeedJobView, StatefulSetView, TemplateRecord


def spec(**changes: Any) -> ShardDBSpec:
    body: dict[str, Any] = {"shards": 3, "dbImage": "postgres:16", "cache": {"image": "redis:7", "replicas": 2}}
    body.update(changes)
    return ShardDBSpec.model_validate(body)


def sts(replicas: int = 3, ready: int = 3, seeded: int = 0, status_replicas: int | None = None) -> StatefulSetView:
    return StatefulSetView(
        replicas=replicas,
        status_replicas=replicas if status_replicas is None else status_replicas,
        ready=ready,
        seeded_annotation=seeded,
        storage_size="1Gi",
        storage_class=None,
        rollout=Rollout(
            generation=1, observed_generation=1, updated=replicas, current_revision="r1", update_revision="r1"
        ),
    )


def cache(replicas: int = 2, ready: int = 2, status_replicas: int | None = None, stuck: bool = False) -> CacheView:
    return CacheView(
        replicas=replicas,
        status_replicas=replicas if status_replicas is None else status_replicas,
        ready=ready,
        stuck=stuck,
        rollout=Rollout(generation=1, observed_generation=1, updated=replicas),
    )


def made(shape: ShardDBSpec, component: str) -> TemplateRecord:
    """What a workload made by these hooks from ``shape`` records of its template."""
    return TemplateRecord(inputs=template_choice.inputs(shape, component), epoch=template_choice.EPOCH)


def snapshot(**fields: Any) -> Snapshot:
    """A snapshot whose workloads run the templates its spec renders, unless a test says otherwise."""
    fields.setdefault("spec", spec())
    observed = fields.get("statefulset")
    if observed is not None and not observed.template:
        template = pod_templates.db_template("demo", fields["spec"])
        fields["statefulset"] = replace(observed, template=template, made=made(fields["spec"], "db"))
    observed_cache = fields.get("cache")
    if observed_cache is not None and not observed_cache.template:
        template = pod_templates.cache_template("demo", fields["spec"])
        fields["cache"] = replace(observed_cache, template=template, made=made(fields["spec"], "cache"))
    return Snapshot(name="demo", namespace="default", generation=1, **fields)


def available(**fields: Any) -> Snapshot:
    """A ShardDB with every gate passed and the cache ready."""
    base: dict[str, Any] = {
        "statefulset": sts(seeded=3),
        "service": True,
        "cache": cache(),
        "seed_jobs": (SeedJobView(3, succeeded=True, failed=False),),
        "registered": frozenset({0, 1, 2}),
        "shard_pods": 3,
        "cache_pods": 2,
        "prior_seeded": 3,
    }
    base.update(fields)
    return snapshot(**base)


def condition(decision: Decision, kind: str) -> tuple[bool, str]:
    state = next(c for c in decision.conditions if c.type == kind)
    return state.status, state.reason


def rolling(updated: int = 1, ready: int = 2, replicas: int = 3) -> StatefulSetView:
    """A StatefulSet part way through a rolling update: one shard restarting."""
    base = sts(replicas=replicas, ready=ready, seeded=3)
    return replace(base, rollout=replace(base.rollout, updated=updated, update_revision="r2"))
