"""The routes: each hook call mapped to HTTP, counted, and logged in one line.

Hook bodies are read raw and parsed by ``handler`` so the lifecycle never
depends on FastAPI; this module only maps outcomes to HTTP (a refusal's status is
``refusals.http_status``). What refuses a
request before a route reads it is in ``middleware``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response

from .. import __version__, handler
from ..clock import Clock, system_clock
from ..errors import HookError
from . import logs, openapi, refusals
from .auth import PreviousTokenFile, TokenFile, Tokens
from .etags import digest, etag, still_matches
from .health import Health
from .metrics import CONTENT_TYPE, Metrics
from .middleware import BearerAuth, BodyLimit
from .settings import Settings

JSON = "application/json"


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=JSON, headers=headers)


def create_app(settings: Settings | None = None, clock: Clock = system_clock) -> FastAPI:
    """The hook service as an ASGI app; a fresh one per call, so tests never share state.

    ``clock`` is read once per hook call; a test passes one it sets.
    """
    settings = settings or Settings.from_env()
    logger = logs.setup(settings.log_level)
    metrics = Metrics(clock, settings.metrics_view_ttl_seconds)
    health = Health()
    tokens = _tokens(settings, logger)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        health.started = True
        yield
        health.started = False

    app = FastAPI(
        title="ShardDB hooks",
        version=__version__,
        summary="Metacontroller CompositeController hooks for ShardDB",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.metrics = metrics
    app.state.health = health

    async def run_hook(request: Request, hook: str, work: Callable[[bytes, Clock], handler.Outcome]) -> Response:
        started = time.perf_counter()
        body = await request.body()
        now = clock()
        request_digest = digest(request.scope["path"], body)
        fields: dict[str, Any] = {"hook": hook}
        try:
            held = still_matches(request.headers.get("if-none-match"), request_digest, now)
            if held is not None:
                outcome_name, status = "not_modified", 304
                response = Response(status_code=304, headers={"ETag": held})
                metrics.views.unchanged(request_digest, now)
            else:
                outcome = work(body, lambda: now)
                outcome_name, status = "ok", 200
                fields.update(parent=outcome.parent, phase=outcome.phase, changes=outcome.changes)
                if outcome.phase:
                    metrics.decisions.labels(outcome.phase).inc()
                    metrics.views.answered(outcome.parent, outcome.body, request_digest, now)
                response = _json(outcome.body, headers={"ETag": etag(request_digest, outcome.fresh_until)})
        except HookError as error:
            outcome_name, status = "client_error", refusals.http_status(error)
            fields["error"] = error.message
            response = _json({"detail": error.message}, status=status)
        except Exception:  # never leak a traceback to Metacontroller; log it here
            outcome_name, status = "server_error", 500
            logger.exception("hook failed", extra={"fields": fields})
            response = _json({"detail": refusals.INTERNAL_ERROR}, status=500)
        elapsed = time.perf_counter() - started
        metrics.calls.labels(hook, outcome_name).inc()
        metrics.latency.labels(hook).observe(elapsed)
        fields.update(status=status, ms=round(elapsed * 1000, 3))
        logger.info("hook", extra={"fields": fields})
        return response

    @app.post(
        "/sync", openapi_extra=openapi.request_body("SyncRequest"), summary="Desired children and status for a ShardDB"
    )
    async def sync(request: Request) -> Response:
        return await run_hook(request, "sync", lambda body, now: handler.sync(body, finalize=False, now=now))

    @app.post("/finalize", openapi_extra=openapi.request_body("SyncRequest"), summary="Ordered teardown of a ShardDB")
    async def finalize(request: Request) -> Response:
        return await run_hook(request, "finalize", lambda body, now: handler.sync(body, finalize=True, now=now))

    @app.post(
        "/customize",
        openapi_extra=openapi.request_body("CustomizeRequest"),
        summary="Related objects to watch for a ShardDB",
    )
    async def customize(request: Request) -> Response:
        def work(body: bytes, _: Clock) -> handler.Outcome:
            return handler.Outcome(handler.customize(body), parent="", phase="", changes=[])

        return await run_hook(request, "customize", work)

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> Response:
        return _json({"status": "ok"})

    @app.get("/readyz", summary="Readiness: false while starting or shutting down")
    async def readyz() -> Response:
        ready = health.ready
        return _json({"status": "ok" if ready else "unavailable"}, status=200 if ready else 503)

    @app.get("/metrics", summary="Prometheus metrics")
    async def metrics_endpoint() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = FastAPI.openapi(app)
            document.setdefault("components", {}).setdefault("schemas", {}).update(openapi.components())
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]

    # Refusals are counted with the hooks' answers, so a token mismatch after a rotation shows in the metrics.
    refused = metrics.refused
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, timeout=settings.body_timeout_seconds, refused=refused)
    if tokens is not None:  # outermost: an unauthenticated body is never read
        open_paths = {"/healthz", "/readyz"} | (set() if settings.metrics_auth else {"/metrics"})
        app.add_middleware(
            BearerAuth, tokens=tokens, open_paths=open_paths, refused=refused, previous=metrics.let_in_by_previous
        )
    return app


def _tokens(settings: Settings, logger: logging.Logger) -> Tokens | None:
    """The tokens a call may present, or None when the hooks ask for none."""
    if settings.auth_token_file is None:
        return None
    previous = settings.auth_previous_token_file
    current = TokenFile(settings.auth_token_file, logger)
    return Tokens(current, PreviousTokenFile(previous, logger) if previous else None)
