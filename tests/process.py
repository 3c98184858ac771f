"""``python -m hooks`` as a child process the test controls: signals, exit code and logs.

Unlike ``server.serve`` its logs go to files, so a test may send thousands of bad
requests (each one a uvicorn warning) without a pipe filling up, then read them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from .server import ROOT, free_port


@dataclass
class HookProcess:
    process: subprocess.Popen[bytes]
    port: int
    stdout: Path
    stderr: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def logs(self) -> str:
        return self.stdout.read_text(errors="replace") + self.stderr.read_text(errors="replace")


@contextmanager
def hooks_process(logs: Path, **env: str) -> Iterator[HookProcess]:
    """Started and ready on a free loopback port; killed at the end if still running."""
    port = free_port()
    environment = {**os.environ, "SHARDDB_HOST": "127.0.0.1", "SHARDDB_PORT": str(port), **env}
    stdout, stderr = logs / f"hooks-{port}.out", logs / f"hooks-{port}.err"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        process = subprocess.Popen([sys.executable, "-m", "hooks"], cwd=ROOT, env=environment, stdout=out, stderr=err)
    running = HookProcess(process, port, stdout, stderr)
    try:
        deadline = time.monotonic() + 20
        while True:
            assert process.poll() is None, f"hook server exited: {running.logs()}"
            try:
                if httpx.get(f"{running.base}/readyz", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "hook server did not become ready"
            time.sleep(0.05)
        yield running
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
