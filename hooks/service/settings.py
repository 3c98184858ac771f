"""Service settings, read once from the environment at start.

Every knob is a ``SHARDDB_*`` variable; a bad value stops the service at start
with a message naming the variable, rather than surfacing later as odd behaviour.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_HEADER_BYTES = 64 * 1024
# Three of Metacontroller's resync periods (600 s in the shipped CompositeController): a ShardDB this replica
# has not synced for that long is synced by another replica, or gone without a finalize this replica served.
DEFAULT_VIEW_TTL_SECONDS = 1800


class SettingsError(ValueError):
    """A ``SHARDDB_*`` variable the service cannot start with."""


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    log_level: str = "INFO"
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # Bearer token for the hooks (and, with metrics_auth, /metrics); None: no auth.
    auth_token_file: str | None = None
    # The token being rotated out, accepted too while this file exists (it may not).
    auth_previous_token_file: str | None = None
    metrics_auth: bool = False
    # How long a ShardDB's series outlive this replica's last sync of it (hooks/service/views.py).
    metrics_view_ttl_seconds: int = DEFAULT_VIEW_TTL_SECONDS
    # HTTPS when both are set.
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    # Slow or idle clients: time to send the request head, the body, and idle keep-alive.
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 10.0
    keepalive_seconds: int = 75
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    max_connections: int = 256
    # SIGTERM: stay up (not ready) this long so endpoints drop us, then drain in-flight calls.
    shutdown_delay_seconds: float = 3.0
    graceful_timeout_seconds: int = 20

    @property
    def tls(self) -> bool:
        return self.tls_cert_file is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        source = os.environ if env is None else env
        read = _Reader(source)
        settings = cls(
            host=read.text("SHARDDB_HOST", cls.host),
            port=read.integer("SHARDDB_PORT", cls.port, 0, 65535),
            log_level=read.choice("SHARDDB_LOG_LEVEL", cls.log_level, ("DEBUG", "INFO", "WARNING", "ERROR")),
            max_body_bytes=read.integer("SHARDDB_MAX_BODY_BYTES", cls.max_body_bytes, 1, 1 << 31),
            auth_token_file=read.optional("SHARDDB_AUTH_TOKEN_FILE"),
            auth_previous_token_file=read.optional("SHARDDB_AUTH_PREVIOUS_TOKEN_FILE"),
            metrics_auth=read.flag("SHARDDB_METRICS_AUTH"),
            metrics_view_ttl_seconds=read.integer(
                "SHARDDB_METRICS_VIEW_TTL_SECONDS", cls.metrics_view_ttl_seconds, 60, 7 * 24 * 3600
            ),
            tls_cert_file=read.optional("SHARDDB_TLS_CERT_FILE"),
            tls_key_file=read.optional("SHARDDB_TLS_KEY_FILE"),
            header_timeout_seconds=read.seconds("SHARDDB_HEADER_TIMEOUT_SECONDS", cls.header_timeout_seconds),
            body_timeout_seconds=read.seconds("SHARDDB_BODY_TIMEOUT_SECONDS", cls.body_timeout_seconds),
            keepalive_seconds=read.integer("SHARDDB_KEEPALIVE_SECONDS", cls.keepalive_seconds, 1, 3600),
            max_header_bytes=read.integer("SHARDDB_MAX_HEADER_BYTES", cls.max_header_bytes, 1024, 1 << 24),
            max_connections=read.integer("SHARDDB_MAX_CONNECTIONS", cls.max_connections, 1, 1 << 16),
            shutdown_delay_seconds=read.seconds(
                "SHARDDB_SHUTDOWN_DELAY_SECONDS", cls.shutdown_delay_seconds, zero=True
            ),
            graceful_timeout_seconds=read.integer(
                "SHARDDB_GRACEFUL_TIMEOUT_SECONDS", cls.graceful_timeout_seconds, 1, 3600
            ),
        )
        if (settings.tls_cert_file is None) != (settings.tls_key_file is None):
            raise SettingsError("SHARDDB_TLS_CERT_FILE and SHARDDB_TLS_KEY_FILE must be set together")
        if settings.auth_previous_token_file is not None and settings.auth_token_file is None:
            raise SettingsError("SHARDDB_AUTH_PREVIOUS_TOKEN_FILE needs SHARDDB_AUTH_TOKEN_FILE")
        if settings.metrics_auth and settings.auth_token_file is None:
            raise SettingsError("SHARDDB_METRICS_AUTH needs SHARDDB_AUTH_TOKEN_FILE")
        return settings


class _Reader:
    """Typed access to the environment; every failure names its variable."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env

    def text(self, name: str, default: str) -> str:
        return self.env.get(name, "").strip() or default

    def optional(self, name: str) -> str | None:
        return self.env.get(name, "").strip() or None

    def choice(self, name: str, default: str, options: tuple[str, ...]) -> str:
        value = self.text(name, default).upper()
        if value not in options:
            raise SettingsError(f"{name}={value!r}: expected one of {', '.join(options)}")
        return value

    def flag(self, name: str) -> bool:
        value = self.env.get(name, "").strip().lower()
        if value in ("", "0", "false", "no", "off"):
            return False
        if value in ("1", "true", "yes", "on"):
            return True
        raise SettingsError(f"{name}={value!r}: expected true or false")

    def integer(self, name: str, default: int, low: int, high: int) -> int:
        raw = self.env.get(name, "").strip()
        if not raw:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise SettingsError(f"{name}={raw!r}: expected an integer") from None
        if not low <= value <= high:
            raise SettingsError(f"{name}={value}: expected {low}..{high}")
        return value

    def seconds(self, name: str, default: float, *, zero: bool = False) -> float:
        raw = self.env.get(name, "").strip()
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise SettingsError(f"{name}={raw!r}: expected a number of seconds") from None
        if not (value >= 0 if zero else value > 0) or value > 3600:
            raise SettingsError(f"{name}={raw}: expected {'0' if zero else 'more than 0'}..3600 seconds")
        return value
