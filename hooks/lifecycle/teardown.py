"""The gates run backwards, for deletion and hibernation: the cache stops first, then the shards, never a
step early; a teardown creates nothing, never grows the StatefulSet and keeps every pod template.
"""

from __future__ import annotations

from dataclasses import replace

from .. import names
from ..replication import shape as replication
from ..replication.shape import Outcome, Plan
from ..snapshot import Snapshot
from . import kept
from . import shards as shard_facts
from .decision import ConditionState, Decision, Phase
from .rollout import Rendered
from .wording.progressing import blocked


def finalize(snap: Snapshot, rendered: Rendered) -> Decision:
    """Teardown: budgets and cache gone, then shards to zero and gone; never a step early.

    The disruption budgets and the cache Service are left out of every finalize
    answer (so Metacontroller deletes them); the shards drain only once none is observed.
    """
    sts = snap.statefulset
    cache = snap.cache
    cache_busy = _cache_busy(snap)
    # Never grow during deletion: keep what is observed until the cache and the budgets are gone.
    shards = snap.existing_shards if (cache_busy or snap.budgets) else 0
    waits_on = ""  # the component whose pods the step waits for: a lost node may block them
    if cache_busy:
        phase = Phase.DRAINING_CACHE
        waits_on = names.CACHE
        message = f"waiting for {snap.cache_pods} cache pods to flush and exit"
    elif snap.budgets:
        phase = Phase.DRAINING_CACHE
        message = "waiting for the disruption budgets to be deleted"
    elif _shards_busy(snap) or (sts is not None and shards != sts.replicas):
        phase = Phase.DRAINING_SHARDS
        waits_on = names.DB
        message = f"waiting for {snap.shard_pods} shard pods to drain and exit"
    else:
        phase = Phase.FINALIZED
        message = "cache and shards are gone; volumes are kept"
    message = blocked(snap.lost_pods, message, waits_on) if waits_on else message
    cleanup = _patroni_left(snap) if phase == Phase.FINALIZED else ""
    if cleanup:
        phase, message = Phase.DRAINING_SHARDS, cleanup
    done = phase == Phase.FINALIZED
    conditions = (
        ConditionState("Available", False, "Deleting", "the ShardDB is being deleted"),
        ConditionState("Progressing", not done, phase.value, message),
        ConditionState("Degraded", False, "Deleting", "the ShardDB is being deleted"),
    )
    decision = stopping(snap, rendered, phase, shards, 0 if cache is not None else None, conditions, finalized=done)
    return replace(decision, patroni_cleanup=bool(cleanup) or snap.cleanup_job is not None)


def _patroni_left(snap: Snapshot) -> str:
    """What removing Patroni's ConfigMaps still waits for, once every member is gone; '' when nothing.

    Only for shards with members. Done once the cleanup Job succeeded, or once none of Patroni's
    watched ConfigMaps is observed and no cleanup Job still runs (a deleted namespace removes them
    itself, and refuses the Job). While they are not watched, only the Job's success counts.
    """
    shape = _shape(snap)
    if shape is None or not shape.patroni:
        return ""
    job = snap.cleanup_job
    if job is not None and job.succeeded:
        return ""
    if snap.patroni_state is False and (job is None or job.failed):
        return ""
    cleaner = names.cleanup_name(snap.name)
    if job is not None and job.failed:
        return (
            f"the Job {cleaner} that removes Patroni's ConfigMaps failed: read `kubectl logs job/{cleaner}`, "
            "then delete the Job to run it again"
        )
    return f"waiting for the Job {cleaner} to remove Patroni's ConfigMaps (its leader, config, sync and failover)"


