"""SHARDDB_* settings: documented defaults, and a bad value stops the start naming its variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hooks.service.settings import Settings, SettingsError
from testbed.real.server import ROOT


def test_defaults_serve_plain_http_without_auth() -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert settings.auth_token_file is None
    assert not settings.tls
    assert settings.port == 8080


def test_every_variable_is_read() -> None:
    settings = Settings.from_env(
        {
            "SHARDDB_HOST": "0.0.0.0",
            "SHARDDB_PORT": "9443",
            "SHARDDB_LOG_LEVEL": "debug",
            "SHARDDB_MAX_BODY_BYTES": "1000",
            "SHARDDB_AUTH_TOKEN_FILE": "/var/run/secrets/hooks/token",
            "SHARDDB_METRICS_AUTH": "true",
            "SHARDDB_METRICS_VIEW_TTL_SECONDS": "600",
            "SHARDDB_TLS_CERT_FILE": "/tls/tls.crt",
            "SHARDDB_TLS_KEY_FILE": "/tls/tls.key",
            "SHARDDB_HEADER_TIMEOUT_SECONDS": "2.5",
            "SHARDDB_BODY_TIMEOUT_SECONDS": "4",
            "SHARDDB_KEEPALIVE_SECONDS": "30",
            "SHARDDB_MAX_HEADER_BYTES": "4096",
            "SHARDDB_MAX_CONNECTIONS": "64",
            "SHARDDB_SHUTDOWN_DELAY_SECONDS": "0",
            "SHARDDB_GRACEFUL_TIMEOUT_SECONDS": "10",
        }
    )
    assert settings == Settings(
        host="0.0.0.0",
        port=9443,
        log_level="DEBUG",
        max_body_bytes=1000,
        auth_token_file="/var/run/secrets/hooks/token",
        metrics_auth=True,
        metrics_view_ttl_seconds=600,
        tls_cert_file="/tls/tls.crt",
        tls_key_file="/tls/tls.key",
        header_timeout_seconds=2.5,
        body_timeout_seconds=4.0,
        keepalive_seconds=30,
        max_header_bytes=4096,
        max_connections=64,
        shutdown_delay_seconds=0.0,
        graceful_timeout_seconds=10,
    )


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"SHARDDB_PORT": "http"}, "SHARDDB_PORT"),
        ({"SHARDDB_PORT": "70000"}, "SHARDDB_PORT"),
        ({"SHARDDB_MAX_BODY_BYTES": "0"}, "SHARDDB_MAX_BODY_BYTES"),
        ({"SHARDDB_LOG_LEVEL": "loud"}, "SHARDDB_LOG_LEVEL"),
        ({"SHARDDB_METRICS_AUTH": "maybe"}, "SHARDDB_METRICS_AUTH"),
        ({"SHARDDB_BODY_TIMEOUT_SECONDS": "0"}, "SHARDDB_BODY_TIMEOUT_SECONDS"),
        ({"SHARDDB_HEADER_TIMEOUT_SECONDS": "nan"}, "SHARDDB_HEADER_TIMEOUT_SECONDS"),
        ({"SHARDDB_SHUTDOWN_DELAY_SECONDS": "-1"}, "SHARDDB_SHUTDOWN_DELAY_SECONDS"),
        ({"SHARDDB_TLS_CERT_FILE": "/tls/tls.crt"}, "SHARDDB_TLS_KEY_FILE"),
        ({"SHARDDB_TLS_KEY_FILE": "/tls/tls.key"}, "SHARDDB_TLS_CERT_FILE"),
        ({"SHARDDB_METRICS_AUTH": "true"}, "SHARDDB_AUTH_TOKEN_FILE"),
    ],
)
def test_a_bad_value_is_refused_naming_its_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        Settings.from_env(env)


def test_the_service_exits_2_with_the_reason_on_a_bad_setting() -> None:
    environment = {**os.environ, "SHARDDB_AUTH_TOKEN_FILE": str(ROOT / "no-such-token-file")}
    done = subprocess.run(
        [sys.executable, "-m", "hooks"], cwd=ROOT, env=environment, capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 2
    assert b"SHARDDB_AUTH_TOKEN_FILE" in done.stderr
