"""The hook service assembled: settings, state, routes, the OpenAPI document and the middleware.

Each part lives in a module of its own, so an endpoint reads on its own: the endpoints in ``routes``,
one hook call from body to log line in ``runner``, what the routes reach of their app in ``state``,
and what refuses a request before a route reads it in ``middleware``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from fastapi import FastAPI

from .. import __version__
from ..clock import Clock, system_clock
from . import logs, openapi, state
from .auth import PreviousTokenFile, TokenFile, Tokens
from .health import Health
from .metrics import Metrics
from .middleware import BearerAuth, BodyLimit
from .routes import add_routes
from .settings import Settings


def create_app(settings: Settings | None = None, clock: Clock = system_clock) -> FastAPI:
    """The hook service as an ASGI app; a fresh one per call, so tests never share state.

    ``clock`` is read once per hook call; a test passes one it sets.
    """
    settings = settings or Settings.from_env()
    logger = logs.setup(settings.log_level)
    metrics = Metrics(clock, settings.metrics_view_ttl_seconds)
    health = Health()
    tokens = _tokens(settings, logger)
    app = FastAPI(
        title="ShardDB hooks",
        version=__version__,
        summary="Metacontroller CompositeController hooks for ShardDB",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    state.install(app, clock, metrics, health)
    add_routes(app)
    app.openapi = partial(_openapi, app)  # type: ignore[method-assign]
    _add_middleware(app, settings, metrics, tokens)
    return app


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Ready from the server's start to its stop (``HookServer`` also turns readiness off on a signal)."""
    health = state.health(app)
    health.started = True
    yield
    health.started = False


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document with the hook requests' schemas added, built once: the routes read raw bodies."""
    if app.openapi_schema is None:
        document = FastAPI.openapi(app)
        document.setdefault("components", {}).setdefault("schemas", {}).update(openapi.components())
        app.openapi_schema = document
    return app.openapi_schema


def _add_middleware(app: FastAPI, settings: Settings, metrics: Metrics, tokens: Tokens | None) -> None:
    """Refusals are counted with the hooks' answers, so a token mismatch after a rotation shows in the metrics."""
    refused = metrics.refused
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, timeout=settings.body_timeout_seconds, refused=refused)
    if tokens is not None:  # outermost: an unauthenticated body is never read
        open_paths = {"/healthz", "/readyz"} | (set() if settings.metrics_auth else {"/metrics"})
        app.add_middleware(
            BearerAuth, tokens=tokens, open_paths=open_paths, refused=refused, previous=metrics.let_in_by_previous
        )


def _tokens(settings: Settings, logger: logging.Logger) -> Tokens | None:
    """The tokens a call may present, or None when the hooks ask for none."""
    if settings.auth_token_file is None:
        return None
    previous = settings.auth_previous_token_file
    current = TokenFile(settings.auth_token_file, logger)
    return Tokens(current, PreviousTokenFile(previous, logger) if previous else None)
