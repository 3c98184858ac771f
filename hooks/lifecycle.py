"""The ShardDB lifecycle: which children exist, at what size, and why.

Pure functions over a ``Snapshot``; no I/O, and the clock only as the reading the
snapshot carries (held against the pods' own timestamps). Gates, in order:
provision shards → seed once all are ready → wait until all are registered in
discovery → start the cache. Deletion and hibernation run the same idea
backwards; a rollout moves the shards first and the cache after them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from . import absent, grace, names, pod_templates, quantity, template_choice
from .last_applied import contains
from .snapshot import Snapshot, StuckPod, TemplateRecord


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


@dataclass(frozen=True)
class ConditionState:
    """A condition without its clock; ``conditions.stamp`` adds the times."""

    type: str
    status: bool
    reason: str
    message: str


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


def decide(snap: Snapshot) -> Decision:
    """The desired world for a snapshot; ``snap.finalizing`` selects teardown.

    Every answer carries the memory of an edit a child without a template record still lags,
    frozen or stopping ones too, so the edit rolls once the children may roll again.
    """
    lags = template_choice.unrecorded_generation(snap.generation, snap.answered_generation, snap.unrecorded())
    return replace(_decide(snap), unrecorded_generation=lags)


def _decide(snap: Snapshot) -> Decision:
    """Deletion runs whatever the spec says (a paused ShardDB still tears down in order)."""
    if snap.finalizing:
        return _finalize(snap)
    unfit = names.unfit(snap.name)
    if unfit is not None:
        return _unfit(snap, *unfit)
    if snap.spec.hibernated and not snap.spec.paused:
        return _hibernate(snap)
    decision = _sync(snap)
    return _paused(decision) if snap.spec.paused else decision


def _paused(decision: Decision) -> Decision:
    """Children frozen as observed; the status still tells the truth, and says it is paused."""
    available, _, degraded = decision.conditions
    progressing = ConditionState(
        "Progressing", False, "Paused", "spec.paused is true: children are kept exactly as they are"
    )
    return replace(decision, frozen=True, conditions=(available, progressing, degraded))


def _unfit(snap: Snapshot, reason: str, message: str) -> Decision:
    """A name no child can run under (an older CRD let it in): create nothing, keep what exists."""
    sts = snap.statefulset
    conditions = (
        ConditionState("Available", False, reason, "no child can run under this name"),
        ConditionState("Progressing", False, reason, "nothing is created until the ShardDB is recreated"),
        ConditionState("Degraded", True, reason, message),
    )
    phase = Phase(reason)
    cache_replicas = snap.cache.replicas if snap.cache else None
    return replace(_stopping(snap, phase, sts.replicas if sts else 0, cache_replicas, conditions), frozen=True)


def _storage(snap: Snapshot) -> tuple[str, str | None]:
    """Volume claim templates are immutable: once the StatefulSet exists, keep what it has."""
    sts = snap.statefulset
    if sts is not None and sts.storage_size is not None:
        return sts.storage_size, sts.storage_class
    return quantity.canonical(snap.spec.storage.size), snap.spec.storage.storage_class_name


def _same_storage(size: str, storage_class: str | None, asked: str, asked_class: str | None) -> bool:
    """Compared by value: ``1024Mi`` asks for exactly the ``1Gi`` the server stored."""
    try:
        same_size = quantity.parse(size) == quantity.parse(asked)
    except quantity.QuantityError:
        same_size = size == asked
    return same_size and storage_class == asked_class


PARALLEL = "Parallel"


def _immutable(snap: Snapshot) -> tuple[str, tuple[dict[str, Any], ...]]:
    """What an existing StatefulSet keeps as it is: its pod management policy and claim templates."""
    sts = snap.statefulset
    if sts is None:
        return PARALLEL, ()
    return sts.pod_management_policy or PARALLEL, sts.claim_templates


MIN_CACHE_REPLICAS_FOR_BUDGET = 2  # a budget over one pod would block every node drain


def _budgets(cache_replicas: int) -> frozenset[str]:
    """The shards always have a budget; the cache once it runs at least two replicas."""
    if cache_replicas >= MIN_CACHE_REPLICAS_FOR_BUDGET:
        return frozenset({names.DB, names.CACHE})
    return frozenset({names.DB})


def _seeded(snap: Snapshot) -> int:
    """Largest shard count whose seed finished, from every place that remembers it."""
    from_jobs = max((job.shards for job in snap.seed_jobs if job.succeeded), default=0)
    from_sts = snap.statefulset.seeded_annotation if snap.statefulset else 0
    return max(snap.prior_seeded, from_sts, from_jobs)


def _sync(snap: Snapshot) -> Decision:
    spec = snap.spec
    sts = snap.statefulset
    observed_shards = sts.replicas if sts else 0
    shards = max(spec.shards, observed_shards)  # shards never shrink
    ready = sts.ready if sts else 0
    seeded = _seeded(snap)
    all_ready = ready >= shards
    seeded_now = seeded >= shards
    registered = sum(1 for ordinal in range(shards) if ordinal in snap.registered)
    all_registered = registered == shards

    seed_jobs = {job.shards for job in snap.seed_jobs}  # never drop a seed Job we see
    current_job = snap.seed_job(shards)
    # One seed at a time: a scale-up during a seed waits for that seed to end.
    earlier_running = any(not (job.succeeded or job.failed) for job in snap.seed_jobs if job.shards != shards)
    if not seeded_now and current_job is None and all_ready and not earlier_running:
        seed_jobs.add(shards)

    cache = snap.cache
    gates_open = all_ready and seeded_now and all_registered
    # A running child keeps its template until its user asks for the one these hooks render.
    db_made = _made(snap, template_choice.inputs(spec, names.DB))
    cache_made = _made(snap, template_choice.inputs(spec, names.CACHE))
    edited = template_choice.edited(snap.generation, snap.answered_generation)
    db_choice = _choose(
        snap, sts.recorded() if sts else None, pod_templates.db_template(snap.name, spec), db_made, edited
    )
    db_template = db_choice.template
    cache_choice = template_choice.Choice({}, waiting=False)
    if cache is not None or gates_open:
        rendered = pod_templates.cache_template(snap.name, spec)
        # An older version held the cache's template while the shards rolled (they roll first).
        lagging = edited or _shards_were_rolling(snap)
        cache_choice = _choose(snap, cache.recorded() if cache else None, rendered, cache_made, lagging)
    cache_template = cache_choice.template
    newer = tuple(part for part, choice in (("shards", db_choice), ("cache", cache_choice)) if choice.waiting)
    rollout = _rollout(snap, shards, ready, all_registered, db_template, cache_template)
    # A pod that waits a moment (for a node, a Secret) is progress until its grace runs out.
    troubles = grace.triage(snap.stuck_pods, snap.now, spec.pod_start_grace_seconds)
    # What admission refused: pods and children asked for that do not exist past the grace.
    missing = absent.find(snap, spec.pod_start_grace_seconds, children=not spec.paused)
    # A rolling update restarts one shard at a time: that one is progress, not an outage.
    tolerated = 1 if rollout.shards_rolling and not _stuck(troubles.failing, names.DB) else 0

    cache_replicas = spec.cache.replicas if (cache is not None or gates_open) else None
    cache_ready_replicas = cache.ready if cache else 0
    cache_ready = cache is not None and cache.ready >= spec.cache.replicas and cache.replicas == spec.cache.replicas

    if ready + tolerated < shards:
        phase = Phase.PROVISIONING
    elif not seeded_now:
        phase = Phase.SEEDING
    elif registered + tolerated < shards:
        phase = Phase.REGISTERING
    elif not cache_ready:
        phase = Phase.STARTING_CACHE
    else:
        phase = Phase.AVAILABLE

    # What the cache was started for keeps serving while new shards join.
    serving = min(seeded, shards)
    # Endpoints trail readiness; a ready, seeded shard still joining discovery is progress, not damage.
    unregistered = sum(1 for o in range(serving) if o not in snap.registered)
    registered_ok = phase == Phase.REGISTERING or unregistered <= tolerated
    serving_ok = serving > 0 and ready + tolerated >= serving and registered_ok
    available = cache_ready and serving_ok
    # A serving shard whose pod waits within its start grace (a drain, a node coming back) is unavailable,
    # but not damage yet: it stays Progressing until the grace says otherwise.
    starting = sum(1 for pod in troubles.waiting if pod.component == names.DB)
    serving_or_starting = (
        serving > 0
        and ready + tolerated + starting >= serving
        and (registered_ok or unregistered <= tolerated + starting)
    )

    size, storage_class = _storage(snap)
    policy, claim_templates = _immutable(snap)
    seed_failed = current_job is not None and current_job.failed and not seeded_now
    problems = _absent_problems(snap, missing) + _problems(
        snap, troubles.failing, shards, seed_failed, size, storage_class, serving_or_starting
    )
    progressing = _waiting(
        _progressing(snap, phase, shards, ready, registered, seed_failed, rollout),
        troubles.waiting,
        absent.waiting_message(missing.pods_waiting) if missing.pods_waiting else "",
    )
    if newer and not progressing.status:
        waiting = f"; a newer pod template waits for the {' and the '.join(newer)}: {APPLY_HINT}"
        progressing = replace(progressing, message=_capped(progressing.message + waiting))

    conditions = (
        ConditionState(
            "Available",
            available,
            _available_reason(snap, available, serving_ok, phase),
            _available_message(snap, available, ready, serving, tolerated),
        ),
        progressing,
        ConditionState(
            "Degraded",
            bool(problems),
            problems[0][0] if problems else "AsExpected",
            _capped("; ".join(message for _, message in problems)) if problems else "No problems observed.",
        ),
    )
    return Decision(
        phase=phase,
        shards=shards,
        storage_size=size,
        storage_class=storage_class,
        seeded_shards=seeded,
        seed_jobs=tuple(sorted(seed_jobs)),
        cache_replicas=cache_replicas,
        ready_shards=ready,
        registered_shards=registered,
        cache_ready_replicas=cache_ready_replicas,
        cache_ready=cache_ready,
        conditions=conditions,
        budgets=_budgets(spec.cache.replicas if cache_replicas is not None else 0),
        cache_service=cache_replicas is not None,
        pod_management_policy=policy,
        claim_templates=claim_templates,
        cache_held=rollout.cache_held,
        db_template=db_template,
        cache_template=(cache.held_template() or cache_template) if rollout.cache_held and cache else cache_template,
        updated_shards=sts.rollout.updated if sts else 0,
        update_revision=sts.rollout.update_revision if sts else "",
        cache_updated_replicas=cache.rollout.updated if cache else 0,
        recheck_at=_earliest(troubles.recheck_at, missing.recheck_at),
        holds_until=missing.holds_until,
        db_made=db_made,
        # Held for the shards, the cache keeps its record too; the change it waits for rolls it after them.
        cache_made=_superseded(cache.made) if rollout.cache_held and cache else cache_made,
        newer_templates=newer,
    )


APPLY_HINT = f"annotate the ShardDB {names.APPLY_TEMPLATES_ANNOTATION}=<a new value> to roll it"


def _choose(
    snap: Snapshot,
    recorded: template_choice.Recorded | None,
    rendered: dict[str, Any],
    made: TemplateRecord,
    may_lag: bool,
) -> template_choice.Choice:
    return template_choice.choose(recorded, rendered, made.inputs or "", snap.apply_templates, may_lag=may_lag)


def _shards_were_rolling(snap: Snapshot) -> bool:
    """The shards roll, or the last answer said a rollout ran: a cache change may have waited for them."""
    sts = snap.statefulset
    rolling = sts is not None and not sts.rollout.settled(sts.replicas)
    return rolling or any(c.type == "Progressing" and c.reason == ROLLING_UPDATE for c in snap.prior_conditions)


def _made(snap: Snapshot, inputs: str) -> TemplateRecord:
    """What a template rendered or kept now was made from: this spec's ``inputs``, this epoch, this request."""
    return TemplateRecord(inputs, template_choice.EPOCH, snap.apply_templates)


