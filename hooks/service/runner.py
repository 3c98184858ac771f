"""One hook call over HTTP: answered, or refused with a 4xx or 500, then counted and logged in one line.

Every hook runs through ``run_hook``, so the three share their ETags, their status codes, their
metrics and the shape of their log line; what differs is only the work on the body.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import Response

from .. import handler
from ..clock import Clock
from ..errors import HookError
from . import logs, refusals, state
from .etags import digest, etag, still_matches

JSON = "application/json"
# The raw body and the clock in, the answer out: the routes' part of a call, free of HTTP.
Work = Callable[[bytes, Clock], handler.Outcome]

logger = logging.getLogger(logs.LOGGER_NAME)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """JSON serialized with orjson, as every answer of the service is, refusals of the middleware aside."""
    return Response(orjson.dumps(body), status_code=status, media_type=JSON, headers=headers)


async def run_hook(request: Request, hook: str, work: Work) -> Response:
    """Answers one call to ``hook``; an unexpected error is logged with its traceback and never sent back."""
    started = time.perf_counter()
    body = await request.body()
    now = state.clock(request.app)()
    metrics = state.metrics(request.app)
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
            response = json_response(outcome.body, headers={"ETag": etag(request_digest, outcome.fresh_until)})
    except HookError as error:
        outcome_name, status = "client_error", refusals.http_status(error)
        fields["error"] = error.message
        response = json_response({"detail": error.message}, status=status)
    except Exception:  # never leak a traceback to Metacontroller; log it here
        outcome_name, status = "server_error", 500
        logger.exception("hook failed", extra={"fields": fields})
        response = json_response({"detail": refusals.INTERNAL_ERROR}, status=500)
    elapsed = time.perf_counter() - started
    metrics.calls.labels(hook, outcome_name).inc()
    metrics.latency.labels(hook).observe(elapsed)
    fields.update(status=status, ms=round(elapsed * 1000, 3))
    logger.info("hook", extra={"fields": fields})
    return response
