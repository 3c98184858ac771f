"""Which pod troubles pass by themselves, and how long they are given to.

A new pod is often Unschedulable for a moment while its volume binds or a node joins,
or waits for a Secret applied beside its ShardDB: that is progress, not damage. Such a
trouble counts only once it has lasted ``spec.podStartGraceSeconds``, timed from the
pod's own timestamps in the request; a trouble that is already the result of retries,
or that no wait can mend, counts at once. Pure: the caller passes the clock reading in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from .stuck import CORDONED, STUCK_ORDER, VOLUME_NODE, VOLUME_NODE_CORDONED, StuckPod
from .words import NOUNS, listed

# Troubles that may pass by themselves, and what a pod with one waits for.
WAITS_FOR = {
    "Unschedulable": "to be scheduled",  # volumes binding, a node joining or losing its not-ready taint
    "CreateContainerConfigError": "for a Secret or ConfigMap",  # applied beside the ShardDB, a moment later
    "CreateContainerError": "for its container to be created",  # the runtime's own hiccups (a name still held)
}
# Troubles reported at once: the kubelet has already retried, or nothing changes without a fix.
AT_ONCE = frozenset({"InvalidImageName", "ImagePullBackOff", "RunContainerError", "CrashLoopBackOff"})


T = TypeVar("T")


@dataclass(frozen=True)
class Split(Generic[T]):
    """Troubles split by their grace at one clock reading: pods, missing pods, shards' roles alike."""

    failing: tuple[T, ...] = ()  # count now: Degraded names them
    waiting: tuple[T, ...] = ()  # within their grace: Progressing says what they wait for
    recheck_at: datetime | None = None  # when the earliest grace still running runs out


def end(since: datetime | None, grace: timedelta) -> datetime | None:
    """When a trouble that began at ``since`` stops being given time; None when it gets none (or no time is known)."""
    if since is None or not grace:
        return None
    try:
        return since + grace
    except OverflowError:  # a time at the end of the calendar is no time anything began
        return None


def split(found: Iterable[tuple[T, datetime | None]], now: datetime | None, grace_seconds: int) -> Split[T]:
    """Each trouble counts once its grace from its start ran out; a start of None (at once, or unknown) counts now.

    The one grace calculation of the hooks: without a clock reading every trouble counts.
    """
    grace = timedelta(seconds=grace_seconds)
    failing: list[T] = []
    waiting: list[T] = []
    ends: list[datetime] = []
    for trouble, since in found:
        until = end(since, grace)
        if now is None or until is None or now >= until:
            failing.append(trouble)
        else:
            waiting.append(trouble)
            ends.append(until)
    return Split(tuple(failing), tuple(waiting), min(ends, default=None))


def triage(pods: tuple[StuckPod, ...], now: datetime | None, grace_seconds: int) -> Split[StuckPod]:
    """Which of ``pods`` count at ``now``: only a trouble that may pass by itself is given the grace."""
    return split(((pod, pod.since if pod.reason in WAITS_FOR else None) for pod in pods), now, grace_seconds)


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


def waiting_message(waiting: tuple[StuckPod, ...]) -> str:
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
        noun = NOUNS.get(component, component or "other")
        parts.append(f"{len(pods)} {noun} pod{plural} waiting {phrase}: {shown}")
    return "; ".join(parts)
