"""Requests a real Metacontroller v4.17.2 sent, and children as its API server stored them.

They live beside the repository (``shared/fixtures/metacontroller-v4.17.2``), never
in it; ``SHARDDB_RECORDED`` names another folder. The tests that replay them are
their own tier (marker ``recorded``, outside ``make unit``): without the folder
they fail, with one message per run saying where to put it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hooks import kinds

from .prerequisites import Prerequisite

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT.parent / "shared" / "fixtures" / "metacontroller-v4.17.2"

Obj = dict[str, Any]

# Observed child groups of a request, by kind.
GROUPS = {kind.kind: kind.group_key for kind in kinds.CHILDREN}


@dataclass(frozen=True)
class Exchange:
    """One recorded hook call: what was asked, and what the hooks answered then."""

    name: str
    path: str
    request: Obj
    status: int
    response: Obj | None

    @property
    def finalize(self) -> bool:
        return self.path == "/finalize"

    def observed(self, kind: str, name: str) -> Obj | None:
        """The child as the API server stored it when the request was made."""
        namespace = self.request["parent"]["metadata"]["namespace"]
        group = (self.request.get("children") or {}).get(GROUPS[kind]) or {}
        found: Obj | None = group.get(f"{namespace}/{name}") or group.get(name)
        return found


class RecordingsNotFoundError(Exception):
    """The folder is missing; the message says where to put it."""


def _find() -> Path:
    path = Path(os.environ.get("SHARDDB_RECORDED") or DEFAULT)
    if not (path / "README.md").is_file():
        raise RecordingsNotFoundError(
            f"recorded Metacontroller requests not found at {path}: place shared/ beside the repository "
            "or set SHARDDB_RECORDED to the metacontroller-v4.17.2 fixtures folder"
        )
    return path


RECORDINGS = Prerequisite("the recorded Metacontroller requests", _find, RecordingsNotFoundError)


def folder() -> Path:
    """The recordings, or a failure that says how to get them (once per run)."""
    return RECORDINGS.get()


@cache
def _load(path: Path) -> Obj:
    loaded: Obj = json.loads(path.read_text())
    return loaded


def exchanges() -> list[Exchange]:
    """Every recorded call, in the order it happened (customize, sync 01-06, finalize 01-03)."""
    base = folder()
    files = [base / "customize.json", *sorted(base.glob("sync-*.json")), *sorted(base.glob("finalize-*.json"))]
    out = []
    for file in files:
        raw = _load(file)
        out.append(Exchange(file.stem, raw["path"], raw["request"], raw["responseStatus"], raw["response"]))
    return out


def stored() -> list[Obj]:
    """Children exactly as the API server stored them after Metacontroller created them."""
    return [_load(file) for file in sorted(folder().glob("stored-*.json"))]