def _superseded(record: TemplateRecord) -> TemplateRecord:
    """A kept template whose spec has changed since: never mistaken for one made from the current spec."""
    return replace(record, inputs=record.inputs or template_choice.SUPERSEDED)


@dataclass(frozen=True)
class _Rollout:
    shards_rolling: bool  # the shard template is changing or not yet on every shard
    cache_rolling: bool
    cache_held: bool  # a cache change waits for the shards
    shards_updated: int
    # The StatefulSet controller has not read the latest spec: its status still describes the last one.
    shards_unobserved: bool = False


def _rollout(
    snap: Snapshot,
    shards: int,
    ready: int,
    all_registered: bool,
    db_template: dict[str, Any],
    cache_template: dict[str, Any],
) -> _Rollout:
    """Where a template change stands: shards first; the cache once every shard is updated and serving."""
    sts, cache = snap.statefulset, snap.cache
    if sts is None:
        return _Rollout(False, False, False, 0)
    unobserved = sts.rollout.observed_generation < sts.rollout.generation
    db_pending = not contains(sts.template, db_template)
    # A template rollout, not a scale change: only that restarts serving shards on purpose.
    shards_rolling = db_pending or sts.rollout.new_revision()
    shards_settled = not shards_rolling and sts.rollout.settled(sts.replicas) and ready >= shards and all_registered
    cache_pending = cache is not None and not contains(cache.template, cache_template)
    cache_held = cache_pending and not shards_settled
    cache_rolling = cache is not None and (
        (cache_pending and not cache_held) or not cache.rollout.settled(cache.replicas)
    )
    updated = 0 if db_pending else sts.rollout.updated
    return _Rollout(shards_rolling, cache_rolling, cache_held, updated, shards_unobserved=unobserved)


