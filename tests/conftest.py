"""Shared fixtures: the ASGI app in-process and a real uvicorn server on loopback."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import settings as hypothesis_settings

from hooks.service.app import create_app
from testbed.real.server import serve

from .support.prerequisites import refuse_reads_under

pytest_plugins = ("tests.support.evidence",)  # a failing test on a real stack keeps its logs (.evidence/)
SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def pytest_configure(config: pytest.Config) -> None:
    """A session that leaves out the tests marked ``shared`` (``make unit``) reads nothing of ``shared/``."""
    if "not shared" in (config.option.markexpr or ""):
        sys.addaudithook(refuse_reads_under(SHARED))


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


@pytest.fixture(params=["uvicorn", "asgi"])
def client(request: pytest.FixtureRequest, server_url: str) -> Iterator[httpx.Client]:
    """The same test twice: over real HTTP to uvicorn, and in-process against the ASGI app."""
    if request.param == "uvicorn":
        with httpx.Client(base_url=server_url, timeout=10.0) as live:
            yield live
    else:
        with TestClient(create_app()) as local:
            yield local


# Generated tests: CI (CI=true) runs a fixed, reproducible set of examples; elsewhere each run explores anew.
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "default")
