"""Fault tooling: the campaign's invariants, checked over the complete record of what the API server stored.

Pure functions over ``history.Change`` lists (etcd revision order): the state of
every object is replayed change by change, and each rule is judged at the
revision where it could break. A rule names the ShardDB and the revision, so a
violation can be found in the audit log and the components' logs. One rule is
judged over the audit log instead (``unmarked_deletions``): who deleted a pod is
in no stored change.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from testbed.faults.history import Change
from testbed.real.audit import Write

SEED_JOB = re.compile(r"^(?P<parent>.+)-seed-(?P<shards>\d+)$")
# A ShardDB's pods: <parent>-db-<ordinal>, <parent>-cache-<hash>-<suffix>, <parent>-seed-<shards>-<suffix>.
POD = re.compile(r"^(?P<parent>.+?)-(?:db-\d+|cache-[^-]+-[^-]+|seed-\d+-[^-]+)$")
NODE_USERS = "system:node:"
TRAIL = 12  # the writes on a pod's name a violation quotes, the last ones


@dataclass(frozen=True)
class Violation:
    rule: str
    sharddb: str  # namespace/name
    revision: int
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.sharddb} at revision {self.revision}: {self.detail}"


@dataclass
class _World:
    """Every object's latest facts at the revision being replayed."""

    objects: dict[tuple[str, str, str], Change] = field(default_factory=dict)
    seeded: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))  # most shards ever seeded
    most_shards: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))

    def get(self, kind: str, namespace: str, name: str) -> Change | None:
        return self.objects.get((kind, namespace, name))

    def of(self, kind: str, namespace: str, instance: str, component: str | None = None) -> list[Change]:
        return [
            c
            for (k, ns, _), c in self.objects.items()
            if k == kind
            and ns == namespace
            and c.facts.get("instance") == instance
            and (component is None or c.facts.get("component") == component)
        ]

    def registered(self, namespace: str, service: str) -> int:
        return sum(
            c.facts["ready"]
            for (k, ns, _), c in self.objects.items()
            if k == "EndpointSlice" and ns == namespace and c.facts.get("service") == service
        )

    def stopping(self, namespace: str, name: str) -> bool:
        """The ShardDB is being deleted or hibernated (or already gone): its teardown order applies."""
        parent = self.get("ShardDB", namespace, name)
        return parent is None or parent.type == "DELETED" or parent.facts["deleting"] or parent.facts["hibernated"]


def check(changes: Iterable[Change]) -> list[Violation]:
    """Every violation of the lifecycle's rules in ``changes`` (revision order)."""
    world = _World()
    found: list[Violation] = []
    seed_uids: dict[tuple[str, str], set[str]] = defaultdict(set)
    for change in changes:
        before = world.get(*change.key)
        if change.kind == "Job":
            found += _seed_once(change, seed_uids)
        elif change.kind == "Deployment" and change.facts.get("component") == "cache":
            found += _cache_gates(change, before, world)
        elif change.kind == "Pod" and change.facts.get("component") == "db":
            found += _shards_after_cache(change, before, world)
        elif change.kind == "PersistentVolumeClaim" and (change.type == "DELETED" or change.facts["deleting"]):
            detail = f"claim {change.name} deleted"
            found.append(Violation("claims-kept", _claim_owner(change), change.revision, detail))
        elif change.kind == "StatefulSet":
            found += _shards_never_lowered(change, world)
        _apply(change, world)
    return found


def _apply(change: Change, world: _World) -> None:
    if change.type == "DELETED":
        world.objects.pop(change.key, None)
    else:
        world.objects[change.key] = change
    if change.kind == "Job" and change.facts.get("complete"):
        match = SEED_JOB.match(change.name)
        if match:
            key = (change.namespace, match["parent"])
            world.seeded[key] = max(world.seeded[key], int(match["shards"]))


def _seed_once(change: Change, uids: dict[tuple[str, str], set[str]]) -> list[Violation]:
    match = SEED_JOB.match(change.name)
    if match is None or change.type != "ADDED":
        return []
    made = uids[(change.namespace, change.name)]
    made.add(change.uid)
    if len(made) < 2:
        return []
    detail = f"seed Job {change.name} created {len(made)} times for the same shard count"
    return [Violation("seed-once", f"{change.namespace}/{match['parent']}", change.revision, detail)]


