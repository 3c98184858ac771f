"""The ShardDB lifecycle: which children exist, at what size, and why.

Pure functions over a ``Snapshot``; no I/O, and the clock only as the reading the
snapshot carries (held against the pods' own timestamps). Gates, in order
(``gates``): provision shards → seed once all are ready → wait until all are
registered in discovery → start the cache. Deletion and hibernation run the same
idea backwards (``teardown``); a rollout moves the shards first and the cache after
them (``rollout``); ``wording`` says it all in the status. ``decide`` is the entry.
"""

from __future__ import annotations

from dataclasses import replace

from .. import names
from ..snapshot import Snapshot
from .decision import ConditionState, Decision, Phase
from .gates import paused, sync
from .rollout import Rendered, render
from .teardown import finalize, hibernate, unfit_name

__all__ = ["ConditionState", "Decision", "Phase", "decide"]


def decide(snap: Snapshot) -> Decision:
    """The desired world for a snapshot; ``snap.finalizing`` selects teardown.

    Every answer carries the memory of an edit a child without a template record still lags,
    frozen or stopping ones too, so the edit rolls once the children may roll again.
    """
    return replace(_decide(snap, render(snap)), unrecorded_generation=snap.unrecorded_generation)


def _decide(snap: Snapshot, rendered: Rendered) -> Decision:
    """Deletion runs whatever the spec says (a paused ShardDB still tears down in order)."""
    if snap.finalizing:
        return finalize(snap, rendered)
    unfit = names.unfit(snap.name)
    if unfit is not None:
        return unfit_name(snap, rendered, *unfit)
    if snap.spec.hibernated and not snap.spec.paused:
        return hibernate(snap, rendered)
    decision = sync(snap, rendered)
    return paused(decision) if snap.spec.paused else decision
