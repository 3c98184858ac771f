"""Observe: a sync request reduced to a ``Snapshot``, read in two steps, the children (what Metacontroller
applied) and the related pods and endpoints (what they do).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from . import clock, hook_request, kinds, last_applied, names, template_choice
from .backup.runs import BaseBackups
from .hook_request import Children, Condition, Deployment, EndpointSlice, Job, Pod, Related, StatefulSet, SyncRequest
from .names import ON_DELETE
from .replication.observe import shard_sets
from .snapshot import Snapshot
from .spec import MAX_SHARDS, ShardDBSpec
from .trouble.lost import LostPod, lost
from .trouble.missing import MissingPod, missing_pods
from .trouble.stuck import StuckPod, short, stuck
from .workloads import CacheView, Rollout, SeedJobView, StatefulSetView, TemplateRecord


def observe(request: SyncRequest, spec: ShardDBSpec, now: datetime | None = None) -> Snapshot:
    """Build the snapshot; ``spec`` is validated separately so its errors name ``parent.spec``.

    ``now`` is only carried, for the lifecycle to hold against the pods' own timestamps.
    """
    parent = request.parent
    name = parent.metadata.name
    prior_seeded, prior_conditions = _prior_status(parent.status)
    owned = _children(name, request.children, request.related)
    pods = _pods(name, request.related, owned.statefulset, owned.asked_since)
    sets, shape = shard_sets(
        name, request.children, request.related, owned.statefulset is not None, _statefulset_view, _last_spec_write
    )
    return Snapshot(
        name=name,
        namespace=parent.metadata.namespace,
        generation=parent.metadata.generation,
        spec=spec,
        finalizing=request.finalizing,
        prior_seeded=prior_seeded,
        prior_conditions=prior_conditions,
        statefulset=owned.statefulset,
        service=owned.service,
        cache_service=owned.cache_service,
        budgets=owned.budgets,
        cache=owned.cache,
        seed_jobs=owned.jobs,
        registered=pods.registered,
        cache_pods=pods.cache_pods,
        shard_pods=pods.shard_pods,
        stuck_pods=tuple(sorted(pods.stuck, key=StuckPod.sort_key)),
        missing_pods=pods.missing + tuple(pod for each in sets for pod in each.missing),
        lost_pods=tuple(sorted(pods.lost, key=LostPod.sort_key)),
        created=clock.parse(parent.metadata.creation_timestamp),
        observed=owned.observed,
        now=now,
        apply_templates=parent.metadata.annotations.get(names.APPLY_TEMPLATES_ANNOTATION),
        answered_generation=_answered(parent.status),
        shard_sets=sets,
        replication=shape,
        cleanup_job=_cleanup_job(name, request.children),
        patroni_state=_patroni_state(name, spec.shards, request.related),
        base_backups=_base_backups(name, request.children),
    )


def _base_backups(name: str, children: Children | None) -> BaseBackups | None:
    """The base backups' CronJob's record of its runs, if observed."""
    for cronjob in ((children.cronjobs if children else None) or {}).values():
        if cronjob.metadata.name == names.backup_name(name):
            status = cronjob.status
            return BaseBackups(
                clock.parse(status.last_schedule_time),
                clock.parse(status.last_successful_time),
                bool(status.active),
                cronjob.spec.schedule,
                clock.parse(cronjob.metadata.creation_timestamp),
            )
    return None


def _cleanup_job(name: str, children: Children | None) -> SeedJobView | None:
    """The Job that removes Patroni's ConfigMaps, if observed: whether it succeeded or gave up."""
    for job in ((children.jobs if children else None) or {}).values():
        if job.metadata.name == names.cleanup_name(name):
            true = {c.type for c in job.status.conditions if c.status == "True"}
            return SeedJobView(0, succeeded="Complete" in true, failed=bool(true & {"Failed", "FailureTarget"}))
    return None


def _patroni_state(name: str, shards: int, related: Related | None) -> bool | None:
    """Whether a ``-config``, ``-sync`` or ``-failover`` ConfigMap of a shard exists (watched by name).

    None when no ConfigMap is watched at all (the group is missing from the request): then
    absence is no evidence, and only the cleanup Job's success says they are gone.
    """
    if related is None or related.config_maps is None:
        return None
    watched = set(names.watched_config_maps(name, shards))
    return any(each.metadata.name in watched for each in related.config_maps.values())


@dataclass(frozen=True)
class _Owned:
    """The children as observed: the ShardDB's own workloads, Services, budgets and seed Jobs."""

    statefulset: StatefulSetView | None = None
    asked_since: datetime | None = None  # when the StatefulSet last asked for more pods
    service: bool = False
    cache_service: bool = False
    budgets: frozenset[str] = frozenset()
    cache: CacheView | None = None
    jobs: tuple[SeedJobView, ...] = ()
    observed: Mapping[tuple[str, str], int | None] = field(default_factory=dict)


