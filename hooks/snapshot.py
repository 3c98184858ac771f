"""Reduce a sync request to the few facts the lifecycle decides on.

Everything here is a plain frozen dataclass so the decision is a pure function
that tests can feed directly, without HTTP or Kubernetes-shaped JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from . import clock, hook_request, kinds, last_applied, names, template_choice
from .hook_request import (
    Children,
    Condition,
    ContainerStatus,
    Deployment,
    EndpointSlice,
    Job,
    Pod,
    StatefulSet,
    SyncRequest,
)
from .spec import MAX_SHARDS, ShardDBSpec


@dataclass(frozen=True)
class TemplateRecord:
    """What a child's annotations say its pod template was made from (``hooks/template_choice.py``); None: unsaid."""

    inputs: str | None = None
    epoch: int | None = None
    applied: str | None = None

    @classmethod
    def read(cls, annotations: Mapping[str, str]) -> TemplateRecord:
        epoch = annotations.get(names.TEMPLATE_EPOCH_ANNOTATION, "")
        return cls(
            inputs=annotations.get(names.TEMPLATE_INPUTS_ANNOTATION),
            epoch=int(epoch) if epoch.isdigit() else None,
            applied=annotations.get(names.TEMPLATES_APPLIED_ANNOTATION),
        )

    def recorded(self, template: dict[str, Any], last_applied: str | None) -> template_choice.Recorded:
        asked = _asked_template(last_applied)
        held = asked if asked is not None else template
        return template_choice.Recorded(template, held, asked is not None, self.inputs, self.epoch, self.applied)


@dataclass(frozen=True)
class StatefulSetView:
    replicas: int
    status_replicas: int
    ready: int
    seeded_annotation: int
    storage_size: str | None
    storage_class: str | None
    # Fields the API server refuses to change, kept verbatim so the answer reproduces them.
    pod_management_policy: str | None = None
    claim_templates: tuple[dict[str, Any], ...] = ()
    rollout: Rollout = field(default_factory=lambda: Rollout())
    template: dict[str, Any] = field(default_factory=dict)  # the pod template as stored
    last_applied: str | None = None  # Metacontroller's record of what the hooks last asked for
    made: TemplateRecord = field(default_factory=lambda: TemplateRecord())

    def held_template(self) -> dict[str, Any]:
        """The pod template to keep while the ShardDB stops: a teardown never rolls the shards."""
        return _held_template(self.last_applied, self.template)

    def recorded(self) -> template_choice.Recorded:
        return self.made.recorded(self.template, self.last_applied)


def _held_template(recorded: str | None, stored: dict[str, Any]) -> dict[str, Any]:
    """The pod template last asked for, else the stored one; read only when a hold needs it.

    Answering with exactly what was last applied makes a hold cost Metacontroller no write.
    """
    asked = _asked_template(recorded)
    return asked if asked is not None else stored


def _asked_template(recorded: str | None) -> dict[str, Any] | None:
    """The pod template in Metacontroller's record of the last answer, if it has one."""
    last = last_applied.read(recorded)
    spec = last.get("spec") if last is not None else None
    template = spec.get("template") if isinstance(spec, dict) else None
    return template if isinstance(template, dict) else None


@dataclass(frozen=True)
class Rollout:
    """How far a workload's controller has carried out its latest spec."""

    generation: int = 0
    observed_generation: int = 0
    updated: int = 0
    current_revision: str = ""
    update_revision: str = ""

    def new_revision(self) -> bool:
        """A StatefulSet is replacing pods: it becomes current only once all are updated and ready."""
        return bool(self.current_revision and self.update_revision) and self.current_revision != self.update_revision

    def settled(self, replicas: int) -> bool:
        """The controller has seen the latest spec and every replica runs the latest template."""
        return self.observed_generation >= self.generation and self.updated >= replicas and not self.new_revision()


