"""Why a pod cannot start on its own, read from its status (no node, an image, a Secret, a crash loop), in
words that stay put while nothing changes; ``grace`` says which of them may pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .. import clock, names
from ..hook_request import ContainerStatus, Pod

DETAIL_MAX = 120


def short(text: str) -> str:
    """One line, at most ``DETAIL_MAX`` characters, so a long message from a controller cannot swamp the status."""
    line = " ".join(text.split())
    return line if len(line) <= DETAIL_MAX else line[: DETAIL_MAX - 1] + "…"


@dataclass(frozen=True)
class StuckPod:
    """A pod that cannot start on its own: a crash loop, an image that cannot be pulled, no node.

    ``detail`` holds only facts that stay put while nothing changes (the image, the exit
    code, the missing Secret), never the kubelet's back-off timer, so status stays still.
    ``since`` is when the pod was placed or found no place (its ``PodScheduled`` condition's
    last transition), else when it was created: where a passing trouble's grace is timed from.
    """

    name: str
    component: str
    reason: str
    detail: str
    ordinal: int = -1  # a shard pod's ordinal, so db-10 sorts after db-9; -1 for other pods
    since: datetime | None = None  # None (no readable time): no grace, it counts at once
    placement: str = ""  # for an unschedulable pod, what the scheduler's whole message says of its nodes

    def sort_key(self) -> tuple[int, int, str]:
        """Furthest from running first, then shards by ordinal."""
        return (STUCK_ORDER.index(self.reason), self.ordinal, self.name)


# Why a pod cannot start, furthest from running first: the order Degraded reports them in.
STUCK_ORDER = (
    "Unschedulable",
    "InvalidImageName",
    "ImagePullBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "CrashLoopBackOff",
)
IMAGE_REASONS = frozenset({"InvalidImageName", "ImagePullBackOff"})
# The kubelet flips between these on every retry; one name keeps the status still.
SAME_AS = {"ErrImagePull": "ImagePullBackOff"}
CRASHES_FOR_A_LOOP = 2  # a running container that crashed this often and is not ready is in a loop


# What a scheduler's message says of the nodes (Kubernetes 1.34 words, and the older ones for a volume).
VOLUME_NODE_WORDS = ("didn't match PersistentVolume's node affinity", "volume node affinity conflict")
CORDONED_WORDS = "node(s) were unschedulable"
VOLUME_NODE = "volume-node"  # the pod's volume is bound to one node, and the pod cannot go there
VOLUME_NODE_CORDONED = "volume-node-cordoned"  # … and a node is cordoned: on a drain, that one
CORDONED = "cordoned"  # a node is cordoned, no volume bound elsewhere


def placement(message: str) -> str:
    """The class of the scheduler's message for an unschedulable pod; '' when it says neither."""
    volume = any(words in message for words in VOLUME_NODE_WORDS)
    cordoned = CORDONED_WORDS in message
    if volume:
        return VOLUME_NODE_CORDONED if cordoned else VOLUME_NODE
    return CORDONED if cordoned else ""


def stuck(pod: Pod, ordinal: int | None) -> StuckPod | None:
    """Why ``pod`` cannot start, if it cannot; a pod still pulling or starting is not stuck."""
    component = pod.metadata.labels.get(names.COMPONENT_LABEL, "")
    at = -1 if ordinal is None else ordinal
    scheduled = next((c for c in pod.status.conditions if c.type == "PodScheduled"), None)
    since = clock.parse(scheduled.last_transition_time if scheduled else None) or clock.parse(
        pod.metadata.creation_timestamp
    )
    found = []
    if scheduled is not None and scheduled.status == "False" and scheduled.reason == "Unschedulable":
        said = scheduled.message
        found.append(StuckPod(pod.metadata.name, component, "Unschedulable", short(said), at, since, placement(said)))
    for status in (*pod.status.init_container_statuses, *pod.status.container_statuses):
        reason, detail = _container_problem(status)
        if reason:
            found.append(StuckPod(pod.metadata.name, component, reason, detail, at, since))
    return min(found, key=StuckPod.sort_key, default=None)


def _container_problem(status: ContainerStatus) -> tuple[str, str]:
    """A container's reason for not running and a stable detail, or two empty strings."""
    waiting = status.state.waiting
    reason = SAME_AS.get(waiting.reason, waiting.reason) if waiting is not None else ""
    if reason in IMAGE_REASONS:
        return reason, short(status.image or (waiting.message if waiting else ""))
    if reason in ("CreateContainerConfigError", "CreateContainerError", "RunContainerError"):
        return reason, short(waiting.message if waiting else "")
    # Between back-offs a crashing container lies terminated or briefly runs: still a crash loop.
    # Running again after a single crash (a shard replaying its log, say) is a recovery, not a loop.
    crashed = status.state.terminated or status.last_state.terminated
    failed = crashed is not None and crashed.exit_code != 0 and not status.ready
    repeated = status.restart_count >= (1 if status.state.terminated else CRASHES_FOR_A_LOOP)
    crashing = reason == "CrashLoopBackOff" or (failed and repeated)
    if crashing:
        exited = f"container {status.name} exited {crashed.exit_code}" if crashed is not None else ""
        cause = f" ({crashed.reason})" if crashed is not None and crashed.reason not in ("", "Error") else ""
        # The container's own last word, when it wrote one (the same each crash, so the status holds still).
        said = f": {crashed.message}" if crashed is not None and crashed.message.strip() else ""
        return "CrashLoopBackOff", short(exited + cause + said)
    return "", ""
