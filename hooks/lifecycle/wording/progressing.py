"""The words of ``Progressing``: the step the ShardDB is on, what pods and shards wait for within their start
grace, a newer template held back, and what a stopping step waits for on a lost node. Names only, never a
controller's changing words, so a message stays put while it lasts.
"""

from __future__ import annotations

from dataclasses import replace

from ... import names
from ...replication.health import NO_PRIMARY, NO_SYNC_STANDBY, STANDBY_NOT_STREAMING
from ...replication.roles import RoleTrouble
from ...snapshot import Snapshot
from ...trouble.lost import LostPod
from ...trouble.missing import MissingPod
from ...trouble.stuck import CORDONED, STUCK_ORDER, VOLUME_NODE, VOLUME_NODE_CORDONED, StuckPod
from ..decision import COMPLETE, ROLLING_UPDATE, STATEFULSET_UPDATED, ConditionState, Phase
from ..grace import WAITS_FOR
from ..rollout import Rolling
from .lists import NOUNS, capped, listed, noun, seed_failure

APPLY_HINT = f"annotate the ShardDB {names.APPLY_TEMPLATES_ANNOTATION}=<a new value> to roll it"

WAITS_FOR_ITS_NODE = "for its volume's node"

WAITS_FOR_CORDONED_NODE = "for its volume's node, which is cordoned"

WAITS_ON_CORDON = "to be scheduled, with a node cordoned"

WAITS_BY_PLACEMENT = {
    VOLUME_NODE: WAITS_FOR_ITS_NODE,
    VOLUME_NODE_CORDONED: WAITS_FOR_CORDONED_NODE,
    CORDONED: WAITS_ON_CORDON,
}

# What a shard within its grace waits for, by its health's reason.
ROLE_WAITS_FOR = {
    NO_PRIMARY: "for Patroni to elect a primary",
    NO_SYNC_STANDBY: "for a synchronous standby",
    STANDBY_NOT_STREAMING: "for its standbys to stream",
}


def progressing(
    snap: Snapshot, phase: Phase, shards: int, ready: int, registered: int, seed_failed: bool, plan: Rolling
) -> ConditionState:
    """Moving toward the spec: the lifecycle's next gate, else a rollout, else complete."""
    if seed_failed:
        return ConditionState("Progressing", False, "SeedFailed", seed_failure(snap, shards))
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


def uncreated(pods: tuple[MissingPod, ...], roles: tuple[RoleTrouble, ...], standbys: tuple[RoleTrouble, ...]) -> str:
    """What Progressing says waits to be created or to take its role: shard pods, shards' roles, standbys."""
    parts = (missing_waiting(pods) if pods else "", waiting_message(roles), waiting_message(standbys))
    return "; ".join(part for part in parts if part)


def waits_for(pod: StuckPod) -> str:
    """What ``pod`` waits for; for an unschedulable one, the class of the scheduler's message (``StuckPod.placement``).

    The scheduler names no node, and the pod's volume's node is in its PersistentVolume, not in
    the pod. On a drain the cordoned node is the one holding the volume; the others report the conflict.
    """
    return (
        WAITS_BY_PLACEMENT.get(pod.placement, WAITS_FOR[pod.reason])
        if pod.reason == "Unschedulable"
        else WAITS_FOR[pod.reason]
    )


def stuck_waiting(waiting: tuple[StuckPod, ...]) -> str:
    """What the waiting pods wait for, per component and trouble: ``1 shard pod waiting to be scheduled: x-db-2``.

    Names only, never the scheduler's changing words, so the message stays put while they wait.
    """
    groups: dict[tuple[str, str, str], list[str]] = {}
    for pod in waiting:
        groups.setdefault((pod.component, pod.reason, waits_for(pod)), []).append(pod.name)
    components = list(NOUNS)

    def rank(group: tuple[str, str, str]) -> tuple[int, str, int, str]:
        component, reason, phrase = group
        where = components.index(component) if component in components else len(components)
        return where, component, STUCK_ORDER.index(reason), phrase

    parts = []
    for group in sorted(groups, key=rank):
        component, _, phrase = group
        pods = groups[group]
        shown = listed(pods)
        plural = "" if len(pods) == 1 else "s"
        word = noun(component)
        parts.append(f"{len(pods)} {word} pod{plural} waiting {phrase}: {shown}")
    return "; ".join(parts)


def missing_waiting(pods: tuple[MissingPod, ...]) -> str:
    """``1 shard pod waiting to be created: demo-db-2``: the StatefulSet controller tried and will retry."""
    pod_names = [pod.name for pod in pods]
    return f"{len(pod_names)} shard pod{'' if len(pod_names) == 1 else 's'} waiting to be created: {listed(pod_names)}"


def waiting_message(waiting: tuple[RoleTrouble, ...]) -> str:
    """``shard demo-db-1 waiting for Patroni to elect a primary``, per reason; names only, so it stays put."""
    groups: dict[str, list[str]] = {}
    for trouble in waiting:
        shards = groups.setdefault(trouble.reason, [])
        if trouble.name not in shards:  # a shard with two standbys waiting is named once
            shards.append(trouble.name)
    return "; ".join(
        f"shard{'' if len(shards) == 1 else 's'} {listed(shards)} waiting {ROLE_WAITS_FOR.get(reason, reason)}"
        for reason, shards in groups.items()
    )


def blocked_message(pods: tuple[LostPod, ...], component: str) -> str:
    """What a stopping step waits for on a lost node, and what a person may do (empty if nothing)."""
    blocking = [pod for pod in pods if pod.component == component]
    if not blocking:
        return ""
    nodes = sorted({pod.node for pod in blocking})
    shown = listed([pod.name for pod in blocking])
    where = f"node{'' if len(nodes) == 1 else 's'} {', '.join(nodes)}"
    return (
        f"{shown} {'is' if len(blocking) == 1 else 'are'} on {where}, which is lost ({blocking[0].evidence}): "
        f"once the node is known to be gone, taint it `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute` "
        f"or `kubectl delete pod <pod> --grace-period=0 --force`"
    )


def blocked(lost: tuple[LostPod, ...], message: str, component: str) -> str:
    """A stopping step's message, with what blocks it on a lost node and what a person may do."""
    on_lost_node = blocked_message(lost, component)
    return capped(f"{message}; {on_lost_node}") if on_lost_node else message
