"""Observe, for shards with members: each shard's StatefulSet, what Patroni marks on its pods and in its
``-sync`` ConfigMap, and whether its primary is registered, reduced to ``ShardSetView``s.

Patroni alone decides who is primary; this only reads what it wrote (``hooks/replication.py``
says how each mark is read).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec

from . import names
from .hook_request import Children, EndpointSlice, Pod, Related, StatefulSet
from .replication import (
    MEMBERS_ANNOTATION,
    PRIMARY,
    SCOPE_LABEL,
    Endpoint,
    MemberPod,
    Observed,
    Plan,
    SyncRecord,
    registered,
    role_service_name,
    shard_health,
    shard_name,
    sync_config_map,
)
from .snapshot import ShardSetView, StatefulSetView

# Health read against the strictest shape (synchronous) when no shard records a usable one.
_UNRECORDED = Plan(members=2, synchronous=True)


def shard_sets(
    name: str,
    children: Children | None,
    related: Related | None,
    single_copy: bool,
    view: Callable[[StatefulSet], StatefulSetView],
) -> tuple[tuple[ShardSetView, ...], Observed]:
    """Each per-shard StatefulSet observed, by shard, and the shards' shape (``single_copy``: today's exists)."""
    found: dict[int, StatefulSet] = {}
    for sts in ((children.statefulsets if children else None) or {}).values():
        shard = names.shard_ordinal(name, sts.metadata.name)
        if shard is not None and MEMBERS_ANNOTATION in sts.metadata.annotations:
            found[shard] = sts
    shape = Observed.from_annotations(single_copy, [found[shard].metadata.annotations for shard in sorted(found)])
    if not found:
        return (), shape
    plan = shape.plan if shape.plan is not None and shape.plan.patroni else _UNRECORDED
    pods = _members(name, related)
    records = {each.metadata.name: each for each in ((related.config_maps if related else None) or {}).values()}
    slices = (related.endpointslices if related else None) or {}
    out = []
    for shard in sorted(found):
        scope = shard_name(name, shard)
        record = records.get(sync_config_map(name, shard))
        sync = SyncRecord.from_config_map(msgspec.to_builtins(record) if record is not None else None)
        health = shard_health(scope, plan, pods.get(scope, []), sync)
        endpoints = _endpoints(slices, role_service_name(name, shard, PRIMARY))
        out.append(ShardSetView(shard, view(found[shard]), health, registered(health.primary, endpoints)))
    return tuple(out), shape


def _members(name: str, related: Related | None) -> dict[str, list[MemberPod]]:
    """The member pods of this ShardDB, by the Patroni scope (shard) their label names."""
    out: dict[str, list[MemberPod]] = {}
    for pod in ((related.pods if related else None) or {}).values():
        scope = pod.metadata.labels.get(SCOPE_LABEL)
        if scope is None or pod.metadata.labels.get(names.INSTANCE_LABEL) != name:
            continue
        out.setdefault(scope, []).append(_member(pod))
    return {scope: sorted(found, key=lambda member: member.name) for scope, found in out.items()}


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
