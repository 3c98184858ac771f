"""Hypothesis strategies for observed worlds, as Metacontroller would send them.

Each generated world is a whole sync/finalize request in the shapes the API
server returns (see ``testbed/models/world.py``), any mix of present, absent and half-ready
children, with the ground truth it was built from kept beside it, so invariants
are checked against what was generated rather than against a re-reading of it.

Left to chance, a world whose shards are all ready, seeded and registered with no
cache yet almost never comes up, and the rules guarded by those gates would hold
vacuously. So half the worlds are syncs, and two in three of those follow a
``Plan``: one small shard count everywhere, and every gate of the cache open
or exactly one of them just closed. The rest, teardowns included, stay
free-form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from hypothesis import strategies as st

from hooks.clock import rfc3339
from testbed.models.world import CREATED, FAILURES, failed_status, sharddb

from .hook import moment

Obj = dict[str, Any]

NAMES = st.from_regex(r"[a-z]([a-z0-9-]{0,14}[a-z0-9])?", fullmatch=True)
NAMESPACES = st.sampled_from(["default", "team-a", "kube-db"])
SMALL = st.integers(min_value=0, max_value=8)
# Pods of a component: none at all in about half the worlds (a teardown that is done), else up to 8.
POD_COUNTS = st.one_of(st.just(0), SMALL)
# Mostly counts a world can make ready; now and then the maximum, which never is here.
SHARD_COUNTS = st.sampled_from([1, 2, 3, 4, 5, 6, 1024])
SEED_NOTE_JUNK = st.sampled_from(["", "x", "-2", "1e3"])

GATES = ("ready", "seeded", "registered")  # what the cache waits for, in the lifecycle's order

# The clock reading every generated world is answered at: two hours after its objects were created.
NOW = "2026-01-01T02:00:00Z"
DEFAULT_GRACE = 120
# Troubles that may pass by themselves (docs/api/status.md, Pods that wait to start): they wait for the grace.
PASSING = frozenset({"Unschedulable", "CreateContainerConfigError"})
MEMORIES = ("status", "annotation", "job")  # where a finished seed is remembered


@dataclass(frozen=True)
class Plan:
    """An aligned world: ``shards`` everywhere; the ``closed`` gates are just short of open."""

    shards: int
    closed: frozenset[str]
    memory: str  # where the seed is remembered when the "seeded" gate is open

    def open(self, gate: str) -> bool:
        return gate not in self.closed


@st.composite
def plans(draw: st.DrawFn) -> Plan | None:
    """Two syncs in three: every gate of the cache open, or exactly one closed (one step from starting it)."""
    if draw(st.integers(0, 2)) == 0:
        return None
    closed = draw(st.sampled_from([frozenset(), *(frozenset({gate}) for gate in GATES)]))
    return Plan(shards=draw(st.integers(1, 6)), closed=closed, memory=draw(st.sampled_from(MEMORIES)))


@dataclass
class Truth:
    """What the generated world really holds, in the terms DESIGN.md's rules speak."""

    name: str
    finalizing: bool  # effective: the finalize hook, or a request marked finalizing
    spec_shards: int
    cache_replicas: int
    sts_replicas: int | None  # None: no StatefulSet observed
    sts_ready: int = 0
    seeded: int = 0  # largest shard count any memory says was seeded
    registered: set[int] = field(default_factory=set)
    cache_observed: bool = False
    # Observed child scaled to zero and reporting no replicas; None: not observed.
    cache_at_zero: bool | None = None
    sts_at_zero: bool | None = None
    cache_pods: int = 0  # cache pods that exist and are not finished, or are Terminating
    shard_pods: int = 0
    jobs: set[int] = field(default_factory=set)  # shard counts of observed seed Jobs
    # Pods (live, not Terminating) that cannot start, by component: db, cache, seed.
    failing: dict[str, set[str]] = field(default_factory=dict)
    # Pods (live, not Terminating) whose passing trouble is within its grace, by component: seconds left.
    waiting: dict[str, dict[str, int]] = field(default_factory=dict)

    def grace_left(self) -> int | None:
        """Seconds until the first waiting pod counts; None when none waits."""
        return min((left for pods in self.waiting.values() for left in pods.values()), default=None)


@dataclass
class Observed:
    request: Obj
    finalize: bool  # which hook Metacontroller calls
    truth: Truth


