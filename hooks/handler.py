"""One hook call from bytes to answer: parse → observe → decide → render.

No HTTP here, so tests and benchmarks can drive the whole path directly; the
clock is passed in and read only if a condition changes status.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from . import kinds, names, render
from .changes import changes
from .conditions import stamp
from .contract import Parent, decode_customize, decode_sync, observed_children
from .errors import from_validation
from .lifecycle import Decision, decide
from .snapshot import Snapshot, observe
from .spec import ShardDBSpec

FINALIZE_RESYNC_SECONDS = 5.0


def utc_now() -> str:
    """RFC 3339 to the second, the precision metav1.Time keeps."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Outcome:
    """The answer plus what the edge logs and counts."""

    body: dict[str, Any]
    parent: str
    phase: str
    changes: list[str]


def _spec(parent: Parent) -> ShardDBSpec:
    try:
        return ShardDBSpec.model_validate(parent.spec)
    except ValidationError as error:
        raise from_validation(error, "parent.spec") from None


def sync(body: bytes, *, finalize: bool, now: Callable[[], str] = utc_now) -> Outcome:
    """Answer a sync (or, with ``finalize``, a finalize) request."""
    request = decode_sync(body)
    spec = _spec(request.parent)
    snap = observe(request, spec)
    if finalize and not snap.finalizing:
        snap = replace(snap, finalizing=True)
    decision = decide(snap)
    children = render.frozen(observed_children(body)) if decision.frozen else render.children(snap, decision)
    reply = answer(snap, decision, children, now, finalize=finalize)
    return Outcome(
        body=reply,
        parent=f"{snap.namespace}/{snap.name}",
        phase=decision.phase.value,
        changes=changes(snap.observed, reply["children"], decision.finalized),
    )


def answer(
    snap: Snapshot, decision: Decision, children: list[dict[str, Any]], now: Callable[[], str], *, finalize: bool
) -> dict[str, Any]:
    """The response body for a decision and its children; ``now`` is called at most once."""
    clock: list[str] = []

    def lazy_now() -> str:
        if not clock:
            clock.append(now())
        return clock[0]

    conditions = stamp(decision.conditions, snap.prior_conditions, snap.generation, lazy_now)
    body: dict[str, Any] = {
        "status": render.status(decision, conditions),
        "children": children,
    }
    if snap.finalizing and not decision.finalized:
        body["resyncAfterSeconds"] = FINALIZE_RESYNC_SECONDS
    if finalize:
        body["finalized"] = decision.finalized
    return body


def customize(body: bytes) -> dict[str, Any]:
    """Ask Metacontroller to watch this ShardDB's EndpointSlices and Pods too."""
    request = decode_customize(body)
    _spec(request.parent)  # a ShardDB the sync hook would refuse is refused here too, naming the field
    name = request.parent.metadata.name
    if len(name) > names.LABEL_VALUE_MAX:
        return {"relatedResources": []}  # no selector can name it, and no pod of ours carries it
    return {
        "relatedResources": [
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
    }
