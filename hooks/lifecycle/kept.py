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
    size, storage_class = storage(snap)
    policy, claim_templates = immutable(snap)
    asked = snap.spec.storage
    return Kept(
        seeded(snap),
        size,
        storage_class,
        policy,
        claim_templates,
        same_storage(size, storage_class, asked.size, asked.storage_class_name),
    )


def seeded(snap: Snapshot) -> int:
    """Largest shard count whose seed finished, from every place that remembers it."""
    from_jobs = max((job.shards for job in snap.seed_jobs if job.succeeded), default=0)
    from_sts = snap.statefulset.seeded_annotation if snap.statefulset else 0
    # Shards with members carry the same memory on each shard's StatefulSet.
    from_sets = max((each.statefulset.seeded_annotation for each in snap.shard_sets), default=0)
    return max(snap.prior_seeded, from_sts, from_jobs, from_sets)


def storage(snap: Snapshot) -> tuple[str, str | None]:
    """Volume claim templates are immutable: once the StatefulSet (or a shard's, with members) exists, keep them."""
    sts = snap.statefulset or (snap.shard_sets[0].statefulset if snap.shard_sets else None)
    if sts is not None and sts.storage_size is not None:
        return sts.storage_size, sts.storage_class
    return quantity.canonical(snap.spec.storage.size), snap.spec.storage.storage_class_name


def same_storage(size: str, storage_class: str | None, asked: str, asked_class: str | None) -> bool:
    """Compared by value: ``1024Mi`` asks for exactly the ``1Gi`` the server stored."""
    try:
        same_size = quantity.parse(size) == quantity.parse(asked)
    except quantity.QuantityError:
        same_size = size == asked
    return same_size and storage_class == asked_class


def immutable(snap: Snapshot) -> tuple[str, tuple[dict[str, Any], ...]]:
    """What an existing StatefulSet keeps as it is: its pod management policy and claim templates."""
    sts = snap.statefulset
    if sts is None:
        return PARALLEL, ()
    return sts.pod_management_policy or PARALLEL, sts.claim_templates
