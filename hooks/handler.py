"""One hook call from bytes to answer: parse → observe → decide → render.

No HTTP here, so tests and benchmarks can drive the whole path directly; the
clock is passed in and read once per call: a condition whose status changes is
stamped with that reading, and a pod's grace is held against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from . import kinds, names, render
from .clock import Clock, rfc3339, system_clock
from .conditions import stamp
from .errors import from_validation
from .hook_request import Parent, decode_customize, decode_sync, observed_children
from .lifecycle import Decision, decide
from .logline import changes
from .observe import observe
from .snapshot import Snapshot
from .spec import MAX_POD_START_GRACE_SECONDS, ShardDBSpec

FINALIZE_RESYNC_SECONDS = 5.0
# A grace runs out at a whole second; the resync comes at it or just after, never sooner than this.
MIN_RECHECK_SECONDS = 1.0


@dataclass(frozen=True)
class Outcome:
    """The answer plus what the edge logs and counts."""

    body: dict[str, Any]
    parent: str
    phase: str
    changes: list[str]
    # The answer holds for this request until then (a pod's grace runs out); None: for good.
    fresh_until: datetime | None = None


def _spec(parent: Parent) -> ShardDBSpec:
    try:
        return ShardDBSpec.model_validate(parent.spec)
    except ValidationError as error:
        raise from_validation(error, "parent.spec") from None


def sync(body: bytes, *, finalize: bool, now: Clock = system_clock) -> Outcome:
    """Answer a sync (or, with ``finalize``, a finalize) request at one reading of ``now``."""
    moment = now()
    request = decode_sync(body)
    spec = _spec(request.parent)
    snap = observe(request, spec, moment)
    if finalize and not snap.finalizing:
        snap = replace(snap, finalizing=True)
    decision = decide(snap)
    children = render.frozen(observed_children(body)) if decision.frozen else render.children(snap, decision)
    reply = answer(snap, decision, children, moment, finalize=finalize)
    return Outcome(
        body=reply,
        parent=f"{snap.namespace}/{snap.name}",
        phase=decision.phase.value,
        changes=changes(snap.observed, reply["children"], decision.finalized),
        fresh_until=min(
            (moment for moment in (decision.recheck_at, decision.holds_until) if moment is not None), default=None
        ),
    )


def answer(
    snap: Snapshot, decision: Decision, children: list[dict[str, Any]], now: datetime, *, finalize: bool
) -> dict[str, Any]:
    """The response body for a decision and its children, at the clock reading ``now``."""
    conditions = stamp(decision.conditions, snap.prior_conditions, snap.generation, rfc3339(now))
    body: dict[str, Any] = {
        "status": render.status(decision, conditions),
        "children": children,
    }
    if snap.finalizing and not decision.finalized:
        body["resyncAfterSeconds"] = FINALIZE_RESYNC_SECONDS
    elif decision.recheck_at is not None:
        body["resyncAfterSeconds"] = recheck_after(decision.recheck_at, now)
    if finalize:
        body["finalized"] = decision.finalized
    return body


def recheck_after(recheck_at: datetime, now: datetime) -> float:
    """Whole seconds until ``recheck_at`` (a stuck pod may send no event then), at least one.

    Never more than the longest grace: a pod timestamp far in the future asks again within it.
    """
    seconds = math.ceil((recheck_at - now).total_seconds())
    return float(min(max(seconds, MIN_RECHECK_SECONDS), MAX_POD_START_GRACE_SECONDS))


def customize(body: bytes) -> dict[str, Any]:
    """Ask Metacontroller to watch this ShardDB's EndpointSlices and Pods too (and, with members, Patroni's marks)."""
    request = decode_customize(body)
    spec = _spec(request.parent)  # a ShardDB the sync hook would refuse is refused here too, naming the field
    name = request.parent.metadata.name
    if len(name) > names.LABEL_VALUE_MAX:
        return {"relatedResources": []}  # no selector can name it, and no pod of ours carries it
    rules = [
        {
            "apiVersion": kinds.ENDPOINTSLICE.api_version,
            "resource": kinds.ENDPOINTSLICE.plural,
            "labelSelector": {"matchLabels": {names.SERVICE_NAME_LABEL: names.db_name(name)}},
        },
        {
            "apiVersion": kinds.POD.api_version,
            "resource": kinds.POD.plural,
            "labelSelector": {"matchLabels": {names.NAME_LABEL: names.APP, names.INSTANCE_LABEL: name}},
        },
    ]
    if spec.replication.members >= 2:
        rules += members_related(name, spec.shards)
    return {"relatedResources": rules}


def members_related(name: str, shards: int) -> list[dict[str, Any]]:
    """With members: each shard's ``-primary`` EndpointSlices (registration) and Patroni's ``-sync`` ConfigMaps.

    The ConfigMaps by name, never by Patroni's labels: those also match its leader ConfigMap,
    whose lock Patroni renews every loop_wait, and each write would cost a sync of the ShardDB.
    ``-config`` and ``-failover`` change rarely; they tell the finalize hook Patroni's state is left.
    Shards never shrink, so ``spec.shards`` names every shard there is.
    """
    primaries = [names.role_service_name(name, shard, names.PRIMARY) for shard in range(shards)]
    return [
        {
            "apiVersion": kinds.ENDPOINTSLICE.api_version,
            "resource": kinds.ENDPOINTSLICE.plural,
            "labelSelector": {
                "matchExpressions": [{"key": names.SERVICE_NAME_LABEL, "operator": "In", "values": primaries}]
            },
        },
        {
            "apiVersion": kinds.CONFIGMAP.api_version,
            "resource": kinds.CONFIGMAP.plural,
            "names": names.watched_config_maps(name, shards),
        },
    ]
