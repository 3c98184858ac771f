"""The phase gates of a running ShardDB, each open only once the one before is done: shards ready, seeded,
registered in discovery, then the cache; and the rules that hold in every state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from .. import names, template_choice
from ..replication import roles
from ..replication.roles import RoleTrouble
from ..snapshot import Snapshot
from ..trouble import grace, missing
from ..trouble.stuck import StuckPod
from . import absent, kept, rollout
from . import shards as shard_facts
from .decision import ConditionState, Decision, Phase, ShardSetAnswer
from .wording import (
    absent_problems,
    available_message,
    available_reason,
    degraded_message,
    newer_waiting,
    progressing,
    refused,
    two_primaries,
    waiting,
    worse_than_asked,
)

MIN_CACHE_REPLICAS_FOR_BUDGET = 2  # a budget over one pod would block every node drain


def sync(snap: Snapshot) -> Decision:
    """The desired world of a ShardDB that runs: every gate that is open, and conditions that say where it stands."""
    spec = snap.spec
    sts, cache = snap.statefulset, snap.cache
    outcome = shard_facts.replication_outcome(snap)
    members = outcome.plan is None or outcome.plan.patroni  # not today's single copies
    shards = max(spec.shards, shard_facts.existing_shards(snap))  # shards never shrink
    ready = shard_facts.ready_shards(snap, shards, members)
    seeded = kept.seeded(snap)
    seeded_now = seeded >= shards
    in_discovery = shard_facts.registered_shards(snap, members)
    registered = sum(1 for ordinal in range(shards) if ordinal in in_discovery)
    all_registered = registered == shards
    gates_open = ready >= shards and seeded_now and all_registered
    with_cache = cache is not None or gates_open  # once observed, the cache is always kept

    chosen = rollout.choose_templates(snap, with_cache)
    sets: tuple[ShardSetAnswer, ...] = ()
    member_rollout = False
    if outcome.plan is not None and outcome.plan.patroni:
        edited = template_choice.edited(snap.generation, snap.answered_generation)
        sets, held_back = shard_facts.choose_sets(snap, outcome.plan, shards, edited, outcome.hold)
        chosen = replace(chosen, db=template_choice.Choice(chosen.db.template, waiting=held_back))
        plan = rollout.rolling_sets(snap, sets, shards, ready, all_registered, chosen)
        member_rollout = plan.shards_rolling  # OnDelete: nothing rolls unless the Job evicts
    else:
        plan = rollout.rolling(snap, shards, ready, all_registered, chosen)
    # A pod that waits a moment (for a node, a Secret) is progress until its grace runs out.
    troubles = grace.triage(snap.stuck_pods, snap.now, spec.pod_start_grace_seconds)
    # What admission refused: pods and children asked for that do not exist past the grace.
    # With members: the shard StatefulSets an earlier answer asked for (a new one is created by this answer).
    expected: tuple[int, ...] | None = None
    if members:
        expected = tuple(range(max(1, shard_facts.existing_shards(snap)))) if sets else ()
    unmet = absent.find(snap, spec.pod_start_grace_seconds, children=not spec.paused, shard_sets=expected)
    # Shards with members without a primary or sync standby: Patroni's to mend within the grace.
    role_trouble = roles.triage(snap.shard_sets, snap.name, snap.now, spec.pod_start_grace_seconds)
    # Standbys that do not stream from a primary: Patroni's to mend within the grace, named past it.
    standby_trouble = roles.standbys(snap.shard_sets, snap.name, snap.now, spec.pod_start_grace_seconds)
    # A rolling update restarts one shard at a time: that one is progress, not an outage.
    tolerated = 1 if plan.shards_rolling and not _stuck(troubles.failing, names.DB) else 0

    cache_ready = cache is not None and cache.ready >= spec.cache.replicas and cache.replicas == spec.cache.replicas
    phase = _phase(ready + tolerated >= shards, seeded_now, registered + tolerated >= shards, cache_ready)
    serving_ready = shard_facts.serving_shards(snap, shards, members, ready)
    starting = len(role_trouble.waiting) + sum(1 for pod in troubles.waiting if pod.component == names.DB)
    serving = _serving(in_discovery, shards, seeded, serving_ready, tolerated, phase, starting)
    available = cache_ready and serving.ok

    size, storage_class = kept.storage(snap)
    current_job = snap.seed_job(shards)
    seed_failed = current_job is not None and current_job.failed and not seeded_now
    problems = (
        two_primaries(role_trouble.failing)
        + refused(outcome.refusal)
        + absent_problems(snap, unmet)
        + worse_than_asked(
            snap,
            troubles.failing,
            role_trouble.failing + standby_trouble.failing,
            shards,
            seed_failed,
            size,
            storage_class,
            serving.ok_or_starting,
        )
    )
    uncreated = "; ".join(
        part
        for part in (
            missing.waiting_message(unmet.pods_waiting) if unmet.pods_waiting else "",
            roles.waiting_message(role_trouble.waiting),
            roles.waiting_message(_alone(standby_trouble.waiting, role_trouble)),
        )
        if part
    )
    moving = waiting(
        progressing(snap, phase, shards, ready, registered, seed_failed, plan), troubles.waiting, uncreated
    )
    conditions = (
        ConditionState(
            "Available",
            available,
            available_reason(snap, available, serving.ok, phase),
            available_message(snap, available, serving_ready, serving.shards, tolerated),
        ),
        newer_waiting(moving, chosen.newer),
        ConditionState(
            "Degraded", bool(problems), problems[0][0] if problems else "AsExpected", degraded_message(problems)
        ),
    )

    cache_replicas = spec.cache.replicas if with_cache else None
    policy, claim_templates = kept.immutable(snap)
    cache_template, cache_made = rollout.cache_answer(snap, plan, chosen)
    return Decision(
        phase=phase,
        shards=shards,
        storage_size=size,
        storage_class=storage_class,
        seeded_shards=seeded,
        seed_jobs=_seed_jobs(snap, shards, seeded_now, all_ready=ready >= shards),
        cache_replicas=cache_replicas,
        ready_shards=ready,
        registered_shards=registered,
        cache_ready_replicas=cache.ready if cache else 0,
        cache_ready=cache_ready,
        conditions=conditions,
        budgets=_budgets(spec.cache.replicas if cache_replicas is not None else 0),
        cache_service=cache_replicas is not None,
        pod_management_policy=policy,
        claim_templates=claim_templates,
        cache_held=plan.cache_held,
        db_template=chosen.db.template,
        cache_template=cache_template,
        updated_shards=sts.rollout.updated if sts else plan.shards_updated,
        update_revision=sts.rollout.update_revision if sts else "",
        cache_updated_replicas=cache.rollout.updated if cache else 0,
        recheck_at=_earliest(
            troubles.recheck_at, unmet.recheck_at, role_trouble.recheck_at, standby_trouble.recheck_at
        ),
        holds_until=unmet.holds_until,
        db_made=chosen.db_made,
        cache_made=cache_made,
        newer_templates=chosen.newer,
        replication=outcome.plan,
        shard_sets=sets,
        member_rollout=member_rollout,
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


def _alone(standbys: tuple[RoleTrouble, ...], shards: roles.Roles) -> tuple[RoleTrouble, ...]:
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