COMPLETE = "Complete"  # Progressing's reason once everything asked for runs
ROLLING_UPDATE = "RollingUpdate"  # Progressing's reason while a pod template rolls out
STATEFULSET_UPDATED = "StatefulSetUpdated"  # written, not yet read by its controller


def _stuck(failing: tuple[StuckPod, ...], component: str) -> bool:
    return any(pod.component == component for pod in failing)


def _earliest(*moments: datetime | None) -> datetime | None:
    return min((moment for moment in moments if moment is not None), default=None)


def _absent_problems(snap: Snapshot, missing: absent.Absent) -> list[tuple[str, str]]:
    """Children and shard pods that do not exist past the grace, and pods on a lost node: nothing runs there."""
    grace_seconds = snap.spec.pod_start_grace_seconds
    problems: list[tuple[str, str]] = []
    if missing.children:
        problems.append((CHILDREN_MISSING, absent.children_message(snap.name, missing.children, grace_seconds)))
    if missing.pods:
        problems.append((SHARD_PODS_MISSING, absent.pods_message(snap.name, missing.pods, grace_seconds)))
    if snap.lost_pods:
        problems.append((NODE_LOST, absent.lost_message(snap.lost_pods)))
    if missing.seed_refused:
        problems.append((SEED_PODS_MISSING, absent.seed_message(snap.name, missing.seed_refused, grace_seconds)))
    if missing.cache_refused is not None:
        problems.append((CACHE_PODS_MISSING, absent.cache_message(snap.name, missing.cache_refused)))
    return problems


