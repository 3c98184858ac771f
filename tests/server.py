"""Start the hook service as a real uvicorn process on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(env: dict[str, str] | None = None, scheme: str = "http", timeout: float = 20.0) -> Iterator[str]:
    """Run ``python -m hooks`` until the block ends; yields its base URL."""
    port = free_port()
    environment = {
        **os.environ,
        "SHARDDB_HOST": "127.0.0.1",
        "SHARDDB_PORT": str(port),
        "SHARDDB_SHUTDOWN_DELAY_SECONDS": "0",  # tests stop servers at once; the delay is tested on its own
        **(env or {}),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "hooks"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"{scheme}://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"hook server exited: {process.stderr.read().decode() if process.stderr else ''}")
            try:
                if httpx.get(f"{base}/readyz", timeout=1.0, verify=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("hook server did not become ready")
            time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
