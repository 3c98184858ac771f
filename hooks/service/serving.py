"""uvicorn, hardened for a hook service: slow clients are cut off and SIGTERM drains.

uvicorn times out idle keep-alive connections but not a client that trickles its
request head, nor one that sends an endless head; ``guarded_protocol`` adds both.
``HookServer`` turns readiness false on SIGTERM, keeps serving for a short delay
(so Kubernetes stops routing to the pod first), then lets in-flight calls finish
and exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from . import logs, refusals
from .health import Health
from .settings import Settings

logger = logging.getLogger(logs.LOGGER_NAME)

_STATUS = {408: b"408 Request Timeout", 431: b"431 Request Header Fields Too Large"}


def _uncounted(_status: int) -> None:
    return None


@dataclass(frozen=True)
class HeadLimits:
    """How long a request head may take and how large it may grow; ``refused`` counts each cut."""

    timeout: float
    max_bytes: int
    refused: Callable[[int], None] = _uncounted


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, cutting off a request head that comes too slowly or grows too large.

    uvicorn builds one per connection from the class alone, so the limits are a class attribute, bound in a
    subclass by ``guarded_protocol``.
    """

    limits: ClassVar[HeadLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._in_head = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a silent new connection is a head that never starts

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_bytes:
                self._refuse(431, refusals.HEAD_TOO_LARGE)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0
        if self._head_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm()
        super().on_headers_complete()

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.limits.timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered; its own limits apply
        self._refuse(408, refusals.HEAD_TOO_SLOW)

    def _refuse(self, status: int, detail: str) -> None:
        """Written straight to the socket: with no complete head there is no ASGI request to answer."""
        self._in_head = False
        self._disarm()
        if self.transport.is_closing():
            return
        self.limits.refused(status)
        message = detail.encode()
        self.transport.write(
            b"HTTP/1.1 " + _STATUS[status] + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(message)).encode() + b"\r\nconnection: close\r\n\r\n" + message
        )
        self.transport.close()


def guarded_protocol(
    head_timeout: float, max_head_bytes: int, refused: Callable[[int], None] = _uncounted
) -> type[asyncio.Protocol]:
    """An HTTP/1.1 protocol that bounds the time and size of every request head; ``refused`` counts each cut."""

    class BoundGuardedHttpToolsProtocol(GuardedHttpToolsProtocol):
        limits = HeadLimits(head_timeout, max_head_bytes, refused)

    return BoundGuardedHttpToolsProtocol


class HookServer(uvicorn.Server):
    """SIGTERM: readiness false at once, keep serving ``delay`` seconds, then drain and exit 0.

    With TLS, a renewed certificate (cert-manager rewrites the mounted Secret) is picked up
    for new connections within ``TLS_CHECK_TICKS`` ticks, without a restart.
    """

    TLS_CHECK_TICKS = 20  # uvicorn ticks every 0.1 s: look at the files every 2 s

    def __init__(self, config: uvicorn.Config, health: Health, delay: float) -> None:
        super().__init__(config)
        self.health = health
        self.delay = delay
        self._stop_at: float | None = None
        self._tls_stamp = self._tls_files_stamp()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.health.draining = True
        if self._stop_at is None:
            # Ctrl+C at a terminal needs no wait for endpoint propagation.
            self._stop_at = time.monotonic() + (self.delay if sig == signal.SIGTERM else 0.0)
        super().handle_exit(sig, frame)
        # uvicorn re-raises the signal after shutdown, which would end the process by
        # that signal; a drained, orderly stop is a success, so exit normally instead.
        self._captured_signals.clear()

    def _tls_files_stamp(self) -> tuple[int, ...]:
        files = (self.config.ssl_certfile, self.config.ssl_keyfile)
        try:
            return tuple(os.stat(str(path)).st_mtime_ns for path in files if path is not None)
        except OSError:
            return ()  # mid-rotation; look again next time

    def reload_tls(self) -> None:
        """Load a changed certificate and key; a pair that does not load keeps the old one serving."""
        stamp = self._tls_files_stamp()
        if not stamp or stamp == self._tls_stamp or self.config.ssl is None:
            return
        self._tls_stamp = stamp
        try:
            self.config.ssl.load_cert_chain(str(self.config.ssl_certfile), str(self.config.ssl_keyfile))
        except (OSError, ssl.SSLError) as error:
            logger.warning("serving certificate not reloaded: %s", error)
        else:
            logger.info("serving certificate reloaded")

    async def on_tick(self, counter: int) -> bool:
        if counter % self.TLS_CHECK_TICKS == 0:
            self.reload_tls()
        should_exit = await super().on_tick(counter)
        if should_exit and self._stop_at is not None and not self.force_exit:
            return time.monotonic() >= self._stop_at
        return should_exit


def config(app: Any, settings: Settings) -> uvicorn.Config:
    """uvicorn settings for ``app``; HTTPS when a certificate and key are given.

    uvicorn's own lines (startup, shutdown, protocol errors) are JSON like the hooks' lines:
    its plain-text log config is left out, so its records reach the one handler ``logs`` sets up.
    """
    logs.setup(settings.log_level)
    metrics = getattr(getattr(app, "state", None), "metrics", None)
    refused: Callable[[int], None] = _uncounted if metrics is None else lambda status: metrics.refused(None, status)
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=guarded_protocol(settings.header_timeout_seconds, settings.max_header_bytes, refused),
        lifespan="on",
        log_config=None,
        log_level=settings.log_level.lower(),
        access_log=False,  # the app logs one structured line per hook call
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=settings.keepalive_seconds,
        timeout_graceful_shutdown=settings.graceful_timeout_seconds,
        limit_concurrency=settings.max_connections,
        ssl_certfile=settings.tls_cert_file,
        ssl_keyfile=settings.tls_key_file,
    )
