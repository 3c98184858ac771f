"""Prometheus metrics of the hook service, on a registry of its own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST
HOOKS = {"/sync": "sync", "/finalize": "finalize", "/customize": "customize"}
# A refusal answered before any route reads the request, by its status: a token that does not match (a
# rotation that reached one side only), a body or head too large, a client too slow.
REFUSALS = {401: "unauthorized", 408: "too_slow", 413: "too_large", 431: "too_large"}


class Metrics:
    """One instance per app, so tests that build several apps never share counts."""

    def __init__(self) -> None:
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

    def refused(self, path: str | None, status: int) -> None:
        """Counts a refusal by the middleware or the server; ``path`` is None where no request head was read."""
        hook = "unknown" if path is None else HOOKS.get(path, "other")
        self.calls.labels(hook, REFUSALS.get(status, "client_error")).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
