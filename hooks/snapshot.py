"""Reduce a sync request to the few facts the lifecycle decides on.

Everything here is a plain frozen dataclass so the decision is a pure function
that tests can feed directly, without HTTP or Kubernetes-shaped JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import contract, names
from .contract import Condition, Deployment, EndpointSlice, Job, Pod, SyncRequest
from .spec import MAX_SHARDS, ShardDBSpec


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

    def held_template(self) -> dict[str, Any]:
        """The pod template to keep while the cache waits: the one last asked for, else the stored one.

        Answering with exactly what was last applied makes the hold cost Metacontroller no write.
        """
        try:
            last = json.loads(self.last_applied) if self.last_applied else None
        except (ValueError, RecursionError):
            last = None
        spec = last.get("spec") if isinstance(last, dict) else None
        template = spec.get("template") if isinstance(spec, dict) else None
        return template if isinstance(template, dict) and not contract.unfit(template) else self.template


@dataclass(frozen=True)
class StuckPod:
    """A pod that cannot start on its own: a crash loop, an image that cannot be pulled, no node."""

    name: str
    component: str
    reason: str
    message: str


@dataclass(frozen=True)
class SeedJobView:
    shards: int
    succeeded: bool
    failed: bool


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

    def seed_job(self, shards: int) -> SeedJobView | None:
        return next((job for job in self.seed_jobs if job.shards == shards), None)


def observe(request: SyncRequest, spec: ShardDBSpec) -> Snapshot:
    """Build the snapshot; ``spec`` is validated separately so its errors name ``parent.spec``."""
    parent = request.parent
    name = parent.metadata.name
    children = request.children
    related = request.related
    prior_seeded, prior_conditions = _prior_status(parent.status)
    db = names.db_name(name)

    statefulset = None
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
                    seeded_annotation=_int(sts.metadata.annotations.get(names.SEEDED_SHARDS_ANNOTATION)),
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
                )
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

    registered: frozenset[int] = frozenset()
    cache_pods = shard_pods = 0
    stuck: list[StuckPod] = []
    if related is not None:
        registered = _registered(name, related.endpointslices or {})
        for pod in (related.pods or {}).values():
            labels = pod.metadata.labels
            if labels.get(names.INSTANCE_LABEL) != name or pod.status.phase in ("Succeeded", "Failed"):
                continue  # a finished pod cannot be flushing or serving
            problem = _stuck(pod)
            if problem is not None and pod.metadata.deletion_timestamp is None:
                stuck.append(problem)
            component = labels.get(names.COMPONENT_LABEL)
            if component == names.CACHE:
                cache_pods += 1
            elif component == names.DB:
                shard_pods += 1

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
        stuck_pods=tuple(sorted(stuck, key=lambda pod: pod.name)),
    )


def _prior_status(raw: dict[str, object] | None) -> tuple[int, tuple[Condition, ...]]:
    """Seeded count and conditions from our own memory: an unreadable part is dropped, not an error."""
    if not raw:
        return 0, ()
    seeded = raw.get("seededShards")
    valid = isinstance(seeded, int) and not isinstance(seeded, bool) and 0 < seeded <= MAX_SHARDS
    listed = raw.get("conditions")
    conditions = (contract.condition(item) for item in (listed if isinstance(listed, list) else ()))
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


# Metacontroller's dynamic apply keeps the last desired object of each child here.
LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"

# Waiting reasons of a container that will not get better by waiting.
STUCK_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)


def _stuck(pod: Pod) -> StuckPod | None:
    """Why ``pod`` cannot start, if it cannot; a pod still pulling or starting is not stuck."""
    component = pod.metadata.labels.get(names.COMPONENT_LABEL, "")
    for status in (*pod.status.init_container_statuses, *pod.status.container_statuses):
        waiting = status.state.waiting
        if waiting is not None and waiting.reason in STUCK_REASONS:
            return StuckPod(pod.metadata.name, component, waiting.reason, waiting.message)
    for condition in pod.status.conditions:
        if condition.type == "PodScheduled" and condition.status == "False" and condition.reason == "Unschedulable":
            return StuckPod(pod.metadata.name, component, "Unschedulable", condition.message)
    return None


def _int(text: str | None) -> int:
    return int(text) if text is not None and text.isascii() and text.isdecimal() and len(text) <= 6 else 0


def _cache_view(deployment: Deployment) -> CacheView:
    stuck = any(
        c.type == "Progressing" and c.status == "False" and c.reason == "ProgressDeadlineExceeded"
        for c in deployment.status.conditions
    )
    return CacheView(
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
        last_applied=deployment.metadata.annotations.get(LAST_APPLIED),
    )


def _seed_jobs(name: str, jobs: Iterable[Job]) -> Iterable[SeedJobView]:
    prefix = names.seed_job_name(name, 0).removesuffix("0")
    for job in jobs:
        shards = _ordinal(job.metadata.name, prefix)
        if not shards:
            continue
        conditions = {c.type: c.status for c in job.status.conditions}
        yield SeedJobView(
            shards=shards,
            succeeded=conditions.get("Complete") == "True",
            failed=conditions.get("Failed") == "True",
        )


def _registered(name: str, slices: Mapping[str, EndpointSlice]) -> frozenset[int]:
    """Ordinals of shard pods that are ready endpoints of the headless Service."""
    service = names.db_name(name)
    prefix = service + "-"
    ordinals: set[int] = set()
    for endpoint_slice in slices.values():
        if endpoint_slice.metadata.labels.get(names.SERVICE_NAME_LABEL) != service:
            continue
        for endpoint in endpoint_slice.endpoints or ():
            if endpoint.conditions.ready is False:
                continue
            pod = endpoint.target_ref.name if endpoint.target_ref and endpoint.target_ref.kind in ("Pod", "") else ""
            pod = pod or endpoint.hostname or ""
            ordinal = _ordinal(pod, prefix)
            if ordinal is not None:
                ordinals.add(ordinal)
    return frozenset(ordinals)


def _ordinal(text: str, prefix: str) -> int | None:
    """The number after ``prefix`` in ``text``, written as Kubernetes writes ordinals."""
    suffix = text[len(prefix) :] if text.startswith(prefix) else ""
    if suffix.isascii() and suffix.isdecimal() and len(suffix) <= 6 and (suffix == "0" or suffix[0] != "0"):
        return int(suffix)
    return None