@dataclass(frozen=True)
class CacheView:
    replicas: int
    status_replicas: int
    ready: int
    stuck: bool
    rollout: Rollout = field(default_factory=lambda: Rollout())
    template: dict[str, Any] = field(default_factory=dict)  # the pod template as stored
    last_applied: str | None = None  # Metacontroller's record of what the hooks last asked for
    made: TemplateRecord = field(default_factory=lambda: TemplateRecord())
    # The Deployment's ReplicaFailure (FailedCreate): its ReplicaSet's refused create, in its own words.
    refused: str | None = None
    refused_since: datetime | None = None  # the condition's lastTransitionTime: where its grace starts

    def held_template(self) -> dict[str, Any]:
        """The pod template to keep while the cache waits for the shards, or the ShardDB stops."""
        return _held_template(self.last_applied, self.template)

    def recorded(self) -> template_choice.Recorded:
        return self.made.recorded(self.template, self.last_applied)


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


@dataclass(frozen=True)
class MissingPod:
    """A shard pod the StatefulSet asks for that does not exist, though its controller has tried.

    ``since`` is when the StatefulSet last asked for more (created, or its spec last written): the
    start grace is timed from it. Its controller's ``FailedCreate`` events say why (a quota, Pod
    Security, a webhook); the hooks cannot read events, so they say where to look.
    """

    name: str
    ordinal: int
    since: datetime | None


@dataclass(frozen=True)
class LostPod:
    """A pod whose node, as the pod itself shows, stopped reporting or is gone.

    ``evidence`` says which of the pod's fields show it; it stays put while the node stays lost.
    """

    name: str
    component: str
    node: str
    evidence: str
    ordinal: int = -1
    terminating: bool = False

    def sort_key(self) -> tuple[str, int, int, str]:
        return (
            self.node,
            LOST_ORDER.index(self.component) if self.component in LOST_ORDER else 9,
            self.ordinal,
            self.name,
        )


LOST_ORDER = (names.DB, names.CACHE, names.SEED)


@dataclass(frozen=True)
class SeedJobView:
    shards: int
    succeeded: bool
    failed: bool
    reason: str = ""  # the Job controller's reason for failing (DeadlineExceeded, BackoffLimitExceeded)
    message: str = ""
    # Started by its controller, no pod counted at all and none observed: its pod was refused.
    podless_since: datetime | None = None


@dataclass(frozen=True)
class Snapshot:
    name: str
    namespace: str
    generation: int
    spec: ShardDBSpec
    finalizing: bool = False
    prior_seeded: int = 0
    prior_conditions: tuple[Condition, ...] = ()
    statefulset: StatefulSetView | None = None
    service: bool = False
    cache_service: bool = False
    budgets: frozenset[str] = field(default_factory=frozenset)  # components with a disruption budget
    cache: CacheView | None = None
    seed_jobs: tuple[SeedJobView, ...] = ()
    registered: frozenset[int] = field(default_factory=frozenset)
    cache_pods: int = 0
    shard_pods: int = 0
    stuck_pods: tuple[StuckPod, ...] = ()
    missing_pods: tuple[MissingPod, ...] = ()  # shard pods asked for that the StatefulSet could not create
    lost_pods: tuple[LostPod, ...] = ()  # pods on a node that stopped reporting, Terminating ones too
    created: datetime | None = None  # the ShardDB's creationTimestamp: where a missing child's grace starts
    # Every observed child by (kind, name), with its replicas where it has some: what an answer changes.
    observed: Mapping[tuple[str, str], int | None] = field(default_factory=dict)
    # When the request is answered, read once at the edge; None (no clock) gives no pod a grace.
    now: datetime | None = None
    # The user's request to apply the running hooks' templates (the ShardDB's apply-templates annotation).
    apply_templates: str | None = None
    # The generation the last answer saw, as its status says (None: it says nothing); ``template_choice.edited``.
    answered_generation: int | None = None

    def unrecorded(self) -> bool:
        """A running StatefulSet or cache Deployment carries no record of what its template was made from."""
        return any(child is not None and child.made.inputs is None for child in (self.statefulset, self.cache))

    def seed_job(self, shards: int) -> SeedJobView | None:
        return next((job for job in self.seed_jobs if job.shards == shards), None)