def _meta(world: Obj, name: str, labels: Obj | None = None, **extra: Any) -> Obj:
    parent = world["parent"]
    namespace = parent["metadata"]["namespace"]
    return {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "resourceVersion": "100",
        "generation": 1,
        "creationTimestamp": CREATED,
        "labels": labels or {},
        "ownerReferences": [
            {
                "apiVersion": parent["apiVersion"],
                "kind": "ShardDB",
                "name": parent["metadata"]["name"],
                "uid": parent["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        **extra,
    }


def _labels(name: str, component: str) -> Obj:
    return {
        "app.kubernetes.io/name": "sharddb",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "sharddb",
        "app.kubernetes.io/managed-by": "metacontroller",
    }


@st.composite
def specs(draw: st.DrawFn) -> Obj:
    """ShardDB specs the CRD admits, small enough to stay fast, defaults sometimes spelled out."""
    spec: Obj = {
        "shards": draw(SHARD_COUNTS),
        "dbImage": draw(st.sampled_from(["postgres:16", "postgres:17.1", "registry.local/pg@sha256:" + "a" * 64])),
        "cache": {"image": draw(st.sampled_from(["redis:7", "valkey/valkey:8"]))},
    }
    if draw(st.booleans()):
        spec["cache"]["replicas"] = draw(st.integers(0, 4))
    if draw(st.booleans()):
        spec["cache"]["flushGracePeriodSeconds"] = draw(st.integers(1, 86400))
    if draw(st.booleans()):
        spec["cache"]["flushCommand"] = draw(st.lists(st.sampled_from(["sh", "-c", "redis-cli SAVE"]), min_size=1))
    if draw(st.booleans()):
        spec["storage"] = {"size": draw(st.sampled_from(["1Gi", "10Gi", "500Mi"]))}
        if draw(st.booleans()):
            spec["storage"]["storageClassName"] = draw(st.sampled_from(["standard", "fast-ssd"]))
    if draw(st.booleans()):
        spec["seedCommand"] = ["sh", "-c", "echo seed"]
    if draw(st.booleans()):
        spec["drainCommand"] = ["sh", "-c", "echo drain"]
    if draw(st.booleans()):
        spec["drainGracePeriodSeconds"] = draw(st.integers(1, 86400))
    if draw(st.booleans()):
        spec["podStartGraceSeconds"] = draw(st.sampled_from([0, 1, 5, DEFAULT_GRACE, 3600]))
    return spec


def _statefulset(world: Obj, name: str, replicas: int, status_replicas: int, ready: int, annotation: str | None) -> Obj:
    db = f"{name}-db"
    annotations = {} if annotation is None else {"mygroup.example.com/seeded-shards": annotation}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(world, db, _labels(name, "db"), annotations=annotations),
        "spec": {
            "replicas": replicas,
            "serviceName": db,
            "selector": {"matchLabels": _labels(name, "db")},
            "template": {"metadata": {"labels": _labels(name, "db")}, "spec": {"containers": [{"name": "db"}]}},
            "volumeClaimTemplates": [
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
        },
        "status": {"replicas": status_replicas, "readyReplicas": ready, "availableReplicas": ready},
    }


def _job(world: Obj, name: str, shards: int, outcome: str) -> Obj:
    conditions = {
        "active": [],
        "complete": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}],
        "failed": [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}],
    }[outcome]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(world, f"{name}-seed-{shards}", _labels(name, "seed")),
        "spec": {"backoffLimit": 6, "template": {"spec": {"restartPolicy": "Never"}}},
        "status": {
            "active": 1 if outcome == "active" else 0,
            "succeeded": 1 if outcome == "complete" else 0,
            "failed": 7 if outcome == "failed" else 0,
            "conditions": conditions,
        },
    }


