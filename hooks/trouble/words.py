"""How pod trouble is listed in a status message (a noun per component, a few names then a count, one
short line), shared by every kind of trouble so ``Degraded`` and ``Progressing`` list pods alike.
"""

from __future__ import annotations

from .. import names

NOUNS = {names.DB: "shard", names.SEED: "seed", names.CACHE: "cache"}
SHOWN = 3  # pods named per group; the rest are counted
DETAIL_MAX = 120


def listed(items: list[str]) -> str:
    """``a, b, c and 2 more``."""
    shown = ", ".join(items[:SHOWN])
    return shown + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def short(text: str) -> str:
    """One line, at most ``DETAIL_MAX`` characters, so a long message cannot swamp the status."""
    line = " ".join(text.split())
    return line if len(line) <= DETAIL_MAX else line[: DETAIL_MAX - 1] + "…"
