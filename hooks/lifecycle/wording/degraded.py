"""The words of ``Degraded``: each reason the ShardDB is worse than asked for, most pressing first, and the
message that names what is missing, failing or lost (``tests/docs/test_runbooks.py`` reads the reasons here).
Names only, never a controller's changing words, so a message stays put while it lasts.
"""

from __future__ import annotations

from ... import clock, names
from ...backup import schedule
from ...replication.health import NO_PRIMARY, NO_SYNC_STANDBY, STANDBY_NOT_STREAMING, TWO_PRIMARIES
from ...replication.roles import AT_ONCE, RoleTrouble
from ...replication.shape import Refusal
from ...snapshot import Snapshot
from ...trouble.lost import LostPod
from ...trouble.missing import MissingPod
from ...trouble.stuck import StuckPod
from ..grace import Missing
from ..kept import Kept
from .lists import capped, listed, noun, seed_failure

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


# The last scheduled base backup ended without success, and none succeeded since: the shards serve, but
# a restore reaches back only to an older base backup (before the first, to nothing).
BASE_BACKUP_FAILED = "BaseBackupFailed"
BACKUP_SCHEDULE_REFUSED = "BackupScheduleRefused"


def kept_schedule(snap: Snapshot) -> str | None:
    """The base backups' CronJob's schedule (``schedule.kept``), from what the snapshot asks and observes."""
    if snap.spec.backup is None:
        return None
    return schedule.kept(snap.spec.backup.schedule, snap.base_backups.schedule if snap.base_backups else None)


def schedule_refused(snap: Snapshot) -> list[tuple[str, str]]:
    """``spec.backup.schedule`` that the API server would refuse for a CronJob: the CronJob keeps what it has."""
    problems: list[tuple[str, str]] = []
    backup = snap.spec.backup
    said = schedule.problem(backup.schedule) if backup is not None else None
    if backup is None or said is None:
        return problems
    kept = kept_schedule(snap)
    keeping = f"the CronJob keeps {kept!r}" if kept is not None else "no base backups' CronJob is made until it is"
    message = f"spec.backup.schedule {backup.schedule!r} is refused for a CronJob ({said}); {keeping}"
    problems.append((BACKUP_SCHEDULE_REFUSED, message))
    return problems


def base_backup_failed(snap: Snapshot) -> list[tuple[str, str]]:
    """The base backups' last scheduled run failed: last of all, as nothing serves worse for it."""
    problems: list[tuple[str, str]] = []
    runs = snap.base_backups
    if snap.spec.backup is None or runs is None or not runs.failed or runs.scheduled is None:
        return problems
    selector = f"{names.INSTANCE_LABEL}={snap.name},{names.COMPONENT_LABEL}={names.BACKUP}"
    since = (
        f"the last that succeeded ended {clock.rfc3339(runs.succeeded)}"
        if runs.succeeded is not None
        else "none has succeeded yet"
    )
    message = (
        f"the base backup run of CronJob {names.backup_name(snap.name)} scheduled "
        f"{clock.rfc3339(runs.scheduled)} failed ({since}): `kubectl logs -l {selector} --tail=-1` names each "
        "shard whose backup failed, and the engine's own messages are in the log of the member that took it"
    )
    problems.append((BASE_BACKUP_FAILED, message))
    return problems


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
        problems.append(("SeedFailed", f"{seed_failure(snap, shards)}; inspect its logs, then delete it to retry"))
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


def degraded_message(problems: list[tuple[str, str]]) -> str:
    return capped("; ".join(message for _, message in problems)) if problems else "No problems observed."


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


def failing_message(failing: tuple[RoleTrouble, ...], reason: str, grace_seconds: int) -> str:
    """The failing shards of one ``reason``: each health message, and how long it has lasted when graced."""
    messages = [trouble.message for trouble in failing if trouble.reason == reason]
    lasted = "" if reason in AT_ONCE else f", for more than {grace_seconds} s"
    return "; ".join(f"{message}{lasted}" for message in messages)