def observe(request: SyncRequest, spec: ShardDBSpec, now: datetime | None = None) -> Snapshot:
    """Build the snapshot; ``spec`` is validated separately so its errors name ``parent.spec``.

    ``now`` is only carried, for the lifecycle to hold against the pods' own timestamps.
    """
    parent = request.parent
    name = parent.metadata.name
    children = request.children
    related = request.related
    prior_seeded, prior_conditions = _prior_status(parent.status)
    db = names.db_name(name)

    statefulset = None
    asked_since: datetime | None = None
    observed: dict[tuple[str, str], int | None] = {}
    service = cache_service = False
    budgets: frozenset[str] = frozenset()
    cache = None
    jobs: tuple[SeedJobView, ...] = ()
    if children is not None:
        for sts in (children.statefulsets or {}).values():
            if sts.metadata.name == db:
                size, storage_class = _claim_storage(sts.spec.volume_claim_templates)
                statefulset = StatefulSetView(
                    replicas=sts.spec.replicas if sts.spec.replicas is not None else 1,
                    status_replicas=sts.status.replicas,
                    ready=sts.status.ready_replicas,
                    seeded_annotation=names.count(sts.metadata.annotations.get(names.SEEDED_SHARDS_ANNOTATION)),
                    storage_size=size,
                    storage_class=storage_class,
                    pod_management_policy=sts.spec.pod_management_policy,
                    claim_templates=tuple(sts.spec.volume_claim_templates),
                    rollout=Rollout(
                        generation=sts.metadata.generation,
                        observed_generation=sts.status.observed_generation,
                        updated=sts.status.updated_replicas,
                        current_revision=sts.status.current_revision,
                        update_revision=sts.status.update_revision,
                    ),
                    template=sts.spec.template,
                    last_applied=sts.metadata.annotations.get(last_applied.LAST_APPLIED),
                    made=TemplateRecord.read(sts.metadata.annotations),
                )
                asked_since = _last_spec_write(sts)
        services = {svc.metadata.name for svc in (children.services or {}).values()}
        service = db in services
        cache_service = names.cache_name(name) in services
        budgets = frozenset(
            component
            for component, budget in ((names.DB, db), (names.CACHE, names.cache_name(name)))
            if any(pdb.metadata.name == budget for pdb in (children.budgets or {}).values())
        )
        for deployment in (children.deployments or {}).values():
            if deployment.metadata.name == names.cache_name(name):
                cache = _cache_view(deployment)
        jobs = tuple(sorted(_seed_jobs(name, (children.jobs or {}).values()), key=lambda job: job.shards))
        if related is not None and related.pods is not None:
            jobs = _podless(jobs, name, related.pods.values())
        observed = _observed(children)

    registered: frozenset[int] = frozenset()
    cache_pods = shard_pods = 0
    stuck: list[StuckPod] = []
    lost: list[LostPod] = []
    missing: tuple[MissingPod, ...] = ()
    if related is not None:
        registered = _registered(name, related.endpointslices or {})
        for pod in (related.pods or {}).values():
            labels = pod.metadata.labels
            finished = pod.status.phase in ("Succeeded", "Failed")
            terminating = pod.metadata.deletion_timestamp is not None
            if labels.get(names.INSTANCE_LABEL) != name or (finished and not terminating):
                continue  # a finished pod that stays (evicted, completed) cannot be flushing or serving
            # A kubelet marks a deleted pod finished once its containers stopped, then tears it down and
            # removes it: it counts until it is gone, so the shards never start to stop beside it.
            problem = None if finished else _stuck(pod, names.shard_ordinal(name, pod.metadata.name))
            if problem is not None and not terminating:
                stuck.append(problem)
            gone = _lost(pod, names.shard_ordinal(name, pod.metadata.name))
            if gone is not None:
                lost.append(gone)
            component = labels.get(names.COMPONENT_LABEL)
            if component == names.CACHE:
                cache_pods += 1
            elif component == names.DB:
                shard_pods += 1
        if related.pods is not None and statefulset is not None:
            missing = _missing(name, statefulset, related.pods.values(), asked_since)

    return Snapshot(
        name=name,
        namespace=parent.metadata.namespace,
        generation=parent.metadata.generation,
        spec=spec,
        finalizing=request.finalizing,
        prior_seeded=prior_seeded,
        prior_conditions=prior_conditions,
        statefulset=statefulset,
        service=service,
        cache_service=cache_service,
        budgets=budgets,
        cache=cache,
        seed_jobs=jobs,
        registered=registered,
        cache_pods=cache_pods,
        shard_pods=shard_pods,
        stuck_pods=tuple(sorted(stuck, key=StuckPod.sort_key)),
        missing_pods=missing,
        lost_pods=tuple(sorted(lost, key=LostPod.sort_key)),
        created=clock.parse(parent.metadata.creation_timestamp),
        observed=observed,
        now=now,
        apply_templates=parent.metadata.annotations.get(names.APPLY_TEMPLATES_ANNOTATION),
        answered_generation=_answered(parent.status),
    )