def _children(name: str, children: Children | None, related: Related | None) -> _Owned:
    if children is None:
        return _Owned()
    db = names.db_name(name)
    statefulset = None
    asked_since: datetime | None = None
    for sts in (children.statefulsets or {}).values():
        if sts.metadata.name == db:
            statefulset = _statefulset_view(sts)
            asked_since = _last_spec_write(sts)
    services = {svc.metadata.name for svc in (children.services or {}).values()}
    observed_budgets = [pdb.metadata.name for pdb in (children.budgets or {}).values()]
    budgets = frozenset(
        component
        for component, budget in ((names.DB, db), (names.CACHE, names.cache_name(name)))
        if budget in observed_budgets
    )
    # A shard with members has a budget of its own (``<name>-db-<shard>``), gone before the shards drain too.
    if any(names.shard_ordinal(name, budget) is not None for budget in observed_budgets):
        budgets |= {names.DB}
    cache = None
    for deployment in (children.deployments or {}).values():
        if deployment.metadata.name == names.cache_name(name):
            cache = _cache_view(deployment)
    jobs = tuple(sorted(_seed_jobs(name, (children.jobs or {}).values()), key=lambda job: job.shards))
    if related is not None and related.pods is not None:
        jobs = _podless(jobs, name, related.pods.values())
    return _Owned(
        statefulset=statefulset,
        asked_since=asked_since,
        service=db in services,
        cache_service=names.cache_name(name) in services,
        budgets=budgets,
        cache=cache,
        jobs=jobs,
        observed=_observed(children),
    )


def _statefulset_view(sts: StatefulSet) -> StatefulSetView:
    """What the lifecycle reads of a shards' StatefulSet, today's or a shard's with members."""
    size, storage_class = _claim_storage(sts.spec.volume_claim_templates)
    return StatefulSetView(
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
            on_delete=sts.spec.update_strategy.get("type") == ON_DELETE,
            status_replicas=sts.status.replicas,
        ),
        template=sts.spec.template,
        last_applied=sts.metadata.annotations.get(last_applied.LAST_APPLIED),
        made=TemplateRecord.read(sts.metadata.annotations),
    )


@dataclass
class _Pods:
    """What the related pods and endpoints show: who serves, how many pods exist, which are in trouble."""

    registered: frozenset[int] = frozenset()
    cache_pods: int = 0
    shard_pods: int = 0
    stuck: list[StuckPod] = field(default_factory=list)
    lost: list[LostPod] = field(default_factory=list)
    missing: tuple[MissingPod, ...] = ()


def _pods(name: str, related: Related | None, sts: StatefulSetView | None, asked_since: datetime | None) -> _Pods:
    found = _Pods()
    if related is None:
        return found
    found.registered = _registered(name, related.endpointslices or {})
    for pod in (related.pods or {}).values():
        labels = pod.metadata.labels
        finished = pod.status.phase in ("Succeeded", "Failed")
        terminating = pod.metadata.deletion_timestamp is not None
        if labels.get(names.INSTANCE_LABEL) != name or (finished and not terminating):
            continue  # a finished pod that stays (evicted, completed) cannot be flushing or serving
        # A kubelet marks a deleted pod finished once its containers stopped, then tears it down and
        # removes it: it counts until it is gone, so the shards never start to stop beside it.
        ordinal = names.shard_ordinal(name, pod.metadata.name)
        problem = None if finished else stuck(pod, ordinal)
        if problem is not None and not terminating:
            found.stuck.append(problem)
        gone = lost(pod, ordinal)
        if gone is not None:
            found.lost.append(gone)
        component = labels.get(names.COMPONENT_LABEL)
        if component == names.CACHE:
            found.cache_pods += 1
        elif component == names.DB:
            found.shard_pods += 1
    if related.pods is not None and sts is not None:
        caught_up = sts.rollout.observed_generation >= sts.rollout.generation
        found.missing = missing_pods(
            name, sts.replicas, sts.status_replicas, caught_up, related.pods.values(), asked_since
        )
    return found


def _last_spec_write(sts: StatefulSet) -> datetime | None:
    """When the StatefulSet last asked for more pods, at the latest: created, or any write but its status's."""
    times = [clock.parse(sts.metadata.creation_timestamp)]
    times += [clock.parse(entry.time) for entry in sts.metadata.managed_fields if entry.subresource != "status"]
    known = [moment for moment in times if moment is not None]
    return max(known, default=None)


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
        (kinds.SERVICEACCOUNT, children.service_accounts),
        (kinds.ROLE, children.roles),
        (kinds.ROLEBINDING, children.role_bindings),
        (kinds.CRONJOB, children.cronjobs),
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
        refused=short(failure.message) if failure is not None else None,
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
            message=short(failure.message) if failure else "",
            podless_since=None if counted else clock.parse(status.start_time),
        )


def _podless(jobs: tuple[SeedJobView, ...], name: str, found: Iterable[Pod]) -> tuple[SeedJobView, ...]:
    """Keep a Job's podless mark only where no pod of it is observed (its pod's event came first).

    A Job's pod carries its name as a label, and is named after it (``<job>-<suffix>``).
    """
    pods = list(found)

    def has_pod(job: str) -> bool:
        return any(
            pod.metadata.labels.get(names.JOB_NAME_LABEL) == job
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
