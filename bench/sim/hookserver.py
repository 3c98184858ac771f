"""The hooks of one code version as a real ``python -m hooks`` process on loopback.

A git revision is extracted with ``git archive`` (its ``hooks/``, ``crds/`` and
``metacontroller/``) and run from that directory, so the baseline runs exactly
the code, CRD and CompositeController it names.
"""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("hooks", "crds", "metacontroller")


@dataclass(frozen=True)
class Source:
    """Where a version's hooks, CRD and CompositeController are, and how to name it in a report."""

    revision: str  # short commit; ``+`` when the working tree has changes there
    origin: str  # "git archive 086dd9c", "working tree"
    directory: Path


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def extract(revision: str, into: Path) -> Source:
    """``git archive REV hooks crds metacontroller`` unpacked into ``into``."""
    commit = git("rev-parse", "--short", f"{revision}^{{commit}}")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, *PARTS], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return Source(revision=commit, origin=f"git archive {revision}", directory=into)


def working_tree() -> Source:
    """This checkout; a revision ending in ``+`` has uncommitted changes in one of ``PARTS``."""
    commit = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--", *PARTS)
    return Source(revision=commit + ("+" if dirty else ""), origin="working tree", directory=ROOT)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(source: Source, logs: Path, timeout: float = 30.0) -> Iterator[str]:
    """``python -m hooks`` from the version's directory until the block ends; yields its base URL."""
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH" and not key.startswith("SHARDDB_")}
    env.update(
        SHARDDB_HOST="127.0.0.1",
        SHARDDB_PORT=str(port),
        SHARDDB_LOG_LEVEL="WARNING",
        SHARDDB_SHUTDOWN_DELAY_SECONDS="0",
    )
    log = logs / f"hooks-{source.revision.rstrip('+')}-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "hooks"], cwd=source.directory, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, base, log, timeout)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(process: subprocess.Popen[bytes], base: str, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"hooks exited ({process.returncode}):\n{log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{base}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"hooks not ready after {timeout:.0f}s:\n{log.read_text(errors='replace')[-2000:]}")
