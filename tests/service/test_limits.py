"""Slow, idle and oversized clients against the live server: cut off, never blocking others."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from testbed.models.world import World
from testbed.real.server import serve

pytestmark = pytest.mark.http

LIMITS = {
    "SHARDDB_HEADER_TIMEOUT_SECONDS": "1",
    "SHARDDB_BODY_TIMEOUT_SECONDS": "1",
    "SHARDDB_KEEPALIVE_SECONDS": "1",
    "SHARDDB_MAX_BODY_BYTES": str(256 * 1024),
    "SHARDDB_MAX_HEADER_BYTES": str(8 * 1024),
    "SHARDDB_MAX_CONNECTIONS": "16",
}


@pytest.fixture(scope="module")
def limited() -> Iterator[tuple[str, int]]:
    with serve(LIMITS) as base:
        yield base, int(base.rsplit(":", 1)[1])


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.settimeout(5)
    return sock


def receive_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def sync_body() -> bytes:
    return json.dumps(World().request()).encode()


def head(length: int, path: str = "/sync") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: hooks\r\nContent-Length: {length}\r\n\r\n".encode()


def served_meanwhile(base: str) -> bool:
    return httpx.post(f"{base}/sync", content=sync_body(), timeout=2).status_code == 200


def test_a_silent_connection_is_closed_after_the_head_timeout(limited: tuple[str, int]) -> None:
    with connect(limited[1]) as sock:
        started = time.monotonic()
        answer = receive_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert 0.8 < time.monotonic() - started < 3


def test_a_trickled_head_is_cut_off_while_others_are_served(limited: tuple[str, int]) -> None:
    base, port = limited
    request = head(2) + b"{}"
    answers: list[bytes] = []

    def trickle() -> None:
        with connect(port) as sock:
            try:
                for byte in request[:-4]:  # a slowloris never finishes its head
                    sock.send(bytes([byte]))
                    time.sleep(0.1)
            except OSError:
                pass
            answers.append(receive_all(sock))

    slow = threading.Thread(target=trickle)
    started = time.monotonic()
    slow.start()
    assert all(served_meanwhile(base) for _ in range(5))
    slow.join(timeout=10)
    assert answers
    assert answers[0].startswith(b"HTTP/1.1 408 ")
    assert time.monotonic() - started < 3


def test_a_trickled_body_gets_408_and_the_connection_closes(limited: tuple[str, int]) -> None:
    base, port = limited
    body = sync_body()
    with connect(port) as sock:
        sock.sendall(head(len(body)))
        for offset in range(0, 10):
            sock.sendall(body[offset : offset + 1])
            time.sleep(0.05)
        assert served_meanwhile(base)
        time.sleep(1)
        answer = receive_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
    assert b"request body not received within 1 seconds" in answer


def test_an_endless_head_gets_431(limited: tuple[str, int]) -> None:
    with connect(limited[1]) as sock:
        try:
            sock.sendall(b"POST /sync HTTP/1.1\r\nHost: hooks\r\n")
            for index in range(64):
                sock.sendall(f"X-Padding-{index}: {'a' * 1000}\r\n".encode())
        except OSError:
            pass  # the server may close before we stop writing
        answer = receive_all(sock)
    assert answer.startswith(b"HTTP/1.1 431 ")


def test_a_body_declared_too_large_gets_413_before_it_is_sent(limited: tuple[str, int]) -> None:
    with connect(limited[1]) as sock:
        sock.sendall(head(10 * 1024 * 1024))
        answer = receive_all(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"connection: close" in answer.lower()


def test_a_chunked_body_that_grows_too_large_gets_413(limited: tuple[str, int]) -> None:
    chunk = b"x" * 65536
    with connect(limited[1]) as sock:
        sock.sendall(b"POST /sync HTTP/1.1\r\nHost: hooks\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(8):
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        except OSError:
            pass
        answer = receive_all(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")


def test_an_idle_keep_alive_connection_is_closed(limited: tuple[str, int]) -> None:
    with connect(limited[1]) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hooks\r\n\r\n")
        started = time.monotonic()
        answer = receive_all(sock)  # the answer, then the close after the keep-alive timeout
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert 0.8 < time.monotonic() - started < 3


def test_a_keep_alive_connection_serves_many_calls(limited: tuple[str, int]) -> None:
    with httpx.Client(base_url=limited[0], timeout=5) as client:
        statuses = {client.post("/sync", content=sync_body()).status_code for _ in range(50)}
    assert statuses == {200}


def test_beyond_the_connection_limit_calls_are_shed_then_served_again(limited: tuple[str, int]) -> None:
    base, port = limited
    held = [connect(port) for _ in range(16)]
    try:
        time.sleep(0.1)
        assert httpx.get(f"{base}/healthz", timeout=2).status_code == 503
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)
    assert httpx.get(f"{base}/healthz", timeout=2).status_code == 200
