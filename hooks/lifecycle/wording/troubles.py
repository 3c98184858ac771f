"""What pods wait for within their start grace, which the ShardDB asked for and does not have past it, which sit
on a lost node, and what a shard with members waits for or has lacked past it: names only, never a controller's
changing words, so a message stays put while it lasts.
"""

from __future__ import annotations

from ... import names
from ...replication.health import NO_PRIMARY, NO_SYNC_STANDBY, STANDBY_NOT_STREAMING
from ...replication.roles import AT_ONCE, RoleTrouble
from ...trouble.lost import LostPod
from ...trouble.missing import MissingPod
from ...trouble.stuck import CORDONED, STUCK_ORDER, VOLUME_NODE, VOLUME_NODE_CORDONED, StuckPod
from ..grace import WAITS_FOR
from .lists import NOUNS, capped, listed, noun

# --- pods waiting within their grace ---------------------------------------------------------------

WAITS_FOR_ITS_NODE = "for its volume's node"


WAITS_FOR_CORDONED_NODE = "for its volume's node, which is cordoned"


WAITS_ON_CORDON = "to be scheduled, with a node cordoned"


WAITS_BY_PLACEMENT = {
    VOLUME_NODE: WAITS_FOR_ITS_NODE,
    VOLUME_NODE_CORDONED: WAITS_FOR_CORDONED_NODE,
    CORDONED: WAITS_ON_CORDON,
}


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


# --- pods and children missing -----------------------------------------------------------------


def pods_message(name: str, pods: tuple[MissingPod, ...], grace_seconds: int) -> str:
    """``shard pod demo-db-1 does not exist 120 s after the StatefulSet asked for it: read …``."""
    pod_names = [pod.name for pod in pods]
    one = len(pod_names) == 1
    subject = f"shard pod{'' if one else 's'} {listed(pod_names)} {'does' if one else 'do'} not exist"
    owners = list(dict.fromkeys(pod.statefulset or names.db_name(name) for pod in pods))
    several = len(owners) > 1
    return (
        f"{subject} {grace_seconds} s after {'their StatefulSets' if several else 'the StatefulSet'} asked for "
        f"{'it' if one else 'them'}: read `kubectl describe statefulset {' '.join(owners)}` (its FailedCreate events)"
    )


def missing_waiting(pods: tuple[MissingPod, ...]) -> str:
    """``1 shard pod waiting to be created: demo-db-2``: the StatefulSet controller tried and will retry."""
    pod_names = [pod.name for pod in pods]
    return f"{len(pod_names)} shard pod{'' if len(pod_names) == 1 else 's'} waiting to be created: {listed(pod_names)}"


def children_message(name: str, children: tuple[str, ...], grace_seconds: int) -> str:
    """``StatefulSet demo-db does not exist 120 s after the ShardDB was created: read …``."""
    one = len(children) == 1
    return (
        f"{' and '.join(children)} {'does' if one else 'do'} not exist {grace_seconds} s after the ShardDB was "
        f"created: read the ShardDB's events (`kubectl describe sharddb {name}`: SyncError)"
    )


def seed_message(name: str, shards: tuple[int, ...], grace_seconds: int) -> str:
    """``seed Job demo-seed-3 has no pod 120 s after it started: read …``."""
    jobs = [names.seed_job_name(name, count) for count in shards]
    return "; ".join(
        f"seed Job {job} has no pod {grace_seconds} s after it started: "
        f"read `kubectl describe job {job}` (its FailedCreate events)"
        for job in jobs
    )


def cache_message(name: str, refused: str) -> str:
    """``cache pods cannot be created: pods "demo-cache-7c9f4-" is forbidden: …; read …``."""
    return (
        f"cache pods cannot be created: {refused}; read `kubectl describe deployment {names.cache_name(name)}` "
        "(its ReplicaFailure condition) and its ReplicaSet's FailedCreate events"
    )


# --- pods on a lost node ---------------------------------------------------------------------------


def _on_node(pods: list[LostPod]) -> str:
    by_noun: dict[str, list[str]] = {}
    for pod in pods:
        by_noun.setdefault(noun(pod.component), []).append(pod.name)
    return ", ".join(f"{noun} {listed(on)}" for noun, on in by_noun.items())


def lost_message(pods: tuple[LostPod, ...]) -> str:
    """Per lost node, the condition that shows it and the shards and cache pods on it."""
    nodes: dict[str, list[LostPod]] = {}
    for pod in pods:
        nodes.setdefault(pod.node, []).append(pod)
    return "; ".join(
        f"node {node} is lost, as its pods show ({on[0].evidence}): on it {_on_node(on)}; "
        f"read `kubectl describe node {node}`"
        for node, on in nodes.items()
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


# --- shards with members whose roles are not what they must be ------------------------------------------------

# What a shard within its grace waits for, by its health's reason.
ROLE_WAITS_FOR = {
    NO_PRIMARY: "for Patroni to elect a primary",
    NO_SYNC_STANDBY: "for a synchronous standby",
    STANDBY_NOT_STREAMING: "for its standbys to stream",
}


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


def failing_message(failing: tuple[RoleTrouble, ...], reason: str, grace_seconds: int) -> str:
    """The failing shards of one ``reason``: each health message, and how long it has lasted when graced."""
    messages = [trouble.message for trouble in failing if trouble.reason == reason]
    lasted = "" if reason in AT_ONCE else f", for more than {grace_seconds} s"
    return "; ".join(f"{message}{lasted}" for message in messages)


def blocked(lost: tuple[LostPod, ...], message: str, component: str) -> str:
    """A stopping step's message, with what blocks it on a lost node and what a person may do."""
    on_lost_node = blocked_message(lost, component)
    return capped(f"{message}; {on_lost_node}") if on_lost_node else message
