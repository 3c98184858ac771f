"""The words of the status, apart from the decisions they report: each condition's reason and message as
``kubectl describe`` shows them (``tests/docs/test_runbooks.py`` reads the reasons from this module).
"""

from __future__ import annotations

from dataclasses import replace

from ... import names
from ...replication.health import NO_PRIMARY, NO_SYNC_STANDBY, STANDBY_NOT_STREAMING, TWO_PRIMARIES
from ...replication.roles import RoleTrouble
from ...replication.shape import Refusal
from ...snapshot import Snapshot
from ...trouble.missing import MissingPod
from ...trouble.stuck import StuckPod
from ..decision import COMPLETE, ROLLING_UPDATE, STATEFULSET_UPDATED, ConditionState, Phase
from ..grace import Missing
from ..kept import Kept
from ..rollout import Rolling
from .lists import capped
from .troubles import (
    cache_message,
    children_message,
    failing_message,
    lost_message,
    missing_waiting,
    pods_message,
    seed_message,
    stuck_waiting,
    waiting_message,
)

SHOWN_PODS = 3  # per component; the rest are counted

CHILDREN_MISSING = "ChildrenMissing"
SHARD_PODS_MISSING = "ShardPodsMissing"
NODE_LOST = "NodeLost"
CACHE_PODS_MISSING = "CachePodsMissing"
SEED_PODS_MISSING = "SeedPodsMissing"

# A running shard without its synchronous standby: writes go on (Patroni's synchronous mode is not
# strict), but each commit is acknowledged by the primary alone, and Patroni promotes only a
# synchronous standby, so a lost primary now is an outage until a person acts.
UNGUARDED = "commits are acknowledged by the primary alone, and no standby may take over if it is lost"

# A standby that does not stream past the grace: Patroni did not bring it back by itself (a rewind or a
# clone that fails, a timeline it cannot follow); it takes no part in a failover meanwhile.
NOT_REJOINED = "it cannot take over from the primary; `patronictl reinit` in a member of the shard clones it again"

APPLY_HINT = f"annotate the ShardDB {names.APPLY_TEMPLATES_ANNOTATION}=<a new value> to roll it"


def refused(refusal: Refusal | None) -> list[tuple[str, str]]:
    """``spec.replication`` not applied as asked: first, as it says why the shards are not what was asked.

    The shards keep the shape they have (or none is made yet); no child is ever deleted for it.
    """
    problems: list[tuple[str, str]] = []
    if refusal is not None:
        problems.append((refusal.reason, refusal.message))
    return problems


def two_primaries(failing: tuple[RoleTrouble, ...]) -> list[tuple[str, str]]:
    """Two pods of a shard labelled primary: first of all, at once, since two writable primaries must never be.

    Patroni's labels say so; whether both accept writes only ``patronictl list`` in a member tells.
    """
    problems: list[tuple[str, str]] = []
    message = failing_message(failing, TWO_PRIMARIES, 0)
    if message:
        problems.append((TWO_PRIMARIES, f"{message}: read `patronictl list` in a member of the shard"))
    return problems


def absent_problems(snap: Snapshot, unmet: Missing) -> list[tuple[str, str]]:
    """Children and shard pods that do not exist past the grace, and pods on a lost node: nothing runs there."""
    grace_seconds = snap.spec.pod_start_grace_seconds
    problems: list[tuple[str, str]] = []
    if unmet.children:
        problems.append((CHILDREN_MISSING, children_message(snap.name, unmet.children, grace_seconds)))
    if unmet.pods:
        problems.append((SHARD_PODS_MISSING, pods_message(snap.name, unmet.pods, grace_seconds)))
    if snap.lost_pods:
        problems.append((NODE_LOST, lost_message(snap.lost_pods)))
    if unmet.seed_refused:
        problems.append((SEED_PODS_MISSING, seed_message(snap.name, unmet.seed_refused, grace_seconds)))
    if unmet.cache_refused is not None:
        problems.append((CACHE_PODS_MISSING, cache_message(snap.name, unmet.cache_refused)))
    return problems


def worse_than_asked(
    snap: Snapshot,
    failing_pods: tuple[StuckPod, ...],
    failing_roles: tuple[RoleTrouble, ...],
    shards: int,
    seed_failed: bool,
    kept: Kept,
    serving_ok: bool,
) -> list[tuple[str, str]]:
    """Reasons the ShardDB is worse than asked for, most pressing first."""
    spec = snap.spec
    problems: list[tuple[str, str]] = []
    failing = _failing_pods(failing_pods)
    if names.DB in failing:
        problems.append(("ShardPodsFailing", f"shard pods cannot start: {failing[names.DB]}"))
    # After the pods that cause it: a shard with members Patroni has not mended within the grace.
    grace_seconds = spec.pod_start_grace_seconds
    if no_primary := failing_message(failing_roles, NO_PRIMARY, grace_seconds):
        problems.append((NO_PRIMARY, f"{no_primary}: no write reaches the shard"))
    if no_sync := failing_message(failing_roles, NO_SYNC_STANDBY, grace_seconds):
        problems.append((NO_SYNC_STANDBY, f"{no_sync}: {UNGUARDED}"))
    if stalled := failing_message(failing_roles, STANDBY_NOT_STREAMING, grace_seconds):
        problems.append((STANDBY_NOT_STREAMING, f"{stalled}: {NOT_REJOINED}"))
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
    if not kept.as_asked:
        problems.append(
            (
                "StorageImmutable",
                f"spec.storage cannot change once shards exist; keeping size {kept.size}"
                + (f" and class {kept.storage_class}" if kept.storage_class else ""),
            )
        )
    return problems


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


