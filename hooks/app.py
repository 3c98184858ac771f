"""The HTTP edge: routes, auth, body limits, ETags, metrics and the per-call log line.

Hook bodies are read raw and parsed by ``handler`` so the lifecycle never
depends on FastAPI; this module only maps outcomes to HTTP.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from blake3 import blake3
from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import __version__, handler, logs, openapi
from .auth import BearerAuth, TokenFile
from .errors import INTERNAL_ERROR, HookError, body_too_large, body_too_slow
from .metrics import CONTENT_TYPE, Metrics
from .settings import Settings

JSON = "application/json"


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=JSON, headers=headers)


class BodyLimit:
    """Refuses bodies over ``limit`` bytes (413) or slower than ``timeout`` seconds (408).

    Both answers close the connection: the rest of such a body is not worth reading.
    """

    def __init__(self, app: ASGIApp, limit: int, timeout: float = 10.0) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope["headers"]:
            if key == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refuse(send, 413, body_too_large(self.limit))
                return
        received = 0
        complete = False
        deadline = asyncio.get_running_loop().time() + self.timeout

        async def limited() -> Message:
            nonlocal received, complete
            if complete:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise _SlowBodyError from None
            if message["type"] == "http.disconnect":
                raise _ClientGoneError
            received += len(message.get("body", b""))
            if received > self.limit:
                raise _TooLargeError
            complete = not message.get("more_body", False)
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLargeError:
            await self._refuse(send, 413, body_too_large(self.limit))
        except _SlowBodyError:
            await self._refuse(send, 408, body_too_slow(self.timeout))
        except _ClientGoneError:
            pass  # hung up mid-body: nobody is left to answer, and it is not the service's fault

    @staticmethod
    async def _refuse(send: Send, status: int, detail: str) -> None:
        body = orjson.dumps({"detail": detail})
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", JSON.encode()),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class _TooLargeError(Exception):
    pass


class _SlowBodyError(Exception):
    pass


class _ClientGoneError(Exception):
    pass


@dataclass
class Health:
    """Ready between lifespan start and the first shutdown signal (``draining``)."""

    started: bool = False
    draining: bool = False

    @property
    def ready(self) -> bool:
        return self.started and not self.draining


def code_fingerprint(package: Path = Path(__file__).parent) -> bytes:
    """The hooks' own source and schemas: an upgraded image must not be answered from an old ETag."""
    digest = blake3(b"sharddb-hooks\0")
    for source in sorted([*package.glob("*.py"), *package.glob("*.json")]):
        digest.update(source.name.encode() + b"\0")
        digest.update(source.read_bytes())
    return digest.digest()


_CODE = code_fingerprint()


def etag(path: str, body: bytes) -> str:
    """Answers are a function of the request and this code, so hash exactly those.

    Every call hashes its whole body, so the hash is BLAKE3: cryptographic like
    blake2b, and several times faster over a large request (SIMD).
    """
    digest = blake3(_CODE + path.encode() + b"\0")
    digest.update(body)
    return f'"{digest.hexdigest(16)}"'


def _matches(header: str | None, tag: str) -> bool:
    if not header:
        return False
    return any(candidate.strip().removeprefix("W/") in (tag, "*") for candidate in header.split(","))


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    logger = logs.setup(settings.log_level)
    metrics = Metrics()
    health = Health()
    tokens = TokenFile(settings.auth_token_file, logger) if settings.auth_token_file else None

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

    async def run_hook(request: Request, hook: str, work: Callable[[bytes], handler.Outcome]) -> Response:
        started = time.perf_counter()
        body = await request.body()
        tag = etag(request.scope["path"], body)
        fields: dict[str, Any] = {"hook": hook}
        try:
            if _matches(request.headers.get("if-none-match"), tag):
                outcome_name, status = "not_modified", 304
                response = Response(status_code=304, headers={"ETag": tag})
            else:
                outcome = work(body)
                outcome_name, status = "ok", 200
                fields.update(parent=outcome.parent, phase=outcome.phase, changes=outcome.changes)
                if outcome.phase:
                    metrics.decisions.labels(outcome.phase).inc()
                response = _json(outcome.body, headers={"ETag": tag})
        except HookError as error:
            outcome_name, status = "client_error", error.status
            fields["error"] = error.message
            response = _json({"detail": error.message}, status=error.status)
        except Exception:  # never leak a traceback to Metacontroller; log it here
            outcome_name, status = "server_error", 500
            logger.exception("hook failed", extra={"fields": fields})
            response = _json({"detail": INTERNAL_ERROR}, status=500)
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
        return await run_hook(request, "sync", lambda body: handler.sync(body, finalize=False))

    @app.post("/finalize", openapi_extra=openapi.request_body("SyncRequest"), summary="Ordered teardown of a ShardDB")
    async def finalize(request: Request) -> Response:
        return await run_hook(request, "finalize", lambda body: handler.sync(body, finalize=True))

    @app.post(
        "/customize",
        openapi_extra=openapi.request_body("CustomizeRequest"),
        summary="Related objects to watch for a ShardDB",
    )
    async def customize(request: Request) -> Response:
        def work(body: bytes) -> handler.Outcome:
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

    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, timeout=settings.body_timeout_seconds)
    if tokens is not None:  # outermost: an unauthenticated body is never read
        open_paths = {"/healthz", "/readyz"} | (set() if settings.metrics_auth else {"/metrics"})
        app.add_middleware(BearerAuth, tokens=tokens, open_paths=open_paths)
    return app


_default: list[FastAPI] = []


def __getattr__(name: str) -> FastAPI:
    """``hooks.app:app``, built from the environment on first use rather than on import."""
    if name != "app":
        raise AttributeError(name)
    if not _default:
        _default.append(create_app())
    return _default[0]