def _cache_gates(change: Change, before: Change | None, world: _World) -> list[Violation]:
    """The cache appears (or scales up from none) only once every shard is ready, seeded and registered."""
    if change.type == "DELETED" or not change.facts.get("replicas"):
        return []
    if before is not None and before.facts.get("replicas"):
        return []  # it was running already: a resize is no new start
    parent = change.facts.get("instance") or change.name.removesuffix("-cache")
    shards = world.get("StatefulSet", change.namespace, f"{parent}-db")
    wanted = (shards.facts.get("replicas") or 0) if shards is not None else 0
    problems = []
    if shards is None or wanted == 0:
        problems.append("no shards running")
    else:
        if shards.facts["ready"] < wanted:
            problems.append(f"{shards.facts['ready']} of {wanted} shards ready")
        if world.seeded[(change.namespace, parent)] < wanted:
            problems.append(f"seeded for {world.seeded[(change.namespace, parent)]} of {wanted} shards")
        registered = world.registered(change.namespace, f"{parent}-db")
        if registered < wanted:
            problems.append(f"{registered} of {wanted} shards registered in discovery")
    if not problems:
        return []
    detail = "cache started with " + ", ".join(problems)
    return [Violation("cache-gates", f"{change.namespace}/{parent}", change.revision, detail)]


def _shards_after_cache(change: Change, before: Change | None, world: _World) -> list[Violation]:
    """While a ShardDB stops, no shard pod is marked for deletion while a cache pod of it exists."""
    marked = change.type == "DELETED" or change.facts["deleting"]
    if not marked or (before is not None and (before.facts["deleting"])):
        return []
    parent = change.facts.get("instance") or ""
    if not world.stopping(change.namespace, parent):
        return []  # a rollout or a node's restart replaces shard pods beside a running cache
    caches = [c.name for c in world.of("Pod", change.namespace, parent, "cache")]
    if not caches:
        return []
    detail = f"shard pod {change.name} marked for deletion while cache pods {sorted(caches)} existed"
    return [Violation("shards-after-cache", f"{change.namespace}/{parent}", change.revision, detail)]


def _shards_never_lowered(change: Change, world: _World) -> list[Violation]:
    """A StatefulSet's replicas only grow, or go to zero while its ShardDB stops."""
    replicas = change.facts.get("replicas") or 0
    key = change.key
    most = world.most_shards[key]
    world.most_shards[key] = max(most, replicas)
    if change.type == "DELETED" or replicas == 0 or replicas >= most:
        return []
    parent = change.facts.get("instance") or change.name.removesuffix("-db")
    detail = f"{change.name} lowered from {most} to {replicas} shards"
    return [Violation("shards-never-lowered", f"{change.namespace}/{parent}", change.revision, detail)]


def _claim_owner(change: Change) -> str:
    # data-<parent>-db-<ordinal>
    name = change.name.removeprefix("data-")
    return f"{change.namespace}/{name.rsplit('-db-', 1)[0]}"


def degraded_after(changes: Iterable[Change], since: float) -> list[Violation]:
    """Every ShardDB that said Degraded after ``since`` (wall clock): once recovered from a fault, none may."""
    return [
        Violation("never-degraded-after-recovery", f"{c.namespace}/{c.name}", c.revision, "Degraded=True")
        for c in changes
        if c.kind == "ShardDB" and c.type != "DELETED" and c.at >= since and c.facts.get("degraded")
    ]


def longest_unavailable(changes: Iterable[Change], planned: list[tuple[float, float]]) -> tuple[float, str]:
    """The longest time any ShardDB, once Available, was not, outside ``planned`` windows; and which one.

    Counted from the first change that says not Available to the next that says Available; a
    ShardDB being deleted is no longer counted.
    """
    down_since: dict[tuple[str, str], float] = {}
    seen_up: set[tuple[str, str]] = set()
    longest, who = 0.0, ""
    for c in changes:
        if c.kind != "ShardDB":
            continue
        key = (c.namespace, c.name)
        if c.type == "DELETED" or c.facts["deleting"]:
            down_since.pop(key, None)
            continue
        if c.facts["available"]:
            seen_up.add(key)
            if key in down_since:
                span = _unplanned(down_since.pop(key), c.at, planned)
                if span > longest:
                    longest, who = span, f"{c.namespace}/{c.name}"
        elif key in seen_up and key not in down_since:
            down_since[key] = c.at
    return longest, who


