"""Is what the hooks ask for already in place? A stored object *contains* a desired one.

The API server adds defaults (probe timeouts, pull policies) but never drops or
rewrites a field the hooks render (they render canonical forms), so "every
rendered field has the same value in the stored object" means nothing is left
to roll out.
"""

from __future__ import annotations

import json
from typing import Any

from .hook_request import unfit

# Metacontroller's record, on each child, of the object the hooks last asked for.
LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"


def read(recorded: str | None) -> dict[str, Any] | None:
    """The object last asked for, from a child's record of it; None if absent or unfit to send again."""
    try:
        last = json.loads(recorded) if recorded else None
    except (ValueError, RecursionError):
        return None
    return last if isinstance(last, dict) and not unfit(last) else None


def contains(stored: Any, desired: Any) -> bool:
    """Every field of ``desired`` has the same value in ``stored``; lists match item by item."""
    if isinstance(desired, dict):
        return isinstance(stored, dict) and all(k in stored and contains(stored[k], v) for k, v in desired.items())
    if isinstance(desired, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(desired)
            and all(contains(s, d) for s, d in zip(stored, desired, strict=True))
        )
    return bool(stored == desired) and type(stored) is type(desired)
