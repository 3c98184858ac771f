"""The phase gates of a running ShardDB, each open only once the one before is done: shards ready, seeded,
registered in discovery, then the cache; and the rules that hold in every state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from .. import names
from ..backup import runs
from ..replication import roles
from ..replication import shape as replication
from ..replication.roles import RoleTrouble
from ..replication.shape import Outcome
from ..snapshot import Snapshot
from ..trouble.stuck import StuckPod
from . import grace, kept, rollout
from . import shards as shard_facts
from .decision import ConditionState, Decision, Phase
from .wording.available import available_message, available_reason
from .wording.degraded import (
    absent_problems,
    base_backup_failed,
    degraded_message,
    kept_schedule,
    refused,
    schedule_refused,
    two_primaries,
    worse_than_asked,
)
from .wording.progressing import newer_waiting, progressing, uncreated, waiting

MIN_CACHE_REPLICAS_FOR_BUDGET = 2  # a budget over one pod would block every node drain


@dataclass(frozen=True)
class _Gates:
    """Where the gates stand at one request: what each counts, and whether the cache may run."""

    shards: int  # shards never shrink: the spec's count, or more when more exist
    ready: int
    seeded: int
    in_discovery: frozenset[int]
    registered: int

    @property
    def seeded_now(self) -> bool:
        return self.seeded >= self.shards

    @property
    def all_registered(self) -> bool:
        return self.registered == self.shards

    @property
    def open(self) -> bool:
        return self.ready >= self.shards and self.seeded_now and self.all_registered


@dataclass(frozen=True)
class _Troubles:
    """What keeps the shards from running as asked, each split by the start grace."""

    pods: grace.Split[StuckPod]
    unmet: grace.Missing
    roles: grace.Split[RoleTrouble]  # shards without a primary or sync standby: Patroni's to mend within the grace
    standbys: grace.Split[RoleTrouble]  # standbys that do not stream from a primary

    @property
    def recheck_at(self) -> datetime | None:
        return _earliest(self.pods.recheck_at, self.unmet.recheck_at, self.roles.recheck_at, self.standbys.recheck_at)


def sync(snap: Snapshot, rendered: rollout.Rendered) -> Decision:
    """The desired world of a ShardDB that runs: every gate that is open, and conditions that say where it stands."""
    spec, cache = snap.spec, snap.cache
    outcome = replication.decide(snap.name, snap.spec, snap.replication)
    shape = shard_facts.of(snap, outcome)
    held = kept.read(snap)
    gates = _gates(snap, shape, held.seeded, hold=outcome.hold)
    with_cache = cache is not None or gates.open  # once observed, the cache is always kept
    chosen = rollout.choose_templates(snap, rendered, with_cache, hold=outcome.hold)
    layout = shape.layout(chosen, gates.shards, gates.ready, gates.all_registered)
    troubles = _troubles(snap, shape, layout)
    # A rolling update restarts one shard at a time: that one is progress, not an outage.
    tolerated = 1 if layout.plan.shards_rolling and not _stuck(troubles.pods.failing, names.DB) else 0
    cache_ready = cache is not None and cache.ready >= spec.cache.replicas and cache.replicas == spec.cache.replicas
    phase = _phase(
        gates.ready + tolerated >= gates.shards,
        gates.seeded_now,
        gates.registered + tolerated >= gates.shards,
        cache_ready,
    )
    conditions = _conditions(snap, shape, gates, layout, troubles, outcome, tolerated, phase, cache_ready, held)
    return _decision(snap, gates, layout, troubles, outcome, phase, conditions, with_cache, cache_ready, held)


def _gates(snap: Snapshot, shape: shard_facts.Shards, seeded: int, *, hold: bool) -> _Gates:
    """``hold`` (a refusal's): the shards that exist are all there are; a new one waits with the refused spec."""
    existing = snap.existing_shards
    shards = existing if hold and existing else max(snap.spec.shards, existing)
    in_discovery = shape.registered()
    registered = sum(1 for ordinal in range(shards) if ordinal in in_discovery)
    return _Gates(shards, shape.ready(shards), seeded, in_discovery, registered)


def _troubles(snap: Snapshot, shape: shard_facts.Shards, layout: shard_facts.Layout) -> _Troubles:
    """Pods that wait a moment (for a node, a Secret) are progress until their grace runs out; so is what admission
    refused (pods and children asked for that do not exist) and a shard's roles, which Patroni mends."""
    seconds = snap.spec.pod_start_grace_seconds
    found = roles.found(snap.shard_sets, snap.name)
    return _Troubles(
        pods=grace.triage(snap.stuck_pods, snap.now, seconds),
        unmet=grace.unmet(snap, seconds, children=not snap.spec.paused, shard_sets=shape.expected_sets(layout)),
        roles=grace.split(found.unready, snap.now, seconds),
        standbys=grace.split(found.standbys, snap.now, seconds),
    )


def _conditions(
    snap: Snapshot,
    shape: shard_facts.Shards,
    gates: _Gates,
    layout: shard_facts.Layout,
    troubles: _Troubles,
    outcome: Outcome,
    tolerated: int,
    phase: Phase,
    cache_ready: bool,
    held: kept.Kept,
) -> tuple[ConditionState, ...]:
    """Available, Progressing and Degraded, from where the gates stand and what troubles the shards."""
    serving_ready = shape.serving(gates.shards, gates.ready)
    starting = len(troubles.roles.waiting) + sum(1 for pod in troubles.pods.waiting if pod.component == names.DB)
    serving = _serving(gates.in_discovery, gates.shards, gates.seeded, serving_ready, tolerated, phase, starting)
    available = cache_ready and serving.ok
    current_job = snap.seed_job(gates.shards)
    seed_failed = current_job is not None and current_job.failed and not gates.seeded_now
    problems = (
        two_primaries(troubles.roles.failing)
        + refused(outcome.refusal)
        + absent_problems(snap, troubles.unmet)
        + worse_than_asked(
            snap,
            troubles.pods.failing,
            troubles.roles.failing + troubles.standbys.failing,
            gates.shards,
            seed_failed,
            held,
            serving.ok_or_starting,
        )
        + schedule_refused(snap)
        + base_backup_failed(snap)
    )
    degraded = ConditionState(
        "Degraded", bool(problems), problems[0][0] if problems else "AsExpected", degraded_message(problems)
    )
    standbys = _alone(troubles.standbys.waiting, troubles.roles)
    moving = waiting(
        progressing(snap, phase, gates.shards, gates.ready, gates.registered, seed_failed, layout.plan),
        troubles.pods.waiting,
        uncreated(troubles.unmet.pods_waiting, troubles.roles.waiting, standbys),
    )
    moving = newer_waiting(moving, layout.chosen.newer)
    available_now = ConditionState(
        "Available",
        available,
        available_reason(snap, available, serving.ok, phase),
        available_message(snap, available, serving_ready, serving.shards, tolerated),
    )
    return (available_now, moving, degraded)


def _decision(
    snap: Snapshot,
    gates: _Gates,
    layout: shard_facts.Layout,
    troubles: _Troubles,
    outcome: Outcome,
    phase: Phase,
    conditions: tuple[ConditionState, ...],
    with_cache: bool,
    cache_ready: bool,
    held: kept.Kept,
) -> Decision:
    """The answer's children and status fields, from the gates and the layout."""
    spec, sts, cache, chosen, plan = snap.spec, snap.statefulset, snap.cache, layout.chosen, layout.plan
    cache_replicas = spec.cache.replicas if with_cache else None
    cache_template, cache_made = rollout.cache_answer(snap, plan, chosen)
    schedule = kept_schedule(snap)
    return Decision(
        phase=phase,
        shards=gates.shards,
        storage_size=held.size,
        storage_class=held.storage_class,
        seeded_shards=gates.seeded,
        seed_jobs=_seed_jobs(snap, gates.shards, gates.seeded_now, all_ready=gates.ready >= gates.shards),
        cache_replicas=cache_replicas,
        ready_shards=gates.ready,
        registered_shards=gates.registered,
        cache_ready_replicas=cache.ready if cache else 0,
        cache_ready=cache_ready,
        conditions=conditions,
        budgets=_budgets(spec.cache.replicas if cache_replicas is not None else 0),
        cache_service=cache_replicas is not None,
        pod_management_policy=held.policy,
        claim_templates=held.claim_templates,
        cache_held=plan.cache_held,
        db_template=chosen.db.template,
        cache_template=cache_template,
        updated_shards=sts.rollout.updated if sts else plan.shards_updated,
        update_revision=sts.rollout.update_revision if sts else "",
        cache_updated_replicas=cache.rollout.updated if cache else 0,
        recheck_at=troubles.recheck_at,
        holds_until=troubles.unmet.holds_until,
        db_made=chosen.db_made,
        cache_made=cache_made,
        newer_templates=chosen.newer,
        replication=outcome.plan,
        shard_sets=layout.sets,
        member_rollout=layout.member_rollout,
        base_backups=spec.backup is not None and outcome.plan is not None and outcome.plan.patroni,
        backup_schedule=schedule,
        base_backup_runs=snap.base_backups if spec.backup is not None else None,
        base_backup_due=runs.due(snap.base_backups, schedule) if spec.backup is not None else None,
        shard_health=tuple((each.shard, each.health) for each in snap.shard_sets),
    )


def _phase(shards_ready: bool, seeded: bool, registered: bool, cache_ready: bool) -> Phase:
    """The first gate not yet passed."""
    if not shards_ready:
        return Phase.PROVISIONING
    if not seeded:
        return Phase.SEEDING
    if not registered:
        return Phase.REGISTERING
    if not cache_ready:
        return Phase.STARTING_CACHE
    return Phase.AVAILABLE


def _seed_jobs(snap: Snapshot, shards: int, seeded_now: bool, *, all_ready: bool) -> tuple[int, ...]:
    """Every seed Job observed (never dropped), and this count's once every shard is ready and no seed runs."""
    seed_jobs = {job.shards for job in snap.seed_jobs}
    # One seed at a time: a scale-up during a seed waits for that seed to end.
    earlier_running = any(not (job.succeeded or job.failed) for job in snap.seed_jobs if job.shards != shards)
    if not seeded_now and snap.seed_job(shards) is None and all_ready and not earlier_running:
        seed_jobs.add(shards)
    return tuple(sorted(seed_jobs))


@dataclass(frozen=True)
class _Serving:
    """The shards the cache was started for, and whether they serve it."""

    shards: int  # what the cache was started for keeps serving while new shards join
    ok: bool
    # A serving shard whose pod waits within its start grace (a drain, a node coming back) is unavailable,
    # but not damage yet: it stays Progressing until the grace says otherwise.
    ok_or_starting: bool


def _serving(
    in_discovery: frozenset[int],
    shards: int,
    seeded: int,
    ready: int,
    tolerated: int,
    phase: Phase,
    starting: int,
) -> _Serving:
    """``starting``: shard pods waiting within their start grace, and shards with members waiting for their roles."""
    serving = min(seeded, shards)
    # Endpoints trail readiness; a ready, seeded shard still joining discovery is progress, not damage.
    unregistered = sum(1 for o in range(serving) if o not in in_discovery)
    registered_ok = phase == Phase.REGISTERING or unregistered <= tolerated
    ok = serving > 0 and ready + tolerated >= serving and registered_ok
    ok_or_starting = (
        serving > 0
        and ready + tolerated + starting >= serving
        and (registered_ok or unregistered <= tolerated + starting)
    )
    return _Serving(serving, ok, ok_or_starting)


def _budgets(cache_replicas: int) -> frozenset[str]:
    """The shards always have a budget; the cache once it runs at least two replicas."""
    if cache_replicas >= MIN_CACHE_REPLICAS_FOR_BUDGET:
        return frozenset({names.DB, names.CACHE})
    return frozenset({names.DB})


def _alone(standbys: tuple[RoleTrouble, ...], shards: grace.Split[RoleTrouble]) -> tuple[RoleTrouble, ...]:
    """Standbys waiting in shards with no other role trouble: a shard waiting for its sync standby says so once."""
    named = {trouble.shard for trouble in shards.failing + shards.waiting}
    return tuple(trouble for trouble in standbys if trouble.shard not in named)


def _stuck(failing: tuple[StuckPod, ...], component: str) -> bool:
    return any(pod.component == component for pod in failing)


def _earliest(*moments: datetime | None) -> datetime | None:
    return min((moment for moment in moments if moment is not None), default=None)


def paused(decision: Decision) -> Decision:
    """Children frozen as observed; the status still tells the truth, and says it is paused."""
    available, _, degraded = decision.conditions
    frozen = ConditionState(
        "Progressing", False, "Paused", "spec.paused is true: children are kept exactly as they are"
    )
    return replace(decision, frozen=True, conditions=(available, frozen, degraded))
