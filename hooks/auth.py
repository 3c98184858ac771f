"""Optional bearer-token check in front of the hooks.

Metacontroller sends ``Authorization: Bearer <token>`` from a Secret; the same
Secret is mounted here as a file. The file is re-read when it changes, so a
rotated Secret takes effect without a restart.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Collection

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import INVALID_TOKEN, MISSING_TOKEN
from .settings import SettingsError

REALM = "sharddb-hooks"


class TokenFile:
    """The token in a mounted file, re-read whenever the file's identity or mtime changes."""

    def __init__(self, path: str, logger: logging.Logger | None = None) -> None:
        self.path = path
        self.logger = logger or logging.getLogger(__name__)
        self._signature: tuple[int, int, int] | None = None
        self._token: bytes | None = None
        try:
            self._reload(os.stat(path))
        except OSError as error:
            raise SettingsError(f"SHARDDB_AUTH_TOKEN_FILE={path!r}: {error.strerror}") from None
        if self._token is None:
            raise SettingsError(f"SHARDDB_AUTH_TOKEN_FILE={path!r}: the file holds no token")

    def token(self) -> bytes | None:
        """The current token; None (nothing matches) while the file holds none."""
        try:
            info = os.stat(self.path)
        except OSError:
            return self._token  # mid-rotation the path may vanish for a moment: keep the last token
        if (info.st_ino, info.st_mtime_ns, info.st_size) != self._signature:
            try:
                self._reload(info)
            except OSError:
                return self._token
        return self._token

    def _reload(self, info: os.stat_result) -> None:
        with open(self.path, "rb") as handle:
            token = handle.read().strip()
        self._signature = (info.st_ino, info.st_mtime_ns, info.st_size)
        self._token = token or None
        if token:
            self.logger.info("auth token loaded", extra={"fields": {"file": self.path}})
        else:
            self.logger.error("auth token file is empty; refusing every protected call", extra={"fields": {}})


def presented_token(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The credentials of a single ``Authorization: Bearer`` header, else None."""
    values = [value for key, value in headers if key == b"authorization"]
    if len(values) != 1:
        return None
    scheme, _, credentials = values[0].strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return None
    credentials = credentials.strip()
    return credentials or None


class BearerAuth:
    """401 unless the request carries the token; ``open_paths`` never need it."""

    def __init__(self, app: ASGIApp, tokens: TokenFile, open_paths: Collection[str]) -> None:
        self.app = app
        self.tokens = tokens
        self.open_paths = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        presented = presented_token(scope["headers"])
        expected = self.tokens.token()
        # compare_digest on equal-type bytes: time does not depend on where they differ.
        if presented is not None and expected is not None and hmac.compare_digest(presented, expected):
            await self.app(scope, receive, send)
            return
        await self._refuse(send, invalid=presented is not None)

    @staticmethod
    async def _refuse(send: Send, *, invalid: bool) -> None:
        challenge = f'Bearer realm="{REALM}"' + (', error="invalid_token"' if invalid else "")
        detail = INVALID_TOKEN if invalid else MISSING_TOKEN
        body = orjson.dumps({"detail": detail})
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
