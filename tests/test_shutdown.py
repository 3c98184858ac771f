"""SIGTERM, as the kubelet sends it: readiness false at once, in-flight calls finish, exit 0."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from .server import ROOT, free_port
from .world import World

pytestmark = pytest.mark.http


@contextmanager
def hooks_process(**env: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``python -m hooks`` on a free loopback port, ready; the test sends the signals."""
    port = free_port()
    environment = {**os.environ, "SHARDDB_HOST": "127.0.0.1", "SHARDDB_PORT": str(port), **env}
    process = subprocess.Popen(
        [sys.executable, "-m", "hooks"], cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "hook server did not become ready"
            time.sleep(0.05)
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stderr:
            process.stderr.close()


def sync_request() -> bytes:
    body = json.dumps(World().request()).encode()
    head = (
        f"POST /sync HTTP/1.1\r\nHost: hooks\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def read_response(sock: socket.socket) -> bytes:
    sock.settimeout(10)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_sigterm_turns_readiness_false_while_calls_are_still_answered() -> None:
    with hooks_process(SHARDDB_SHUTDOWN_DELAY_SECONDS="1.5") as (process, port):
        process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/readyz", timeout=2).status_code == 503
        assert httpx.get(f"{base}/healthz", timeout=2).status_code == 200  # alive: the kubelet must not restart it
        assert httpx.post(f"{base}/sync", content=json.dumps(World().request()), timeout=2).status_code == 200
        assert process.wait(timeout=10) == 0


def test_an_in_flight_call_finishes_after_sigterm_and_the_process_exits_0() -> None:
    with hooks_process(SHARDDB_SHUTDOWN_DELAY_SECONDS="0.5") as (process, port):
        request = sync_request()
        sock = socket.create_connection(("127.0.0.1", port))
        with sock:
            sock.sendall(request[: len(request) // 2])  # the call is in flight: half its body sent
            time.sleep(0.2)
            process.send_signal(signal.SIGTERM)
            time.sleep(1.5)  # past the delay: the listener is closed, the call still open
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
            assert process.poll() is None, "exited with a call in flight"
            sock.sendall(request[len(request) // 2 :])
            response = read_response(sock)
        assert response.startswith(b"HTTP/1.1 200 "), response[:200]
        assert b"connection: close" in response.lower()
        assert json.loads(response.split(b"\r\n\r\n", 1)[1])["status"]["phase"] == "Provisioning"
        assert process.wait(timeout=10) == 0


def test_sigterm_with_nothing_in_flight_exits_0_right_after_the_delay() -> None:
    with hooks_process(SHARDDB_SHUTDOWN_DELAY_SECONDS="0.5") as (process, _):
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        assert 0.4 < time.monotonic() - started < 3.0


def test_a_call_that_never_finishes_is_cut_off_at_the_graceful_timeout() -> None:
    with hooks_process(
        SHARDDB_SHUTDOWN_DELAY_SECONDS="0", SHARDDB_GRACEFUL_TIMEOUT_SECONDS="1", SHARDDB_BODY_TIMEOUT_SECONDS="60"
    ) as (process, port):
        sock = socket.create_connection(("127.0.0.1", port))
        with sock:
            sock.sendall(sync_request()[:300])  # and never the rest
            time.sleep(0.2)
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
            assert time.monotonic() - started < 4.0


def test_ctrl_c_skips_the_delay() -> None:
    with hooks_process(SHARDDB_SHUTDOWN_DELAY_SECONDS="30") as (process, _):
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
