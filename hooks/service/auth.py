"""The optional bearer token: the ones accepted, and the one a request presents.

Metacontroller sends ``Authorization: Bearer <token>`` from a Secret; the same
Secret is mounted here as a file. The file is re-read when it changes, so a
rotated Secret takes effect without a restart. A second, optional file holds the
token being rotated out: accepted too while it exists, so no call made with it is
refused before every Metacontroller has the new one. ``middleware.BearerAuth`` compares them.
"""

from __future__ import annotations

import hmac
import logging
import os
from dataclasses import dataclass

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


class PreviousTokenFile:
    """The token being rotated out, in a file that may not exist: absent or empty, it lets nothing in.

    Unlike the current token, a vanished file is not kept: removing the Secret's key is how a
    rotation ends, and the kubelet then removes the file.
    """

    def __init__(self, path: str, logger: logging.Logger | None = None) -> None:
        self.path = path
        self.logger = logger or logging.getLogger(__name__)
        self._signature: tuple[int, int, int] | None = None
        self._token: bytes | None = None

    def token(self) -> bytes | None:
        try:
            info = os.stat(self.path)
            signature = (info.st_ino, info.st_mtime_ns, info.st_size)
            if signature != self._signature:
                with open(self.path, "rb") as handle:
                    self._token = handle.read().strip() or None
                self._signature = signature
                if self._token is not None:
                    self.logger.info("previous auth token loaded", extra={"fields": {"file": self.path}})
        except OSError:
            if self._token is not None:
                self.logger.info("previous auth token gone", extra={"fields": {"file": self.path}})
            self._signature, self._token = None, None
        return self._token


CURRENT = "current"
PREVIOUS = "previous"


@dataclass(frozen=True)
class Tokens:
    """The tokens a call may present: the current one, and while a rotation lasts the previous one."""

    current: TokenFile
    previous: PreviousTokenFile | None = None

    def match(self, presented: bytes) -> str | None:
        """Which token ``presented`` is (CURRENT or PREVIOUS), else None; each compared in constant time."""
        if _same(presented, self.current.token()):
            return CURRENT
        if self.previous is not None and _same(presented, self.previous.token()):
            return PREVIOUS
        return None


def _same(presented: bytes, expected: bytes | None) -> bool:
    # compare_digest on equal-type bytes: time does not depend on where they differ.
    return expected is not None and hmac.compare_digest(presented, expected)


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
