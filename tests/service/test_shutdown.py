"""SIGTERM, as the kubelet sends it: readiness false at once, in-flight calls finish, exit 0."""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest

from testbed.models.world import World
from testbed.real.server import launch

pytestmark = pytest.mark.http


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


def test_sigterm_turns_readiness_false_while_calls_are_still_answered(tmp_path: Path) -> None:
    with launch(tmp_path, {"SHARDDB_SHUTDOWN_DELAY_SECONDS": "1.5"}) as hooks:
        process, port = hooks.process, hooks.port
        base = f"http://127.0.0.1:{port}"
        body = json.dumps(World().request())
        # Metacontroller has called a replica before the kubelet stops it: the calls below then fall inside the delay
        # on a busy machine too, rather than wait on the process's first decision.
        assert httpx.post(f"{base}/sync", content=body, timeout=2).status_code == 200
        process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 1.0
        while (ready := httpx.get(f"{base}/readyz", timeout=2).status_code) == 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready == 503
        assert httpx.get(f"{base}/healthz", timeout=2).status_code == 200  # alive: the kubelet must not restart it
        assert httpx.post(f"{base}/sync", content=body, timeout=2).status_code == 200
        assert process.wait(timeout=10) == 0


def test_an_in_flight_call_finishes_after_sigterm_and_the_process_exits_0(tmp_path: Path) -> None:
    with launch(tmp_path, {"SHARDDB_SHUTDOWN_DELAY_SECONDS": "0.5"}) as hooks:
        process, port = hooks.process, hooks.port
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


def test_sigterm_with_nothing_in_flight_exits_0_right_after_the_delay(tmp_path: Path) -> None:
    with launch(tmp_path, {"SHARDDB_SHUTDOWN_DELAY_SECONDS": "0.5"}) as hooks:
        process = hooks.process
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        assert 0.4 < time.monotonic() - started < 3.0


def test_a_call_that_never_finishes_is_cut_off_at_the_graceful_timeout(tmp_path: Path) -> None:
    limits = {"SHARDDB_GRACEFUL_TIMEOUT_SECONDS": "1", "SHARDDB_BODY_TIMEOUT_SECONDS": "60"}
    with launch(tmp_path, {"SHARDDB_SHUTDOWN_DELAY_SECONDS": "0", **limits}) as hooks:
        process, port = hooks.process, hooks.port
        sock = socket.create_connection(("127.0.0.1", port))
        with sock:
            sock.sendall(sync_request()[:300])  # and never the rest
            time.sleep(0.2)
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
            assert time.monotonic() - started < 4.0


def test_ctrl_c_skips_the_delay(tmp_path: Path) -> None:
    with launch(tmp_path, {"SHARDDB_SHUTDOWN_DELAY_SECONDS": "30"}) as hooks:
        process = hooks.process
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
