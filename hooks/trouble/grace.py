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

from .stuck import StuckPod

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
