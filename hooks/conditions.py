"""metav1.Condition bookkeeping: a transition time moves only when the status does."""

from __future__ import annotations

from typing import Any

from .hook_request import Condition
from .lifecycle import ConditionState


def stamp(
    states: tuple[ConditionState, ...],
    prior: tuple[Condition, ...],
    generation: int,
    now: str,
) -> list[dict[str, Any]]:
    """Conditions in metav1.Condition shape; ``now`` is written only where a status flips."""
    before = {condition.type: condition for condition in prior}
    out = []
    for state in states:
        status = "True" if state.status else "False"
        previous = before.get(state.type)
        if previous is not None and previous.status == status and previous.last_transition_time:
            since = previous.last_transition_time
        else:
            since = now
        out.append(
            {
                "type": state.type,
                "status": status,
                "observedGeneration": generation,
                "lastTransitionTime": since,
                "reason": state.reason,
                "message": state.message,
            }
        )
    return out
