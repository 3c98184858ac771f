"""The hooks of one code version as a real ``python -m hooks`` process on loopback.

A git revision is extracted with ``git archive`` (its ``hooks/``, ``crds/`` and
``metacontroller/``) and run from that directory, so the baseline runs exactly
the code, CRD and CompositeController it names.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from testbed.server import launch

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


@contextmanager
def serve(source: Source, logs: Path, timeout: float = 30.0) -> Iterator[str]:
    """``python -m hooks`` from the version's directory until the block ends; yields its base URL."""
    env = {"SHARDDB_LOG_LEVEL": "WARNING"}
    with launch(logs, env, timeout=timeout, cwd=source.directory, isolated=True) as running:
        yield running.base