CHILDREN_MISSING = "ChildrenMissing"
SHARD_PODS_MISSING = "ShardPodsMissing"
NODE_LOST = "NodeLost"
CACHE_PODS_MISSING = "CachePodsMissing"
SEED_PODS_MISSING = "SeedPodsMissing"


def _waiting(progressing: ConditionState, waiting: tuple[StuckPod, ...], uncreated: str = "") -> ConditionState:
    """Pods within their grace keep the ShardDB progressing, and the message says what they wait for.

    A stop that needs a person (a failed seed) stays a stop.
    """
    if not waiting and not uncreated:
        return progressing
    message = "; ".join(part for part in (uncreated, grace.waiting_message(waiting)) if part)
    if progressing.status:
        return replace(progressing, message=_capped(f"{progressing.message}; {message}"))
    if progressing.reason == COMPLETE:
        return ConditionState("Progressing", True, "PodsStarting", _capped(message))
    return progressing


def _progressing(
    snap: Snapshot, phase: Phase, shards: int, ready: int, registered: int, seed_failed: bool, rollout: _Rollout
) -> ConditionState:
    """Moving toward the spec: the lifecycle's next gate, else a rollout, else complete."""
    if seed_failed:
        return ConditionState("Progressing", False, "SeedFailed", _seed_failure(snap, shards))
    if phase != Phase.AVAILABLE:
        return ConditionState(
            "Progressing", True, phase.value, _progress_message(snap, phase, shards, ready, registered)
        )
    if rollout.shards_rolling:
        waiting = "; the cache rolls after them" if rollout.cache_held else ""
        message = f"{rollout.shards_updated}/{shards} shards updated{waiting}"
        return ConditionState("Progressing", True, ROLLING_UPDATE, message)
    if rollout.shards_unobserved and snap.statefulset is not None:
        # Its revisions are the last spec's until it reads this one: "all updated" would be a lie.
        generation = snap.statefulset.rollout.generation
        message = f"the StatefulSet's controller has not yet observed its generation {generation}"
        return ConditionState("Progressing", True, STATEFULSET_UPDATED, message)
    if rollout.cache_held:
        message = f"shards updated; the cache waits until all {shards} are ready and registered"
        return ConditionState("Progressing", True, ROLLING_UPDATE, message)
    if rollout.cache_rolling and snap.cache is not None:
        message = f"cache {snap.cache.rollout.updated}/{snap.spec.cache.replicas} replicas updated"
        return ConditionState("Progressing", True, ROLLING_UPDATE, message)
    return ConditionState("Progressing", False, COMPLETE, f"{shards} shards seeded, registered and cached")


