"""Prometheus metrics of the hook service, on a registry of its own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """One instance per app, so tests that build several apps never share counts."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter(
            "sharddb_hook_calls",
            "Hook calls by hook and outcome (ok, not_modified, client_error, server_error).",
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

    def render(self) -> bytes:
        return generate_latest(self.registry)
