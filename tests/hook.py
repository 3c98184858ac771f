"""Ways to call the hooks: in-process (pure handler) or over HTTP."""

from __future__ import annotations

import json
from typing import Any

import httpx

from hooks import handler

Obj = dict[str, Any]
FIXED_NOW = "2026-01-01T00:00:00Z"


def direct(request: Obj, finalizing: bool) -> Obj:
    """The handler without HTTP; finalizing requests go to the finalize hook as Metacontroller does."""
    return handler.sync(json.dumps(request).encode(), finalize=finalizing, now=lambda: FIXED_NOW).body


def over_http(client: httpx.Client) -> Any:
    def call(request: Obj, finalizing: bool) -> Obj:
        response = client.post("/finalize" if finalizing else "/sync", json=request)
        assert response.status_code == 200, response.text
        body: Obj = response.json()
        return body

    return call
