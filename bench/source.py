"""One code version for the fleet benchmark: a git revision unpacked, or the working tree.

A revision is extracted with ``git archive`` (its ``hooks/``, ``crds/``,
``metacontroller/`` and ``examples/``) and run from that directory, so the
baseline runs exactly the code, CRD, CompositeController and example it names.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("hooks", "crds", "metacontroller", "examples")


@dataclass(frozen=True)
class Source:
    """Where a version's files are, and how to name it in a report."""

    revision: str  # short commit; ``+`` when the working tree has changes there
    origin: str  # "git archive 950cc8a", "working tree"
    directory: Path


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def extract(revision: str, into: Path) -> Source:
    """``git archive REV hooks crds metacontroller examples`` unpacked into ``into``."""
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
