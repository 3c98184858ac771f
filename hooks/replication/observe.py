"""Observe, for shards with members: each shard's StatefulSet, what Patroni marks on its pods and in its
``-sync`` and ``-config`` ConfigMaps, and whether its primary is registered, reduced to ``ShardSetView``s.

Patroni alone decides who is primary; this only reads what it wrote (``marks``
says how each mark is read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime

import msgspec

from .. import clock, names
from ..hook_request import Children, EndpointSlice, Pod, Related, StatefulSet
from ..trouble.missing import MissingPod, missing_pods
from ..workloads import StatefulSetView
from .health import shard_health
from .marks import Endpoint, Failover, MemberPod, SyncRecord
from .sets import ShardSetView
from .shape import Observed, Plan

# Health read against the strictest shape (synchronous) when no shard records a usable one.
_UNRECORDED = Plan(members=2, synchronous=True)


def shard_sets(
    name: str,
    children: Children | None,
    related: Related | None,
    single_copy: bool,
    view: Callable[[StatefulSet], StatefulSetView],
    asked_since: Callable[[StatefulSet], datetime | None],
) -> tuple[tuple[ShardSetView, ...], Observed]:
    """Each per-shard StatefulSet observed, by shard, and the shards' shape (``single_copy``: today's exists).

    ``asked_since``: when a StatefulSet last asked for more pods (``observe``'s reading of its writes).
    """
    found: dict[int, StatefulSet] = {}
    for sts in ((children.statefulsets if children else None) or {}).values():
        shard = names.shard_ordinal(name, sts.metadata.name)
        if shard is not None and names.MEMBERS_ANNOTATION in sts.metadata.annotations:
            found[shard] = sts
    shape = Observed.from_annotations(single_copy, [found[shard].metadata.annotations for shard in sorted(found)])
    if not found:
        return (), shape
    plan = shape.plan if shape.plan is not None and shape.plan.patroni else _UNRECORDED
    pods = _members(name, related)
    by_scope = _pods_by_scope(name, related)
    records = {each.metadata.name: each for each in ((related.config_maps if related else None) or {}).values()}
    slices = (related.endpointslices if related else None) or {}
    out = []
    for shard in sorted(found):
        scope = names.shard_name(name, shard)
        sts = found[shard]
        record = records.get(names.sync_config_map(name, shard))
        sync = SyncRecord.from_config_map(msgspec.to_builtins(record) if record is not None else None)
        config = records.get(names.config_config_map(name, shard))
        failover = Failover.from_config_map(msgspec.to_builtins(config) if config is not None else None)
        health = shard_health(scope, plan, pods.get(scope, []), sync, failover)
        endpoints = _endpoints(slices, names.role_service_name(name, shard, names.PRIMARY))
        asked = asked_since(sts)
        members = by_scope.get(scope, [])
        missing: tuple[MissingPod, ...] = ()
        if related is not None and related.pods is not None:
            caught_up = sts.status.observed_generation >= sts.metadata.generation
            replicas = sts.spec.replicas if sts.spec.replicas is not None else 1
            missing = missing_pods(name, replicas, sts.status.replicas, caught_up, members, asked, scope)
        seen = view(sts)
        if related is not None and related.pods is not None:
            outdated = _outdated(members, sts.status.update_revision)
            seen = replace(seen, rollout=replace(seen.rollout, outdated_pods=outdated))
        out.append(
            ShardSetView(
                shard,
                seen,
                health,
                registered(health.primary, endpoints),
                since=_last_moved(asked, members),
                missing=missing,
            )
        )
    return tuple(out), shape


def _pods_by_scope(name: str, related: Related | None) -> dict[str, list[Pod]]:
    """This ShardDB's member pods as observed, by the Patroni scope (shard) their label names."""
    out: dict[str, list[Pod]] = {}
    for pod in ((related.pods if related else None) or {}).values():
        scope = pod.metadata.labels.get(names.SCOPE_LABEL)
        if scope is not None and pod.metadata.labels.get(names.INSTANCE_LABEL) == name:
            out.setdefault(scope, []).append(pod)
    return out


def _outdated(members: Iterable[Pod], update_revision: str) -> int | None:
    """Live members labelled with another revision than ``update_revision``; None when that cannot be read
    (no update revision yet, or a live pod without the StatefulSet's revision label)."""
    revisions = [
        pod.metadata.labels.get(names.REVISION_LABEL) for pod in members if pod.metadata.deletion_timestamp is None
    ]
    if not update_revision or not all(revisions):
        return None
    return sum(1 for revision in revisions if revision != update_revision)


def _last_moved(asked: datetime | None, members: Iterable[Pod]) -> datetime | None:
    """The latest of: the StatefulSet's last spec write, each live member's creation and its Ready turning.

    Read from the objects themselves, never from the hooks' own status, so the answer fed its own
    status back stays the same. A failover, a rollout or a member re-created each restart the grace.
    """
    times = [asked]
    for pod in members:
        if pod.metadata.deletion_timestamp is not None:
            continue
        times.append(clock.parse(pod.metadata.creation_timestamp))
        times += [clock.parse(c.last_transition_time) for c in pod.status.conditions if c.type == "Ready"]
    known = [moment for moment in times if moment is not None]
    return max(known, default=None)


def _members(name: str, related: Related | None) -> dict[str, list[MemberPod]]:
    """The member pods of this ShardDB, by the Patroni scope (shard) their label names."""
    return {
        scope: sorted((_member(pod) for pod in pods), key=lambda member: member.name)
        for scope, pods in _pods_by_scope(name, related).items()
    }


def _member(pod: Pod) -> MemberPod:
    return MemberPod.from_pod(msgspec.to_builtins(pod))


def _endpoints(slices: Mapping[str, EndpointSlice], service: str) -> list[Endpoint]:
    """The endpoints of ``service``'s EndpointSlices: the pod each targets and whether it is ready."""
    out = []
    for endpoint_slice in slices.values():
        if endpoint_slice.metadata.labels.get(names.SERVICE_NAME_LABEL) != service:
            continue
        for endpoint in endpoint_slice.endpoints or ():
            pod = endpoint.target_ref.name if endpoint.target_ref and endpoint.target_ref.kind in ("Pod", "") else ""
            out.append(Endpoint(pod or endpoint.hostname or None, endpoint.conditions.ready))
    return out


def registered(primary: str | None, endpoints: list[Endpoint]) -> bool:
    """The shard's primary is a ready endpoint of its ``<shard>-primary`` Service, so clients and the cache reach it."""
    return primary is not None and any(each.pod == primary and each.ready is not False for each in endpoints)
