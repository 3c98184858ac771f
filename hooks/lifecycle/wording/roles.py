"""What a shard with members waits for, and how long its role trouble has lasted (``replication.roles`` times it)."""

from __future__ import annotations

from ...replication.health import NO_PRIMARY, NO_SYNC_STANDBY, STANDBY_NOT_STREAMING
from ...replication.roles import AT_ONCE, RoleTrouble
from .lists import listed

# What a shard within its grace waits for, by its health's reason.
WAITS_FOR = {
    NO_PRIMARY: "for Patroni to elect a primary",
    NO_SYNC_STANDBY: "for a synchronous standby",
    STANDBY_NOT_STREAMING: "for its standbys to stream",
}


def waiting_message(waiting: tuple[RoleTrouble, ...]) -> str:
    """``shard demo-db-1 waiting for Patroni to elect a primary``, per reason; names only, so it stays put."""
    groups: dict[str, list[str]] = {}
    for trouble in waiting:
        shards = groups.setdefault(trouble.reason, [])
        if trouble.name not in shards:  # a shard with two standbys waiting is named once
            shards.append(trouble.name)
    return "; ".join(
        f"shard{'' if len(shards) == 1 else 's'} {listed(shards)} waiting {WAITS_FOR.get(reason, reason)}"
        for reason, shards in groups.items()
    )


def failing_message(failing: tuple[RoleTrouble, ...], reason: str, grace_seconds: int) -> str:
    """The failing shards of one ``reason``: each health message, and how long it has lasted when graced."""
    messages = [trouble.message for trouble in failing if trouble.reason == reason]
    lasted = "" if reason in AT_ONCE else f", for more than {grace_seconds} s"
    return "; ".join(f"{message}{lasted}" for message in messages)