def _last_spec_write(sts: StatefulSet) -> datetime | None:
    """When the StatefulSet last asked for more pods, at the latest: created, or any write but its status's."""
    times = [clock.parse(sts.metadata.creation_timestamp)]
    times += [clock.parse(entry.time) for entry in sts.metadata.managed_fields if entry.subresource != "status"]
    known = [moment for moment in times if moment is not None]
    return max(known, default=None)


def _missing(name: str, sts: StatefulSetView, found: Iterable[Pod], since: datetime | None) -> tuple[MissingPod, ...]:
    """Shard pods the StatefulSet asks for, that its controller tried to create and could not.

    Only once its controller has seen the latest spec and counts fewer pods than it asks for:
    a pod deleted a moment ago, or created a moment before its event reached the request, is
    no pod missing. So a rollout or a scale-up never reads as one.
    """
    if sts.rollout.observed_generation < sts.rollout.generation or sts.status_replicas >= sts.replicas:
        return ()
    present = {pod.metadata.name for pod in found if pod.metadata.labels.get(names.INSTANCE_LABEL) == name}
    return tuple(
        MissingPod(names.shard_pod_name(name, ordinal), ordinal, since)
        for ordinal in range(min(sts.replicas, MAX_SHARDS))
        if names.shard_pod_name(name, ordinal) not in present
    )


# How a pod shows that its node is lost; each stays put while the node does.
NOT_READY_BY_NODE_CONTROLLER = (
    "Ready=False while its containers are ready: the node controller's mark of a node that stopped reporting"
)
NODE_LOST_REASON = "status.reason NodeLost"
DELETED_NODE = "DisruptionTarget=True DeletionByPodGC: its Node object is gone"


def _lost(pod: Pod, ordinal: int | None) -> LostPod | None:
    """The pod's node, if the pod shows the node is lost (Kubernetes 1.34's node lifecycle and pod GC).

    The kubelet sets Ready and ContainersReady together; only the node lifecycle controller turns a
    pod's Ready False alone (``MarkPodsNotReady``) when its node stops reporting.
    """
    node = pod.spec.node_name
    if not node:
        return None
    conditions = {c.type: c for c in pod.status.conditions}
    ready, containers = conditions.get("Ready"), conditions.get("ContainersReady")
    target = conditions.get("DisruptionTarget")
    if pod.status.reason == "NodeLost":
        evidence = NODE_LOST_REASON
    elif target is not None and target.status == "True" and target.reason == "DeletionByPodGC":
        evidence = DELETED_NODE
    elif ready is not None and ready.status == "False" and containers is not None and containers.status == "True":
        evidence = NOT_READY_BY_NODE_CONTROLLER
    else:
        return None
    component = pod.metadata.labels.get(names.COMPONENT_LABEL, "")
    terminating = pod.metadata.deletion_timestamp is not None
    return LostPod(pod.metadata.name, component, node, evidence, -1 if ordinal is None else ordinal, terminating)