def _problems(
    snap: Snapshot,
    failing_pods: tuple[StuckPod, ...],
    shards: int,
    seed_failed: bool,
    size: str,
    storage_class: str | None,
    serving_ok: bool,
) -> list[tuple[str, str]]:
    """Reasons the ShardDB is worse than asked for, most pressing first."""
    spec = snap.spec
    problems: list[tuple[str, str]] = []
    failing = _failing_pods(failing_pods)
    if names.DB in failing:
        problems.append(("ShardPodsFailing", f"shard pods cannot start: {failing[names.DB]}"))
    if seed_failed:
        problems.append(("SeedFailed", f"{_seed_failure(snap, shards)}; inspect its logs, then delete it to retry"))
    if names.SEED in failing:
        problems.append(("SeedPodsFailing", f"seed pods cannot start: {failing[names.SEED]}"))
    if snap.cache is not None and not serving_ok:
        problems.append(("ShardsUnavailable", "the cache is up but not every serving shard is ready and registered"))
    if names.CACHE in failing:
        problems.append(("CachePodsFailing", f"cache pods cannot start: {failing[names.CACHE]}"))
    if snap.cache is not None and snap.cache.stuck:
        problems.append(("CacheRolloutStuck", "the cache Deployment exceeded its progress deadline"))
    if spec.shards < shards:
        problems.append(
            (
                "ShrinkRefused",
                f"spec.shards={spec.shards} is below the {shards} shards that exist; "
                f"shards never shrink (their data would be lost), keeping {shards}",
            )
        )
    if not _same_storage(size, storage_class, spec.storage.size, spec.storage.storage_class_name):
        problems.append(
            (
                "StorageImmutable",
                f"spec.storage cannot change once shards exist; keeping size {size}"
                + (f" and class {storage_class}" if storage_class else ""),
            )
        )
    return problems


SHOWN_PODS = 3  # per component; the rest are counted
MESSAGE_MAX = 1024  # a condition message stays readable in `kubectl describe`