def _unplanned(start: float, end: float, planned: list[tuple[float, float]]) -> float:
    span = end - start
    for first, last in planned:
        span -= max(0.0, min(end, last) - max(start, first))
    return max(0.0, span)


def unmarked_deletions(writes: Iterable[Write]) -> list[Violation]:
    """Every pod a node deleted that nobody else had marked for deletion first; ``writes`` in the audit log's order.

    A kubelet deletes a pod for good only after someone else's DELETE (or an eviction, or
    its namespace's deletion) set that pod's ``deletionTimestamp``: its own DELETE is the
    last word on a pod that has drained. A pod that took the name of one that went is
    another pod. The log says which pod a DELETE took (its uid) where the deletion's answer
    is logged; a marking that does not (an eviction) counts for the pod of that name since
    its last create. The log must start before the pods it judges were made.

    The log is in the order answers went out. A marking DELETE stores the mark, then
    finishes the deletion; a node that saw the mark may finish first, and its DELETE is
    then logged before the marking's. So a node's deletion is judged at the end of the
    log: it was marked if another's marking of that pod came in before it was answered.
    """
    marked_uids: set[str] = set()
    marked: dict[tuple[str, str], bool] = {}  # (namespace, name) -> its latest incarnation is marked
    swept: set[str] = set()  # namespaces whose pods were all marked (a namespace's deletion)
    suspects: list[Write] = []  # nodes' deletions with no marking logged before them
    said: dict[tuple[str, str], list[str]] = defaultdict(list)  # every write on a pod's name, answered or not

    def clear(marking: Write, name: str | None) -> None:
        """Suspects this marking came in before: of its pod (its uid, where both say it), or all its namespace's."""

        def covers(s: Write) -> bool:
            same = s.namespace == marking.namespace and (name is None or s.name == name)
            incarnation = not (marking.uid and s.uid) or s.uid == marking.uid
            return same and incarnation and marking.began <= s.at

        suspects[:] = [s for s in suspects if not covers(s)]

    for write in writes:
        if write.resource == "pods":
            said[(write.namespace, write.name)].append(f"{write.at.time().isoformat()} {write}")
        by_node = write.user.startswith(NODE_USERS)
        # A server error leaves the outcome unknown (etcd may have stored it before it went): another's
        # marking answered so may have taken, and is counted; a node's deletion answered so is not judged.
        maybe = write.code >= 500 and not by_node
        if write.resource != "pods" or not (200 <= write.code < 300 or maybe):
            continue
        key = (write.namespace, write.name)
        if write.verb == "create" and not write.subresource:
            marked[key] = False
        elif write.verb == "create" and write.subresource == "eviction":
            marked[key] = True
            clear(write, write.name)
        elif write.verb == "deletecollection" and not by_node:
            swept.add(write.namespace)
            clear(write, None)
        elif write.verb == "delete" and not write.subresource and not by_node:
            marked[key] = True
            if write.uid:
                marked_uids.add(write.uid)
            clear(write, write.name)
        elif (
            write.verb == "delete"
            and not write.subresource
            and not (write.uid in marked_uids or marked.get(key, False) or write.namespace in swept)
        ):
            suspects.append(write)
    found: list[Violation] = []
    for write in suspects:
        key = (write.namespace, write.name)
        match = POD.match(write.name)
        parent = match["parent"] if match else write.name
        pod = f"pod {write.name}" + (f" (uid {write.uid})" if write.uid else "")
        detail = (
            f"{pod} deleted by {write.user} at {write.at.isoformat()}, never marked for deletion by anyone else; "
            f"the writes on its name: {'; '.join(said[key][-TRAIL:])}"
        )
        found.append(Violation("nodes-delete-only-marked-pods", f"{write.namespace}/{parent}", 0, detail))
    return found
