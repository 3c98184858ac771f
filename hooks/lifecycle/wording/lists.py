"""How names are listed in a status message (a noun per component, a few names then a count), shared by every
message so ``Degraded`` and ``Progressing`` list pods alike, and how long a message may grow.
"""

from __future__ import annotations

from ... import names

NOUNS = {names.DB: "shard", names.SEED: "seed", names.CACHE: "cache"}
SHOWN = 3  # pods named per group; the rest are counted
MESSAGE_MAX = 1024  # a condition message stays readable in `kubectl describe`


def listed(items: list[str]) -> str:
    """``a, b, c and 2 more``."""
    shown = ", ".join(items[:SHOWN])
    return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def noun(component: str) -> str:
    """The word for a component's pods: ``shard``, ``seed``, ``cache``."""
    return NOUNS.get(component, component or "other")


def capped(message: str) -> str:
    """At most ``MESSAGE_MAX`` characters, the cut marked."""
    return message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 1] + "…"