def _deployment(world: Obj, name: str, replicas: int, status_replicas: int, ready: int, stuck: bool) -> Obj:
    conditions = [{"type": "Available", "status": "True" if ready >= replicas else "False"}]
    if stuck:
        conditions.append({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(world, f"{name}-cache", _labels(name, "cache")),
        "spec": {"replicas": replicas, "selector": {"matchLabels": _labels(name, "cache")}},
        "status": {"replicas": status_replicas, "readyReplicas": ready, "conditions": conditions},
    }


def _service(world: Obj, name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(world, f"{name}-db", _labels(name, "db")),
        "spec": {"clusterIP": "None", "clusterIPs": ["None"], "type": "ClusterIP"},
        "status": {"loadBalancer": {}},
    }


def _pod(
    world: Obj,
    name: str,
    pod: str,
    component: str,
    phase: str,
    terminating: bool,
    instance: str,
    failure: str | None = None,
    since: Since | None = None,
) -> Obj:
    extra = {"deletionTimestamp": "2026-01-02T00:00:10Z"} if terminating else {}
    labels = {**_labels(name, component), "app.kubernetes.io/instance": instance}
    status: Obj = {"phase": phase, "conditions": [{"type": "Ready", "status": "True"}]}
    meta = _meta(world, pod, labels, **extra)
    if failure is not None:
        when = since or Since("scheduled", 0)
        at = rfc3339(moment(NOW) - timedelta(seconds=when.age))
        status = {**failed_status(failure, component, "registry.invalid/nope:1", at), "phase": phase}
        if when.source != "scheduled":  # no PodScheduled time: the creation time, readable or not, is all
            for condition in status["conditions"]:
                condition.pop("lastTransitionTime", None)
            meta["creationTimestamp"] = at if when.source == "created" else "yesterday"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": component, "image": "img"}]},
        "status": status,
    }


@dataclass(frozen=True)
class Since:
    """Where a pod's trouble is timed from, and how many seconds before ``NOW`` it began."""

    source: str  # "scheduled" (PodScheduled's last transition), "created" (creationTimestamp), "unreadable"
    age: int  # negative: a node's clock ahead of ours

    def left(self, failure: str, grace: int) -> int | None:
        """Seconds of grace left at ``NOW``; None when the trouble counts already."""
        if failure not in PASSING or self.source == "unreadable" or grace == 0 or self.age >= grace:
            return None
        return grace - self.age


@st.composite
def sinces(draw: st.DrawFn, grace: int) -> Since:
    """Stuck for long, at the edges of the grace (just placed, a second either side of it), or within it."""
    edges = st.sampled_from([0, 1, grace - 1, grace, grace + 1, -5])
    age = draw(st.one_of(st.just(7200), edges, st.integers(0, grace + 1)))
    return Since(draw(st.sampled_from(["scheduled", "scheduled", "scheduled", "created", "unreadable"])), age)


def _endpoint(ordinal: int, pod: str, ready: bool | None) -> Obj:
    conditions = {} if ready is None else {"ready": ready, "serving": ready, "terminating": False}
    return {
        "addresses": [f"10.1.0.{ordinal + 1}"],
        "conditions": conditions,
        "hostname": pod,
        "targetRef": {"kind": "Pod", "name": pod, "namespace": "default"},
    }


def _slice(world: Obj, service: str, suffix: str, endpoints: list[Obj]) -> Obj:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": _meta(world, f"{service}-{suffix}", {"kubernetes.io/service-name": service}),
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "db", "port": 5432, "protocol": "TCP"}],
    }


def _prior_status(draw: st.DrawFn) -> tuple[Obj | None, int]:
    """The parent's status: absent, empty, stale, or partly unreadable; and the seed count it remembers."""
    kind = draw(st.sampled_from(["absent", "empty", "stale", "garbage"]))
    if kind == "absent":
        return None, 0
    if kind == "empty":
        return {}, 0
    condition_types = st.sampled_from(["Available", "Progressing", "Degraded", "Other"])
    if kind == "stale":
        seeded = draw(st.integers(0, 8))
        conditions = draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "type": condition_types,
                        "status": st.sampled_from(["True", "False", "Unknown"]),
                        "reason": st.sampled_from(["Ready", "Provisioning"]),
                        "message": st.just("earlier"),
                        "lastTransitionTime": st.sampled_from(["2025-01-01T00:00:00Z", "2025-06-01T12:00:00Z"]),
                    }
                ),
                max_size=4,
                unique_by=lambda c: c["type"],
            )
        )
        status: Obj = {"phase": draw(st.sampled_from(["Available", "Seeding"])), "conditions": conditions}
        if seeded or draw(st.booleans()):
            status["seededShards"] = seeded
        return status, seeded
    junk = st.one_of(
        st.none(),
        st.booleans(),
        st.text(max_size=3),
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(-5, -1),
    )
    status = {"seededShards": draw(junk), "conditions": draw(st.one_of(junk, st.lists(junk, max_size=3)))}
    return status, 0


def _planned_status(draw: st.DrawFn, status: Obj | None, seeded: int, plan: Plan) -> tuple[Obj | None, int]:
    """The parent's status remembers the seed only where the plan says so."""
    if plan.open("seeded") and plan.memory == "status":
        seeded = draw(st.integers(plan.shards, 8))
        return {**(status or {}), "seededShards": seeded}, seeded
    if seeded >= plan.shards and status is not None:
        seeded = draw(st.integers(0, plan.shards - 1))
        return {**status, "seededShards": seeded}, seeded
    return status, seeded


