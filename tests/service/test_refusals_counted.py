"""Every answer is counted, the refusals made before a hook reads the request included (a token mismatch after a
rotation must show in ``sharddb_hook_calls_total``): on the live uvicorn server, and in-process on the ASGI app."""

from __future__ import annotations

import contextlib
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hooks.service.app import create_app
from hooks.service.settings import Settings
from testbed.real.server import serve

pytestmark = pytest.mark.http
TOKEN = "s3cret-token"
LIMITS = {
    "SHARDDB_HEADER_TIMEOUT_SECONDS": "1",
    "SHARDDB_BODY_TIMEOUT_SECONDS": "1",
    "SHARDDB_MAX_BODY_BYTES": str(64 * 1024),
    "SHARDDB_MAX_HEADER_BYTES": str(8 * 1024),
}


def counted(metrics: str, hook: str, outcome: str) -> float:
    found = re.search(rf'^sharddb_hook_calls_total\{{hook="{hook}",outcome="{outcome}"\}} (\S+)$', metrics, re.M)
    return float(found[1]) if found else 0.0


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """The live server with a token and small limits; /metrics stays open, as by default."""
    token = tmp_path_factory.mktemp("token") / "token"
    token.write_text(TOKEN)
    with serve({**LIMITS, "SHARDDB_AUTH_TOKEN_FILE": str(token)}) as base:
        yield base, int(base.rsplit(":", 1)[1])


def metrics_of(base: str) -> str:
    return httpx.get(f"{base}/metrics", timeout=5).text


def raw(port: int, data: bytes, pause: float = 0.0) -> bytes:
    """Send ``data`` (then wait ``pause``) and read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with contextlib.suppress(OSError):  # the server may cut us off before we stop writing
            sock.sendall(data)
        time.sleep(pause)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    return answer


def bearer_head(path: str, length: int) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: hooks\r\nAuthorization: Bearer {TOKEN}\r\n"
    return f"{head}Content-Length: {length}\r\n\r\n".encode()


@pytest.mark.parametrize(("path", "hook"), [("/sync", "sync"), ("/finalize", "finalize"), ("/customize", "customize")])
def test_a_call_without_the_token_is_counted_unauthorized_for_its_hook(
    guarded: tuple[str, int], path: str, hook: str
) -> None:
    base, _ = guarded
    before = counted(metrics_of(base), hook, "unauthorized")
    assert httpx.post(f"{base}{path}", content=b"{}", timeout=5).status_code == 401
    assert httpx.post(f"{base}{path}", content=b"{}", headers={"Authorization": "Bearer old"}).status_code == 401
    assert counted(metrics_of(base), hook, "unauthorized") == before + 2


def test_a_path_that_is_no_hook_is_counted_as_other(guarded: tuple[str, int]) -> None:
    base, _ = guarded
    before = counted(metrics_of(base), "other", "unauthorized")
    assert httpx.get(f"{base}/nowhere", timeout=5).status_code == 401
    assert counted(metrics_of(base), "other", "unauthorized") == before + 1


def test_a_body_declared_too_large_is_counted_too_large(guarded: tuple[str, int]) -> None:
    base, port = guarded
    before = counted(metrics_of(base), "sync", "too_large")
    assert raw(port, bearer_head("/sync", 10 * 1024 * 1024)).startswith(b"HTTP/1.1 413 ")
    assert counted(metrics_of(base), "sync", "too_large") == before + 1


def test_a_body_that_grows_too_large_is_counted_too_large(guarded: tuple[str, int]) -> None:
    base, port = guarded
    before = counted(metrics_of(base), "finalize", "too_large")
    chunked = f"POST /finalize HTTP/1.1\r\nHost: hooks\r\nAuthorization: Bearer {TOKEN}\r\n"
    chunked += "Transfer-Encoding: chunked\r\n\r\n"
    body = b"".join(b"%x\r\n%s\r\n" % (16 * 1024, b"a" * 16 * 1024) for _ in range(8))
    assert raw(port, chunked.encode() + body).startswith(b"HTTP/1.1 413 ")
    assert counted(metrics_of(base), "finalize", "too_large") == before + 1


def test_a_body_too_slow_is_counted_too_slow(guarded: tuple[str, int]) -> None:
    base, port = guarded
    before = counted(metrics_of(base), "sync", "too_slow")
    assert raw(port, bearer_head("/sync", 100) + b"{", pause=1.5).startswith(b"HTTP/1.1 408 ")
    assert counted(metrics_of(base), "sync", "too_slow") == before + 1


def test_a_head_too_large_or_too_slow_is_counted_for_no_hook(guarded: tuple[str, int]) -> None:
    base, port = guarded
    large, slow = (counted(metrics_of(base), "unknown", outcome) for outcome in ("too_large", "too_slow"))
    endless = b"POST /sync HTTP/1.1\r\nHost: hooks\r\n" + b"".join(
        f"X-Padding-{i}: {'a' * 1000}\r\n".encode() for i in range(64)
    )
    assert raw(port, endless).startswith(b"HTTP/1.1 431 ")
    assert raw(port, b"POST /sync HTTP/1.1\r\n", pause=1.5).startswith(b"HTTP/1.1 408 ")
    metrics = metrics_of(base)
    assert counted(metrics, "unknown", "too_large") == large + 1
    assert counted(metrics, "unknown", "too_slow") == slow + 1


def test_the_asgi_app_counts_its_middlewares_refusals(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    settings = Settings(auth_token_file=str(token), max_body_bytes=1024)
    with TestClient(create_app(settings)) as client:
        assert client.post("/sync", content=b"{}").status_code == 401
        big = b"x" * 4096
        assert client.post("/customize", content=big, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 413
        metrics = client.get("/metrics").text
    assert counted(metrics, "sync", "unauthorized") == 1
    assert counted(metrics, "customize", "too_large") == 1
