"""The service's endpoints: the three hooks, health and metrics, each one readable on its own.

Hook bodies are read raw and parsed by ``handler``, so the lifecycle never depends on FastAPI;
``runner`` maps their outcomes to HTTP. What refuses a request before a route reads it is in
``middleware``. An endpoint's name is part of the OpenAPI document (its ``operationId``).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response

from .. import handler
from ..clock import Clock
from . import openapi, state
from .metrics import CONTENT_TYPE
from .runner import json_response, run_hook


def add_routes(app: FastAPI) -> None:
    """Each endpoint, on each app: FastAPI's ``include_router`` would list a router in ``app.routes``, not them."""
    app.add_api_route(
        "/sync",
        sync,
        methods=["POST"],
        openapi_extra=openapi.request_body("SyncRequest"),
        summary="Desired children and status for a ShardDB",
    )
    app.add_api_route(
        "/finalize",
        finalize,
        methods=["POST"],
        openapi_extra=openapi.request_body("SyncRequest"),
        summary="Ordered teardown of a ShardDB",
    )
    app.add_api_route(
        "/customize",
        customize,
        methods=["POST"],
        openapi_extra=openapi.request_body("CustomizeRequest"),
        summary="Related objects to watch for a ShardDB",
    )
    app.add_api_route("/healthz", healthz, methods=["GET"], summary="Liveness")
    app.add_api_route("/readyz", readyz, methods=["GET"], summary="Readiness: false while starting or shutting down")
    app.add_api_route("/metrics", metrics_endpoint, methods=["GET"], summary="Prometheus metrics")


async def sync(request: Request) -> Response:
    return await run_hook(request, "sync", _sync)


async def finalize(request: Request) -> Response:
    return await run_hook(request, "finalize", _finalize)


async def customize(request: Request) -> Response:
    return await run_hook(request, "customize", _customize)


async def healthz() -> Response:
    return json_response({"status": "ok"})


async def readyz(request: Request) -> Response:
    ready = state.health(request.app).ready
    return json_response({"status": "ok" if ready else "unavailable"}, status=200 if ready else 503)


async def metrics_endpoint(request: Request) -> Response:
    return Response(state.metrics(request.app).render(), media_type=CONTENT_TYPE)


def _sync(body: bytes, now: Clock) -> handler.Outcome:
    return handler.sync(body, finalize=False, now=now)


def _finalize(body: bytes, now: Clock) -> handler.Outcome:
    return handler.sync(body, finalize=True, now=now)


def _customize(body: bytes, _: Clock) -> handler.Outcome:
    """The customize answer names no ShardDB and no phase: it is counted and logged, never viewed."""
    return handler.Outcome(handler.customize(body), parent="", phase="", changes=[])