def _seed_note(draw: st.DrawFn, plan: Plan | None) -> str | None:
    """The StatefulSet's seed annotation: any count or junk; under a plan, a count only where it says."""
    if plan is None:
        return draw(st.one_of(st.none(), st.integers(0, 8).map(str), SEED_NOTE_JUNK))
    if plan.open("seeded") and plan.memory == "annotation":
        return str(draw(st.integers(plan.shards, 8)))
    return draw(st.one_of(st.none(), st.integers(0, plan.shards - 1).map(str), SEED_NOTE_JUNK))


def _seed_jobs(draw: st.DrawFn, plan: Plan | None) -> dict[int, str]:
    """Seed Jobs by shard count and outcome; under a plan, a complete one covers the shards only where it says."""
    jobs = draw(st.dictionaries(st.integers(1, 9), st.sampled_from(["active", "complete", "failed"]), max_size=3))
    if plan is None:
        return jobs
    if plan.open("seeded") and plan.memory == "job":
        jobs[draw(st.integers(plan.shards, 9))] = "complete"
    elif not plan.open("seeded"):
        jobs = {n: "failed" if outcome == "complete" and n >= plan.shards else outcome for n, outcome in jobs.items()}
        if draw(st.booleans()):  # nothing in the way of a new seed: only finished seeds of smaller counts
            jobs = {n: outcome for n, outcome in jobs.items() if n < plan.shards and outcome != "active"}
    return jobs


def _endpoint_conditions(draw: st.DrawFn, plan: Plan | None) -> dict[int, bool | None]:
    """Endpoint readiness by ordinal (unset counts as ready); under a plan, every shard registered or one not."""
    conditions = st.sampled_from([True, None, False])
    if plan is None:
        return {ordinal: draw(conditions) for ordinal in sorted(draw(st.sets(st.integers(0, 8), max_size=8)))}
    found: dict[int, bool | None] = {ordinal: draw(st.sampled_from([True, None])) for ordinal in range(plan.shards)}
    for ordinal in sorted(draw(st.sets(st.integers(plan.shards, 8), max_size=2))):
        found[ordinal] = draw(conditions)
    if not plan.open("registered"):
        missing = draw(st.integers(0, plan.shards - 1))
        if draw(st.booleans()):
            found[missing] = False
        else:
            del found[missing]
    return found


