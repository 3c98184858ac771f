"""A test process killed outright (a CI timeout, a Ctrl-C twice) leaves no server of its own behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.real.server import ROOT

pytestmark = pytest.mark.http

LAUNCHER = """
import sys, time
from pathlib import Path
from testbed.real.server import launch
with launch(Path(sys.argv[1])) as running:
    print(running.process.pid, flush=True)
    time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_hooks_server_dies_with_a_test_process_killed_without_its_teardown(tmp_path: Path) -> None:
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert launcher.stdout is not None
    server = int(launcher.stdout.readline())
    assert alive(server)
    launcher.send_signal(signal.SIGKILL)  # no finally block, no fixture teardown runs
    launcher.wait()
    deadline = time.monotonic() + 10
    while alive(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(server):
        os.kill(server, signal.SIGKILL)
        pytest.fail(f"the hooks server {server} outlived the test process that started it")
