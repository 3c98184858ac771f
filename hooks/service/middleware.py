"""Pure ASGI middleware that refuses a request before any route reads it.

Each refusal is a small JSON ``{"detail": ...}`` answer, sent as a Starlette response
so no ASGI message is built by hand; the wording comes from ``refusals``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import refusals
from .auth import PREVIOUS, REALM, Tokens, presented_token

Refused = Callable[[str, int], None]  # (path, status) of each refusal, for the metrics
LetInByPrevious = Callable[[str], None]  # (path) of each call the previous token let in, for the metrics


def _uncounted(_path: str, _status: int) -> None:
    return None


def _unnoted(_path: str) -> None:
    return None


class BearerAuth:
    """401 unless the request carries an accepted token; ``open_paths`` never need it."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Tokens,
        open_paths: Collection[str],
        refused: Refused = _uncounted,
        previous: LetInByPrevious = _unnoted,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.open_paths = frozenset(open_paths)
        self.refused = refused
        self.previous = previous

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        presented = presented_token(scope["headers"])
        which = self.tokens.match(presented) if presented is not None else None
        if which is not None:
            if which == PREVIOUS:
                self.previous(scope["path"])
            await self.app(scope, receive, send)
            return
        invalid = presented is not None
        challenge = f'Bearer realm="{REALM}"' + (', error="invalid_token"' if invalid else "")
        detail = refusals.INVALID_TOKEN if invalid else refusals.MISSING_TOKEN
        response = JSONResponse({"detail": detail}, status_code=401, headers={"WWW-Authenticate": challenge})
        self.refused(scope["path"], 401)
        await response(scope, receive, send)


class BodyLimit:
    """Refuses bodies over ``limit`` bytes (413) or slower than ``timeout`` seconds (408).

    Both answers close the connection: the rest of such a body is not worth reading.
    """

    def __init__(self, app: ASGIApp, limit: int, timeout: float = 10.0, refused: Refused = _uncounted) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout
        self.refused = refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for key, value in scope["headers"]:
            if key == b"content-length" and value.isdigit() and int(value) > self.limit:
                self.refused(scope["path"], 413)
                await _closing(413, refusals.body_too_large(self.limit))(scope, receive, send)
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
            self.refused(scope["path"], 413)
            await _closing(413, refusals.body_too_large(self.limit))(scope, receive, send)
        except _SlowBodyError:
            self.refused(scope["path"], 408)
            await _closing(408, refusals.body_too_slow(self.timeout))(scope, receive, send)
        except _ClientGoneError:
            pass  # hung up mid-body: nobody is left to answer, and it is not the service's fault


def _closing(status: int, detail: str) -> JSONResponse:
    """A refusal that ends the connection, so the rest of the body is never read."""
    return JSONResponse({"detail": detail}, status_code=status, headers={"Connection": "close"})


class _TooLargeError(Exception):
    pass


class _SlowBodyError(Exception):
    pass


class _ClientGoneError(Exception):
    pass
