"""What every condition's words share: how names are listed in a message (a noun per component, a few names
then a count) so ``Degraded`` and ``Progressing`` list pods alike, how long a message may grow, and which seed
Job failed.
"""

from __future__ import annotations

from ... import names
from ...snapshot import Snapshot

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


def seed_failure(snap: Snapshot, shards: int) -> str:
    """Which seed Job failed and the Job controller's reason (a deadline, too many retries)."""
    job = snap.seed_job(shards)
    text = f"seed Job {names.seed_job_name(snap.name, shards)} failed"
    if job is not None and job.reason:
        text += f": {job.reason}" + (f" ({job.message})" if job.message else "")
    return text
