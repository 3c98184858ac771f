"""What an answer changes against what Metacontroller observed: the service's log line.

Read off the rendered children, so a new child kind shows up here without a line of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def changes(
    observed: Mapping[tuple[str, str], int | None], desired: list[dict[str, Any]], finalized: bool
) -> list[str]:
    """Creates, scales and deletions, in the answer's order, then ``finalized``."""
    out: list[str] = []
    wanted: set[tuple[str, str]] = set()
    for child in desired:
        key = (child["kind"], child["metadata"]["name"])
        wanted.add(key)
        replicas = (child.get("spec") or {}).get("replicas")
        if key not in observed:
            out.append(f"create {key[0]}/{key[1]}" + (f" replicas={replicas}" if replicas is not None else ""))
        elif replicas is not None and observed[key] != replicas:
            out.append(f"scale {key[0]}/{key[1]} {observed[key]}->{replicas}")
    out.extend(f"delete {kind}/{name}" for kind, name in sorted(observed) if (kind, name) not in wanted)
    if finalized:
        out.append("finalized")
    return out
