"""Real stack: ``python -m hooks`` (or another server module) as a real process on a free loopback port.

Logs go to files, never to a pipe nobody reads, so a test may provoke thousands of
warnings without the server blocking on a full pipe; a test can read them afterwards.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
_PR_SET_PDEATHSIG = 1
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="spawner")


def _die_with_parent() -> None:
    """In the child before exec: own process group, and SIGKILL when the test process dies."""
    os.setsid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(args: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` of a part of the stack that dies with this process, even when it is killed.

    Forked from one long-lived thread: Linux sends the parent-death signal when the *thread* that
    forked a child ends, so a restart from a fault's short-lived thread would be killed with it.
    """

    def popen() -> subprocess.Popen[bytes]:
        return subprocess.Popen(list(args), preexec_fn=_die_with_parent, **options)  # preexec in the spawner thread

    return _SPAWNER.submit(popen).result()


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, ten seconds for it to end, then SIGKILL; reaped either way."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class HookProcess:
    process: subprocess.Popen[bytes]
    port: int
    scheme: str
    stdout: Path
    stderr: Path

    @property
    def base(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def logs(self) -> str:
        return self.stdout.read_text(errors="replace") + self.stderr.read_text(errors="replace")


@contextmanager
def launch(
    logs: Path,
    env: dict[str, str] | None = None,
    *,
    module: str = "hooks",
    scheme: str = "http",
    prefix: Sequence[str] = (),
    timeout: float = 20.0,
    cwd: Path = ROOT,
    isolated: bool = False,
    port: int | None = None,
) -> Iterator[HookProcess]:
    """Started and ready (``/readyz`` 200); SIGTERM at the end, SIGKILL if it lingers.

    ``cwd`` is the checkout whose code runs; ``isolated`` drops ``PYTHONPATH`` and every
    ``SHARDDB_*`` setting of this process, so another checkout runs its own code with its defaults.
    ``port`` serves again where an earlier server was (a restart behind the same URL).
    """
    port = port or free_port()
    inherited = {
        key: value
        for key, value in os.environ.items()
        if not (isolated and (key == "PYTHONPATH" or key.startswith("SHARDDB_")))
    }
    environment = {
        **inherited,
        "SHARDDB_SHUTDOWN_DELAY_SECONDS": "0",  # no load balancer to wait for; the delay is tested on its own
        **(env or {}),
        "SHARDDB_HOST": "127.0.0.1",
        "SHARDDB_PORT": str(port),
    }
    stdout, stderr = logs / f"{module}-{port}.out", logs / f"{module}-{port}.err"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        # A test process killed outright leaves no server behind.
        process = spawn([*prefix, sys.executable, "-m", module], cwd=cwd, env=environment, stdout=out, stderr=err)
    running = HookProcess(process, port, scheme, stdout, stderr)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{module} server exited: {running.logs()}")
            try:
                if httpx.get(f"{running.base}/readyz", timeout=1.0, verify=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{module} server did not become ready: {running.logs()}")
            time.sleep(0.05)
        yield running
    finally:
        stop(process)


@contextmanager
def serve(env: dict[str, str] | None = None, scheme: str = "http", timeout: float = 20.0) -> Iterator[str]:
    """The hook service for the length of the block; yields its base URL."""
    with (
        tempfile.TemporaryDirectory(prefix="sharddb-hooks-") as logs,
        launch(Path(logs), env, scheme=scheme, timeout=timeout) as running,
    ):
        yield running.base
