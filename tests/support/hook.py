"""Ways to call the hooks: in-process (pure handler) or over HTTP, clocks a test sets, and what their metrics say."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from hooks import clock, handler
from hooks.clock import Clock

Obj = dict[str, Any]
Labels = tuple[tuple[str, str], ...]
# Two hours after the stand-in World creates its objects: past the longest pod start grace,
# so a pod the World fails (without a later ``since``) has been stuck long enough to count.
FIXED_NOW = "2026-01-01T02:00:00Z"


def moment(text: str) -> datetime:
    """An RFC 3339 time as the clock would read it."""
    parsed = clock.parse(text)
    assert parsed is not None, text
    return parsed


def at(text: str) -> Clock:
    """A clock stopped at ``text``."""
    stopped = moment(text)
    return lambda: stopped


class ManualClock:
    """A clock that moves only when the test moves it."""

    def __init__(self, start: str = FIXED_NOW) -> None:
        self.now = moment(start)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def direct(request: Obj, finalizing: bool) -> Obj:
    """The handler without HTTP; finalizing requests go to the finalize hook as Metacontroller does."""
    return handler.sync(json.dumps(request).encode(), finalize=finalizing, now=at(FIXED_NOW)).body


def over_http(client: httpx.Client) -> Any:
    def call(request: Obj, finalizing: bool) -> Obj:
        response = client.post("/finalize" if finalizing else "/sync", json=request)
        assert response.status_code == 200, response.text
        body: Obj = response.json()
        return body

    return call


def series(exposition: str, name: str) -> dict[Labels, float]:
    """The samples named ``name`` in a ``/metrics`` exposition, by their labels, sorted."""
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == name
    }