def progressing(
    snap: Snapshot, phase: Phase, shards: int, ready: int, registered: int, seed_failed: bool, plan: Rolling
) -> ConditionState:
    """Moving toward the spec: the lifecycle's next gate, else a rollout, else complete."""
    if seed_failed:
        return ConditionState("Progressing", False, "SeedFailed", _seed_failure(snap, shards))
    if phase != Phase.AVAILABLE:
        return ConditionState(
            "Progressing", True, phase.value, _progress_message(snap, phase, shards, ready, registered)
        )
    if plan.shards_rolling:
        waiting = "; the cache rolls after them" if plan.cache_held else ""
        order = "; a Job evicts each shard's standbys first, then its primary" if snap.shard_sets else ""
        message = f"{plan.shards_updated}/{shards} shards updated{order}{waiting}"
        return ConditionState("Progressing", True, ROLLING_UPDATE, message)
    if plan.shards_unobserved and snap.statefulset is not None:
        # Its revisions are the last spec's until it reads this one: "all updated" would be a lie.
        generation = snap.statefulset.rollout.generation
        message = f"the StatefulSet's controller has not yet observed its generation {generation}"
        return ConditionState("Progressing", True, STATEFULSET_UPDATED, message)
    if plan.cache_held:
        message = f"shards updated; the cache waits until all {shards} are ready and registered"
        return ConditionState("Progressing", True, ROLLING_UPDATE, message)
    if plan.cache_rolling and snap.cache is not None:
        message = f"cache {snap.cache.rollout.updated}/{snap.spec.cache.replicas} replicas updated"
        return ConditionState("Progressing", True, ROLLING_UPDATE, message)
    return ConditionState("Progressing", False, COMPLETE, f"{shards} shards seeded, registered and cached")


def _progress_message(snap: Snapshot, phase: Phase, shards: int, ready: int, registered: int) -> str:
    if phase == Phase.PROVISIONING:
        return f"{ready}/{shards} shards ready"
    if phase == Phase.SEEDING:
        return f"seeding {shards} shards"
    if phase == Phase.REGISTERING:
        return f"{registered}/{shards} shards registered in discovery"
    ready_cache = snap.cache.ready if snap.cache else 0
    return f"cache {ready_cache}/{snap.spec.cache.replicas} replicas ready"


def waiting(progressing: ConditionState, pods: tuple[StuckPod, ...], uncreated: str = "") -> ConditionState:
    """Pods within their grace keep the ShardDB progressing, and the message says what they wait for.

    A stop that needs a person (a failed seed) stays a stop.
    """
    if not pods and not uncreated:
        return progressing
    message = "; ".join(part for part in (uncreated, stuck_waiting(pods)) if part)
    if progressing.status:
        return replace(progressing, message=capped(f"{progressing.message}; {message}"))
    if progressing.reason == COMPLETE:
        return ConditionState("Progressing", True, "PodsStarting", capped(message))
    return progressing


def newer_waiting(progressing: ConditionState, newer: tuple[str, ...]) -> ConditionState:
    """Once nothing else moves, Progressing says which newer template waits, and how to roll it."""
    if not newer or progressing.status:
        return progressing
    held = f"; a newer pod template waits for the {' and the '.join(newer)}: {APPLY_HINT}"
    return replace(progressing, message=capped(progressing.message + held))


def available_reason(snap: Snapshot, available: bool, serving_ok: bool, phase: Phase) -> str:
    if available:
        return "Ready"
    if snap.cache is not None:
        return "CacheNotReady" if serving_ok else "ShardsUnavailable"
    return phase.value


def available_message(snap: Snapshot, available: bool, ready: int, serving: int, tolerated: int) -> str:
    if available:
        restarting = " (one restarting for a rolling update)" if tolerated and ready < serving else ""
        return f"{serving} shards and the cache are serving{restarting}"
    if snap.cache is None:
        return "the cache has not started yet"
    cache = f"cache {snap.cache.ready}/{snap.spec.cache.replicas} ready"
    return f"{min(ready, serving)}/{serving} serving shards ready; {cache}"


def degraded_message(problems: list[tuple[str, str]]) -> str:
    return capped("; ".join(message for _, message in problems)) if problems else "No problems observed."


def uncreated(pods: tuple[MissingPod, ...], roles: tuple[RoleTrouble, ...], standbys: tuple[RoleTrouble, ...]) -> str:
    """What Progressing says waits to be created or to take its role: shard pods, shards' roles, standbys."""
    parts = (missing_waiting(pods) if pods else "", waiting_message(roles), waiting_message(standbys))
    return "; ".join(part for part in parts if part)