def _capped(message: str) -> str:
    return message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 1] + "…"


def _failing_pods(failing: tuple[StuckPod, ...]) -> dict[str, str]:
    """Per component, the pods that cannot start and why, most pressing first (snapshot order)."""
    listed: dict[str, list[str]] = {}
    for pod in failing:
        listed.setdefault(pod.component, []).append(
            f"{pod.name}: {pod.reason}" + (f" ({pod.detail})" if pod.detail else "")
        )
    return {
        component: ", ".join(lines[:SHOWN_PODS])
        + (f" and {len(lines) - SHOWN_PODS} more" if len(lines) > SHOWN_PODS else "")
        for component, lines in listed.items()
    }


def _seed_failure(snap: Snapshot, shards: int) -> str:
    """Which seed Job failed and the Job controller's reason (a deadline, too many retries)."""
    job = snap.seed_job(shards)
    text = f"seed Job {names.seed_job_name(snap.name, shards)} failed"
    if job is not None and job.reason:
        text += f": {job.reason}" + (f" ({job.message})" if job.message else "")
    return text


def _available_reason(snap: Snapshot, available: bool, serving_ok: bool, phase: Phase) -> str:
    if available:
        return "Ready"
    if snap.cache is not None:
        return "CacheNotReady" if serving_ok else "ShardsUnavailable"
    return phase.value


def _available_message(snap: Snapshot, available: bool, ready: int, serving: int, tolerated: int) -> str:
    if available:
        restarting = " (one restarting for a rolling update)" if tolerated and ready < serving else ""
        return f"{serving} shards and the cache are serving{restarting}"
    if snap.cache is None:
        return "the cache has not started yet"
    cache = f"cache {snap.cache.ready}/{snap.spec.cache.replicas} ready"
    return f"{min(ready, serving)}/{serving} serving shards ready; {cache}"


def _progress_message(snap: Snapshot, phase: Phase, shards: int, ready: int, registered: int) -> str:
    if phase == Phase.PROVISIONING:
        return f"{ready}/{shards} shards ready"
    if phase == Phase.SEEDING:
        return f"seeding {shards} shards"
    if phase == Phase.REGISTERING:
        return f"{registered}/{shards} shards registered in discovery"
    ready_cache = snap.cache.ready if snap.cache else 0
    return f"cache {ready_cache}/{snap.spec.cache.replicas} replicas ready"


def _hibernate(snap: Snapshot) -> Decision:
    """Sleep in the teardown order, keeping the StatefulSet (at zero), its volumes, Service and seed memory.

    A running seed is let finish first; then budgets and the cache's Service go, the cache
    scales to zero and goes; then the shards scale to zero. Waking is an ordinary sync:
    the shards come back on their volumes, registered, then the cache; no seed runs again.
    """
    sts = snap.statefulset
    cache = snap.cache
    observed_shards = sts.replicas if sts else 0
    seed_running = any(not (job.succeeded or job.failed) for job in snap.seed_jobs)
    cache_busy = snap.cache_pods > 0 or (cache is not None and (cache.status_replicas > 0 or cache.replicas > 0))
    shards_busy = snap.shard_pods > 0 or (sts is not None and (sts.status_replicas > 0 or sts.replicas > 0))
    if seed_running:
        shards, cache_replicas = max(snap.spec.shards, observed_shards), (0 if cache else None)
        message = "waiting for the running seed Job to finish before the shards stop"
    elif cache_busy or cache is not None or snap.budgets:
        shards, cache_replicas = observed_shards, (0 if cache_busy and cache else None)
        message = _blocked(snap, f"waiting for {snap.cache_pods} cache pods to flush and exit", names.CACHE)
    else:
        shards, cache_replicas = 0, None
        draining = f"waiting for {snap.shard_pods} shard pods to drain and exit"
        message = _blocked(snap, draining, names.DB) if shards_busy else ""
    asleep = not (seed_running or cache_busy or cache is not None or snap.budgets or shards_busy)
    phase = Phase.HIBERNATED if asleep else Phase.HIBERNATING
    if asleep:
        message = "shards and cache are stopped; volumes and seed memory are kept"
    conditions = (
        ConditionState("Available", False, "Hibernated", "spec.hibernated is true"),
        ConditionState("Progressing", not asleep, phase.value, message),
        ConditionState("Degraded", False, "AsExpected", "No problems observed."),
    )
    return _stopping(snap, phase, shards, cache_replicas, conditions)


