"""Prometheus metrics of the hook service, on a registry of its own.

Two kinds: counters of the service's calls, and one view per ShardDB of what this replica last
answered for it (``views.ShardDBViews``). Several replicas sit behind one Service and each sees only
the syncs it served, so every per-ShardDB series carries the time of that sync; the shipped
recording rules keep, per ShardDB, the view of the replica that synced it last
(``metacontroller/components/monitoring/prometheus/rules.yaml``, docs/operating/monitoring.md).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..clock import Clock, system_clock
from .settings import DEFAULT_VIEW_TTL_SECONDS
from .views import ShardDBViews

CONTENT_TYPE = CONTENT_TYPE_LATEST
HOOKS = {"/sync": "sync", "/finalize": "finalize", "/customize": "customize"}
# A refusal answered before any route reads the request, by its status: a token that does not match (a
# rotation that reached one side only), a body or head too large, a client too slow.
REFUSALS = {401: "unauthorized", 408: "too_slow", 413: "too_large", 431: "too_large"}


class Metrics:
    """One instance per app, so tests that build several apps never share counts."""

    def __init__(self, clock: Clock = system_clock, view_ttl_seconds: float = DEFAULT_VIEW_TTL_SECONDS) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter(
            "sharddb_hook_calls",
            "Hook calls by hook and outcome (ok, not_modified, client_error, server_error; refused before the hook "
            "read them: unauthorized, too_large, too_slow).",
            ["hook", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "sharddb_hook_duration_seconds",
            "Time to answer a hook call, parse to serialized answer.",
            ["hook"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=self.registry,
        )
        self.decisions = Counter(
            "sharddb_decisions",
            "Lifecycle decisions by the phase they put a ShardDB in.",
            ["phase"],
            registry=self.registry,
        )
        self.previous_token = Counter(
            "sharddb_hook_previous_token_calls",
            "Calls let in by the previous token (SHARDDB_AUTH_PREVIOUS_TOKEN_FILE), by hook: a rotation is not "
            "over while this rises.",
            ["hook"],
            registry=self.registry,
        )
        self.views = ShardDBViews(clock, view_ttl_seconds)
        self.registry.register(self.views)

    def refused(self, path: str | None, status: int) -> None:
        """Counts a refusal by the middleware or the server; ``path`` is None where no request head was read."""
        hook = "unknown" if path is None else HOOKS.get(path, "other")
        self.calls.labels(hook, REFUSALS.get(status, "client_error")).inc()

    def let_in_by_previous(self, path: str) -> None:
        """Counts a call that only the previous token let in."""
        self.previous_token.labels(HOOKS.get(path, "other")).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