@st.composite
def observed_worlds(draw: st.DrawFn) -> Observed:
    """One observed world for one ShardDB, with its truth."""
    name = draw(NAMES)
    # Which hook Metacontroller calls: sync, finalize once deletion is marked, or finalize before the mark is seen.
    call = draw(st.sampled_from(["sync", "sync", "finalize", "finalize-unmarked"]))
    plan = draw(plans()) if call == "sync" else None
    spec = draw(specs())
    if plan is not None:
        spec["shards"] = plan.shards
    parent = sharddb(name=name, namespace=draw(NAMESPACES), **spec)
    parent["metadata"]["generation"] = draw(st.integers(1, 9))
    finalizing = call == "finalize"
    if finalizing:
        parent["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    status, status_seeded = _prior_status(draw)
    if plan is not None:
        status, status_seeded = _planned_status(draw, status, status_seeded, plan)
    if status is not None:
        parent["status"] = status
    world: Obj = {
        "controller": {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController"},
        "parent": parent,
        "finalizing": finalizing,
    }
    v2 = draw(st.booleans())
    namespace = parent["metadata"]["namespace"]

    def key(obj: Obj) -> str:
        return f"{namespace}/{obj['metadata']['name']}" if v2 else str(obj["metadata"]["name"])

    truth = Truth(
        name=name,
        finalizing=finalizing,
        spec_shards=spec["shards"],
        cache_replicas=spec["cache"].get("replicas", 1),
        sts_replicas=None,
        seeded=status_seeded,
    )
    groups: dict[str, dict[str, Obj]] = {}

    if plan is not None or draw(st.booleans()):
        if plan is None:
            replicas = draw(st.integers(0, 8))  # zero: scaled down by a teardown or a hibernation
            status_replicas = draw(st.integers(0, replicas))
            ready = draw(st.integers(0, status_replicas))
        else:
            replicas = status_replicas = plan.shards
            ready = replicas if plan.open("ready") else draw(st.integers(0, replicas - 1))
        seeded_note = _seed_note(draw, plan)
        sts = _statefulset(world, name, replicas, status_replicas, ready, seeded_note)
        groups.setdefault("StatefulSet.apps/v1", {})[key(sts)] = sts
        truth.sts_replicas, truth.sts_ready = replicas, ready
        truth.sts_at_zero = replicas == 0 and status_replicas == 0
        if seeded_note is not None and seeded_note.isdecimal():
            truth.seeded = max(truth.seeded, int(seeded_note))
    if draw(st.booleans()):
        service = _service(world, name)
        groups.setdefault("Service.v1", {})[key(service)] = service
    for shards, outcome in _seed_jobs(draw, plan).items():
        job = _job(world, name, shards, outcome)
        groups.setdefault("Job.batch/v1", {})[key(job)] = job
        truth.jobs.add(shards)
        if outcome == "complete":
            truth.seeded = max(truth.seeded, shards)
    if plan is None and draw(st.booleans()):  # a planned world has no cache yet: its gates decide
        replicas = draw(st.integers(0, 4))
        status_replicas = draw(st.integers(0, replicas + 1))
        deployment = _deployment(
            world, name, replicas, status_replicas, draw(st.integers(0, status_replicas)), draw(st.booleans())
        )
        groups.setdefault("Deployment.apps/v1", {})[key(deployment)] = deployment
        truth.cache_observed = True
        truth.cache_at_zero = replicas == 0 and status_replicas == 0
    # A group may be missing, null or empty: all mean "none observed".
    for group in ("StatefulSet.apps/v1", "Service.v1", "Job.batch/v1", "Deployment.apps/v1"):
        if group not in groups:
            empty = draw(st.sampled_from(["missing", "null", "empty"]))
            if empty != "missing":
                groups[group] = {} if empty == "empty" else None  # type: ignore[assignment]
    world["children"] = groups

    endpoints: list[Obj] = []
    for ordinal, condition in sorted(_endpoint_conditions(draw, plan).items()):
        endpoints.append(_endpoint(ordinal, f"{name}-db-{ordinal}", condition))
        if condition is not False:  # unset counts as ready
            truth.registered.add(ordinal)
    slices = [_slice(world, f"{name}-db", "abcde", endpoints)]
    if draw(st.booleans()):  # another Service's endpoints never count
        stranger = [_endpoint(o, f"{name}-db-{o}", True) for o in range(9)]
        slices.append(_slice(world, f"{name}-other", "zzzzz", stranger))

    pods: list[Obj] = []
    grace = spec.get("podStartGraceSeconds", DEFAULT_GRACE)
    components = (("db", f"{name}-db-"), ("cache", f"{name}-cache-7c9f-"), ("seed", f"{name}-seed-3-x7k2"))
    for component, prefix in components:
        counts = st.integers(0, 2) if component == "seed" else POD_COUNTS
        for index in range(draw(counts)):
            phase = draw(st.sampled_from(["Running", "Running", "Pending", "Succeeded", "Failed"]))
            terminating = draw(st.booleans())
            # A pod that cannot start: about two in three, half of them with a trouble that may pass by itself.
            troubles = st.one_of(st.sampled_from(FAILURES), st.sampled_from(sorted(PASSING)))
            failure = draw(troubles) if draw(st.integers(0, 2)) > 0 else None
            since = draw(sinces(grace)) if failure is not None else None
            pod = f"{prefix}{index}"
            pods.append(_pod(world, name, pod, component, phase, terminating, name, failure, since))
            if phase in ("Succeeded", "Failed"):
                if terminating:  # being torn down by its kubelet: it counts until it is gone
                    truth.shard_pods += component == "db"
                    truth.cache_pods += component == "cache"
                continue
            if failure is not None and since is not None and not terminating:
                left = since.left(failure, grace)
                if left is None:
                    truth.failing.setdefault(component, set()).add(pod)
                else:
                    truth.waiting.setdefault(component, {})[pod] = left
            if component == "db":
                truth.shard_pods += 1
            elif component == "cache":
                truth.cache_pods += 1
    if draw(st.booleans()):  # a namesake's pods in the same namespace never count
        pods.append(_pod(world, name, f"{name}x-cache-0", "cache", "Running", False, f"{name}x"))
    world["related"] = {
        "EndpointSlice.discovery.k8s.io/v1": {key(s): s for s in slices},
        "Pod.v1": {key(p): p for p in pods},
    }
    finalize = call != "sync"
    truth.finalizing = finalizing or finalize
    return Observed(request=world, finalize=finalize, truth=truth)
