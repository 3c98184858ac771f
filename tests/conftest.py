"""Shared fixtures: the ASGI app in-process and a real uvicorn server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from hooks.app import create_app

from .server import serve


@pytest.fixture
def asgi() -> Iterator[TestClient]:
    """The app in-process, lifespan started (so /readyz is true)."""
    with TestClient(create_app()) as client:
        yield client


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    with serve() as base:
        yield base


@pytest.fixture
def http(server_url: str) -> Iterator[httpx.Client]:
    """A client of the live uvicorn server."""
    with httpx.Client(base_url=server_url, timeout=10.0) as client:
        yield client


# Generated tests: CI (CI=true) runs a fixed, reproducible set of examples; elsewhere each run explores anew.
from os import environ as _environ  # noqa: E402

from hypothesis import settings as _hypothesis  # noqa: E402

_hypothesis.register_profile("ci", derandomize=True, database=None, print_blob=True)
_hypothesis.load_profile("ci" if _environ.get("CI") else "default")