def hibernate(snap: Snapshot, rendered: Rendered) -> Decision:
    """Sleep in the teardown order, keeping the StatefulSet (at zero), its volumes, Service and seed memory.

    A running seed is let finish first; then budgets and the cache's Service go, the cache
    scales to zero and goes; then the shards scale to zero. Waking is an ordinary sync:
    the shards come back on their volumes, registered, then the cache; no seed runs again.
    """
    cache = snap.cache
    observed_shards = snap.existing_shards
    seed_running = any(not (job.succeeded or job.failed) for job in snap.seed_jobs)
    cache_busy = _cache_busy(snap)
    shards_busy = _shards_busy(snap)
    waits_on = ""  # the component whose pods the step waits for: a lost node may block them
    if seed_running:
        shards, cache_replicas = max(snap.spec.shards, observed_shards), (0 if cache else None)
        message = "waiting for the running seed Job to finish before the shards stop"
    elif cache_busy or cache is not None or snap.budgets:
        shards, cache_replicas, waits_on = observed_shards, (0 if cache_busy and cache else None), names.CACHE
        message = f"waiting for {snap.cache_pods} cache pods to flush and exit"
    else:
        shards, cache_replicas = 0, None
        waits_on = names.DB if shards_busy else ""
        message = f"waiting for {snap.shard_pods} shard pods to drain and exit" if shards_busy else ""
    message = blocked(snap.lost_pods, message, waits_on) if waits_on else message
    asleep = not (seed_running or cache_busy or cache is not None or snap.budgets or shards_busy)
    phase = Phase.HIBERNATED if asleep else Phase.HIBERNATING
    if asleep:
        message = "shards and cache are stopped; volumes and seed memory are kept"
    conditions = (
        ConditionState("Available", False, "Hibernated", "spec.hibernated is true"),
        ConditionState("Progressing", not asleep, phase.value, message),
        ConditionState("Degraded", False, "AsExpected", "No problems observed."),
    )
    return stopping(snap, rendered, phase, shards, cache_replicas, conditions)


def _cache_busy(snap: Snapshot) -> bool:
    """A cache pod exists (a Terminating one may still be flushing), or the Deployment still has replicas."""
    cache = snap.cache
    return snap.cache_pods > 0 or (cache is not None and (cache.status_replicas > 0 or cache.replicas > 0))


def _shards_busy(snap: Snapshot) -> bool:
    """A shard pod exists (a Terminating one may still be draining), or a StatefulSet of them still has replicas."""
    sets = [snap.statefulset] if snap.statefulset is not None else []
    sets += [each.statefulset for each in snap.shard_sets]
    return snap.shard_pods > 0 or any(sts.status_replicas > 0 or sts.replicas > 0 for sts in sets)


def unfit_name(snap: Snapshot, rendered: Rendered, reason: str, message: str) -> Decision:
    """A name no child can run under (an older CRD let it in): create nothing, keep what exists."""
    conditions = (
        ConditionState("Available", False, reason, "no child can run under this name"),
        ConditionState("Progressing", False, reason, "nothing is created until the ShardDB is recreated"),
        ConditionState("Degraded", True, reason, message),
    )
    phase = Phase(reason)
    cache_replicas = snap.cache.replicas if snap.cache else None
    decision = stopping(snap, rendered, phase, snap.existing_shards, cache_replicas, conditions)
    return replace(decision, frozen=True)


def stopping(
    snap: Snapshot,
    rendered: Rendered,
    phase: Phase,
    shards: int,
    cache_replicas: int | None,
    conditions: tuple[ConditionState, ...],
    finalized: bool = False,
) -> Decision:
    """A teardown's answer (deletion or hibernation): no new seed, no budgets, no cache Service.

    Shards with members keep their StatefulSets (only those observed), all at zero once ``shards`` is
    (``shards.stopping_sets`` says why that stops them with no failover).
    """
    sts, cache = snap.statefulset, snap.cache
    shape = _shape(snap)
    counted = shard_facts.of(snap, Outcome(shape))
    held = kept.read(snap)
    return Decision(
        phase=phase,
        shards=shards,
        storage_size=held.size,
        storage_class=held.storage_class,
        seeded_shards=held.seeded,
        seed_jobs=tuple(job.shards for job in snap.seed_jobs),
        cache_replicas=cache_replicas,
        ready_shards=counted.ready(snap.existing_shards),
        registered_shards=len(counted.registered()),
        cache_ready_replicas=cache.ready if cache else 0,
        cache_ready=False,
        conditions=conditions,
        finalized=finalized,
        pod_management_policy=held.policy,
        claim_templates=held.claim_templates,
        # A spec edited while stopping waits for the next start: no pod restarts on a new template now.
        cache_held=cache is not None,
        db_template=(sts.held_template() if sts else {}) or rendered.db,
        cache_template=cache.held_template() if cache else {},
        # A teardown keeps each template as it is, and so what it says it was made from.
        db_made=sts.made if sts else rendered.db_made,
        cache_made=cache.made if cache else rendered.cache_made,
        replication=shape,
        shard_sets=shard_facts.stopping_sets(snap, keep=shards > 0),
        shard_health=tuple((each.shard, each.health) for each in snap.shard_sets),
    )


def _shape(snap: Snapshot) -> Plan | None:
    """The shards' shape in a teardown: the one they have, else the one the spec would make.

    So a teardown never creates a StatefulSet of the other shape (a ShardDB with members
    hibernated before its shards exist would otherwise be held to single copies on waking).
    """
    observed = snap.replication.plan
    return observed if observed is not None else replication.decide(snap.name, snap.spec, snap.replication).plan