def _observed(children: Children) -> dict[tuple[str, str], int | None]:
    found: dict[tuple[str, str], int | None] = {}
    for sts in (children.statefulsets or {}).values():
        found[(kinds.STATEFULSET.kind, sts.metadata.name)] = sts.spec.replicas
    for deployment in (children.deployments or {}).values():
        found[(kinds.DEPLOYMENT.kind, deployment.metadata.name)] = deployment.spec.replicas
    for kind, group in (
        (kinds.SERVICE, children.services),
        (kinds.JOB, children.jobs),
        (kinds.PDB, children.budgets),
    ):
        for child in (group or {}).values():
            found[(kind.kind, child.metadata.name)] = None
    return found


def _answered(raw: dict[str, object] | None) -> int | None:
    """The oldest generation the last answer's status says it saw: conditions, Metacontroller's, ours.

    Every witness is of the same answer (the status is replaced whole), so they agree; where one
    lags (an edit not yet on a child without a record), the older one keeps the edit to roll.
    """
    if not raw:
        return None
    listed = raw.get("conditions")
    items = listed if isinstance(listed, list) else []
    witnesses = [item.get("observedGeneration") for item in items if isinstance(item, dict)]
    witnesses += [raw.get("observedGeneration"), raw.get(template_choice.UNRECORDED_GENERATION)]
    seen = [value for value in witnesses if isinstance(value, int) and not isinstance(value, bool) and value >= 0]
    return min(seen, default=None)


def _prior_status(raw: dict[str, object] | None) -> tuple[int, tuple[Condition, ...]]:
    """Seeded count and conditions from our own memory: an unreadable part is dropped, not an error."""
    if not raw:
        return 0, ()
    seeded = raw.get("seededShards")
    valid = isinstance(seeded, int) and not isinstance(seeded, bool) and 0 < seeded <= MAX_SHARDS
    listed = raw.get("conditions")
    conditions = (hook_request.condition(item) for item in (listed if isinstance(listed, list) else ()))
    return (seeded if valid and isinstance(seeded, int) else 0), tuple(c for c in conditions if c is not None)


