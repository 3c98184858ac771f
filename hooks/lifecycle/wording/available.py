"""The words of ``Available``: why the ShardDB serves or does not, and how many serving shards are ready."""

from __future__ import annotations

from ...snapshot import Snapshot
from ..decision import Phase


def available_reason(snap: Snapshot, available: bool, serving_ok: bool, phase: Phase) -> str:
    if available:
        return "Ready"
    if snap.cache is not None:
        return "CacheNotReady" if serving_ok else "ShardsUnavailable"
    return phase.value


def available_message(snap: Snapshot, available: bool, ready: int, serving: int, tolerated: int) -> str:
    if available:
        restarting = " (one restarting for a rolling update)" if tolerated and ready < serving else ""
        return f"{serving} shards and the cache are serving{restarting}"
    if snap.cache is None:
        return "the cache has not started yet"
    cache = f"cache {snap.cache.ready}/{snap.spec.cache.replicas} ready"
    return f"{min(ready, serving)}/{serving} serving shards ready; {cache}"
