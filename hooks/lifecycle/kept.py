"""What a ShardDB keeps whatever the gates say (the seed memory, what its StatefulSet cannot change),
read by the gates and the teardown alike so a stop and a start agree on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import quantity
from ..snapshot import Snapshot

PARALLEL = "Parallel"


@dataclass(frozen=True)
class Kept:
    """What the shards keep at one request, read once for the gates, the status and the teardown."""

    seeded: int
    size: str
    storage_class: str | None
    policy: str
    claim_templates: tuple[dict[str, Any], ...]
    as_asked: bool  # the kept storage is what ``spec.storage`` asks


def read(snap: Snapshot) -> Kept:
    """The seed memory, the volumes' size and class, and the StatefulSet's immutable fields."""
    size, storage_class, as_asked = _storage(snap)
    policy, claim_templates = _immutable(snap)
    return Kept(_seeded(snap), size, storage_class, policy, claim_templates, as_asked)


def _seeded(snap: Snapshot) -> int:
    """Largest shard count whose seed finished, from every place that remembers it."""
    from_jobs = max((job.shards for job in snap.seed_jobs if job.succeeded), default=0)
    from_sts = snap.statefulset.seeded_annotation if snap.statefulset else 0
    # Shards with members carry the same memory on each shard's StatefulSet.
    from_sets = max((each.statefulset.seeded_annotation for each in snap.shard_sets), default=0)
    # A restored ShardDB's shards hold the source's data: seeding them would write over it. The CRD keeps
    # spec.shards fixed while spec.restore is set, so every shard there is is a restored one.
    restored = snap.spec.shards if snap.spec.restore is not None else 0
    return max(snap.prior_seeded, from_sts, from_jobs, from_sets, restored)


def _storage(snap: Snapshot) -> tuple[str, str | None, bool]:
    """Volume claim templates are immutable: once the StatefulSet (or a shard's, with members) exists, keep them.

    Also whether they are what the spec asks, compared by value: ``1024Mi`` asks for exactly the
    ``1Gi`` the server stored.
    """
    sts = snap.statefulset or (snap.shard_sets[0].statefulset if snap.shard_sets else None)
    asked = snap.spec.storage
    if sts is None or sts.storage_size is None:
        return quantity.canonical(asked.size), asked.storage_class_name, True
    try:
        same_size = quantity.parse(sts.storage_size) == quantity.parse(asked.size)
    except quantity.QuantityError:
        same_size = sts.storage_size == asked.size
    return sts.storage_size, sts.storage_class, same_size and sts.storage_class == asked.storage_class_name


def _immutable(snap: Snapshot) -> tuple[str, tuple[dict[str, Any], ...]]:
    """What an existing StatefulSet keeps as it is: its pod management policy and claim templates."""
    sts = snap.statefulset
    if sts is None:
        return PARALLEL, ()
    return sts.pod_management_policy or PARALLEL, sts.claim_templates