def _claim_storage(templates: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """Size and class of the first volume claim template; anything unreadable counts as unset."""
    spec = templates[0].get("spec") if templates else None
    if not isinstance(spec, dict):
        return None, None
    resources = spec.get("resources")
    requests = resources.get("requests") if isinstance(resources, dict) else None
    size = requests.get("storage") if isinstance(requests, dict) else None
    storage_class = spec.get("storageClassName")
    return (size if isinstance(size, str) else None), (storage_class if isinstance(storage_class, str) else None)


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
DETAIL_MAX = 120
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


def _stuck(pod: Pod, ordinal: int | None) -> StuckPod | None:
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
        found.append(StuckPod(pod.metadata.name, component, "Unschedulable", _short(said), at, since, placement(said)))
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
        return reason, _short(status.image or (waiting.message if waiting else ""))
    if reason in ("CreateContainerConfigError", "CreateContainerError", "RunContainerError"):
        return reason, _short(waiting.message if waiting else "")
    # Between back-offs a crashing container lies terminated or briefly runs: still a crash loop.
    # Running again after a single crash (a shard replaying its log, say) is a recovery, not a loop.
    crashed = status.state.terminated or status.last_state.terminated
    failed = crashed is not None and crashed.exit_code != 0 and not status.ready
    repeated = status.restart_count >= (1 if status.state.terminated else CRASHES_FOR_A_LOOP)
    crashing = reason == "CrashLoopBackOff" or (failed and repeated)
    if crashing:
        exited = f"container {status.name} exited {crashed.exit_code}" if crashed is not None else ""
        cause = f" ({crashed.reason})" if crashed is not None and crashed.reason not in ("", "Error") else ""
        return "CrashLoopBackOff", exited + cause
    return "", ""


def _short(text: str) -> str:
    """One line, at most ``DETAIL_MAX`` characters, so a long message cannot swamp the status."""
    line = " ".join(text.split())
    return line if len(line) <= DETAIL_MAX else line[: DETAIL_MAX - 1] + "…"


def _cache_view(deployment: Deployment) -> CacheView:
    stuck = any(
        c.type == "Progressing" and c.status == "False" and c.reason == "ProgressDeadlineExceeded"
        for c in deployment.status.conditions
    )
    # The ReplicaSet controller sets it once, at its first refused create, and the Deployment copies it.
    failure = next(
        (
            c
            for c in deployment.status.conditions
            if c.type == "ReplicaFailure" and c.status == "True" and c.reason == "FailedCreate"
        ),
        None,
    )
    return CacheView(
        refused=_short(failure.message) if failure is not None else None,
        refused_since=clock.parse(failure.last_transition_time) if failure is not None else None,
        replicas=deployment.spec.replicas if deployment.spec.replicas is not None else 1,
        status_replicas=deployment.status.replicas,
        ready=deployment.status.ready_replicas,
        stuck=stuck,
        rollout=Rollout(
            generation=deployment.metadata.generation,
            observed_generation=deployment.status.observed_generation,
            updated=deployment.status.updated_replicas,
        ),
        template=deployment.spec.template,
        last_applied=deployment.metadata.annotations.get(last_applied.LAST_APPLIED),
        made=TemplateRecord.read(deployment.metadata.annotations),
    )


def _seed_jobs(name: str, jobs: Iterable[Job]) -> Iterable[SeedJobView]:
    for job in jobs:
        shards = names.seed_job_shards(name, job.metadata.name)
        if shards is None:
            continue
        true = {c.type: c for c in job.status.conditions if c.status == "True"}
        # FailureTarget comes first (Kubernetes 1.31+), while the Job's pods still stop.
        failure = true.get("Failed") or true.get("FailureTarget")
        status = job.status
        counted = status.active or status.succeeded or status.failed or status.terminating or true
        yield SeedJobView(
            shards=shards,
            succeeded="Complete" in true,
            failed=failure is not None,
            reason=failure.reason if failure else "",
            message=_short(failure.message) if failure else "",
            podless_since=None if counted else clock.parse(status.start_time),
        )


JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


def _podless(jobs: tuple[SeedJobView, ...], name: str, found: Iterable[Pod]) -> tuple[SeedJobView, ...]:
    """Keep a Job's podless mark only where no pod of it is observed (its pod's event came first).

    A Job's pod carries its name as a label, and is named after it (``<job>-<suffix>``).
    """
    pods = list(found)

    def has_pod(job: str) -> bool:
        return any(
            pod.metadata.labels.get(JOB_NAME_LABEL) == job
            or pod.metadata.labels.get("job-name") == job
            or pod.metadata.name.startswith(f"{job}-")
            for pod in pods
        )

    return tuple(
        replace(job, podless_since=None)
        if job.podless_since is not None and has_pod(names.seed_job_name(name, job.shards))
        else job
        for job in jobs
    )


def _registered(name: str, slices: Mapping[str, EndpointSlice]) -> frozenset[int]:
    """Ordinals of shard pods that are ready endpoints of the headless Service."""
    service = names.db_name(name)
    ordinals: set[int] = set()
    for endpoint_slice in slices.values():
        if endpoint_slice.metadata.labels.get(names.SERVICE_NAME_LABEL) != service:
            continue
        for endpoint in endpoint_slice.endpoints or ():
            if endpoint.conditions.ready is False:
                continue
            pod = endpoint.target_ref.name if endpoint.target_ref and endpoint.target_ref.kind in ("Pod", "") else ""
            pod = pod or endpoint.hostname or ""
            ordinal = names.shard_ordinal(name, pod)
            if ordinal is not None:
                ordinals.add(ordinal)
    return frozenset(ordinals)