def _stopping(
    snap: Snapshot,
    phase: Phase,
    shards: int,
    cache_replicas: int | None,
    conditions: tuple[ConditionState, ...],
    finalized: bool = False,
) -> Decision:
    """A teardown's answer (deletion or hibernation): no new seed, no budgets, no cache Service."""
    sts, cache = snap.statefulset, snap.cache
    size, storage_class = _storage(snap)
    policy, claim_templates = _immutable(snap)
    return Decision(
        phase=phase,
        shards=shards,
        storage_size=size,
        storage_class=storage_class,
        seeded_shards=_seeded(snap),
        seed_jobs=tuple(job.shards for job in snap.seed_jobs),
        cache_replicas=cache_replicas,
        ready_shards=sts.ready if sts else 0,
        registered_shards=len(snap.registered),
        cache_ready_replicas=cache.ready if cache else 0,
        cache_ready=False,
        conditions=conditions,
        finalized=finalized,
        pod_management_policy=policy,
        claim_templates=claim_templates,
        # A spec edited while stopping waits for the next start: no pod restarts on a new template now.
        cache_held=cache is not None,
        db_template=(sts.held_template() if sts else {}) or pod_templates.db_template(snap.name, snap.spec),
        cache_template=cache.held_template() if cache else {},
        # A teardown keeps each template as it is, and so what it says it was made from.
        db_made=sts.made if sts else _made(snap, template_choice.inputs(snap.spec, names.DB)),
        cache_made=cache.made if cache else _made(snap, template_choice.inputs(snap.spec, names.CACHE)),
    )


def _blocked(snap: Snapshot, message: str, component: str) -> str:
    """A stopping step's message, with what blocks it on a lost node and what a person may do."""
    blocked = absent.blocked_message(snap.lost_pods, component)
    return _capped(f"{message}; {blocked}") if blocked else message


def _finalize(snap: Snapshot) -> Decision:
    """Teardown: budgets and cache gone, then shards to zero and gone; never a step early.

    The disruption budgets and the cache Service are left out of every finalize
    answer (so Metacontroller deletes them); the shards drain only once none is observed.
    """
    sts = snap.statefulset
    cache = snap.cache
    cache_busy = snap.cache_pods > 0 or (cache is not None and (cache.status_replicas > 0 or cache.replicas > 0))
    # Never grow during deletion: keep what is observed until the cache and the budgets are gone.
    shards = (sts.replicas if sts else 0) if (cache_busy or snap.budgets) else 0
    shards_busy = snap.shard_pods > 0 or (sts is not None and (sts.status_replicas > 0 or sts.replicas > 0))
    if cache_busy:
        phase = Phase.DRAINING_CACHE
        message = _blocked(snap, f"waiting for {snap.cache_pods} cache pods to flush and exit", names.CACHE)
    elif snap.budgets:
        phase = Phase.DRAINING_CACHE
        message = "waiting for the disruption budgets to be deleted"
    elif shards_busy or (sts is not None and shards != sts.replicas):
        phase = Phase.DRAINING_SHARDS
        message = _blocked(snap, f"waiting for {snap.shard_pods} shard pods to drain and exit", names.DB)
    else:
        phase = Phase.FINALIZED
        message = "cache and shards are gone; volumes are kept"
    done = phase == Phase.FINALIZED
    conditions = (
        ConditionState("Available", False, "Deleting", "the ShardDB is being deleted"),
        ConditionState("Progressing", not done, phase.value, message),
        ConditionState("Degraded", False, "Deleting", "the ShardDB is being deleted"),
    )
    return _stopping(snap, phase, shards, 0 if cache is not None else None, conditions, finalized=done)
