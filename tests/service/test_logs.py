"""One log format: every line the service writes is a JSON object of one shape, uvicorn's lines included."""

from __future__ import annotations

import json
import logging
import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from hooks.service.logs import JSONFormatter
from testbed.models.world import World
from testbed.real.server import launch

SHAPE = ["time", "level", "msg"]


def lines_of(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every line of a whole life of the real server: start, a hook call, a request uvicorn refuses, SIGTERM."""
    with launch(tmp_path_factory.mktemp("logs")) as running:
        httpx.post(f"{running.base}/sync", content=json.dumps(World().request()), timeout=10)
        with socket.create_connection(("127.0.0.1", running.port), timeout=5) as sock:
            sock.sendall(b"not http at all\r\n\r\n")
            sock.recv(1024)
    # launch has stopped the process and waited for it, so its shutdown lines are written too.
    return lines_of(running.stdout) + lines_of(running.stderr)


def parsed(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


@pytest.mark.http
def test_every_line_on_stdout_and_stderr_is_a_json_object_that_starts_time_level_msg(written: list[str]) -> None:
    assert written
    for line in written:
        try:
            entry = json.loads(line)
        except ValueError:
            pytest.fail(f"not JSON: {line}")
        assert isinstance(entry, dict), line
        assert list(entry)[:3] == SHAPE, line


@pytest.mark.http
def test_uvicorn_startup_and_shutdown_are_logged_in_that_shape(written: list[str]) -> None:
    messages = [entry["msg"] for entry in parsed(written)]
    assert "Application startup complete." in messages
    assert "Application shutdown complete." in messages


@pytest.mark.http
def test_a_request_uvicorn_refuses_is_logged_in_that_shape_as_a_warning(written: list[str]) -> None:
    refused = [entry for entry in parsed(written) if entry["msg"] == "Invalid HTTP request received."]
    assert [entry["level"] for entry in refused] == ["warning"]


@pytest.mark.http
def test_a_hook_call_is_logged_in_that_shape_with_its_fields(written: list[str]) -> None:
    (call,) = [entry for entry in parsed(written) if entry["msg"] == "hook"]
    assert (call["hook"], call["status"]) == ("sync", 200)


def test_a_traceback_stays_inside_its_one_line() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    line = JSONFormatter().format(record)
    assert "\n" not in line
    assert "RuntimeError: boom" in json.loads(line)["error"]
