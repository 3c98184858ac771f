"""The optional bearer token: the one expected, and the one a request presents.

Metacontroller sends ``Authorization: Bearer <token>`` from a Secret; the same
Secret is mounted here as a file. The file is re-read when it changes, so a
rotated Secret takes effect without a restart. ``middleware.BearerAuth`` compares them.
"""

from __future__ import annotations

import logging
import os

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
