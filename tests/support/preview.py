"""``python -m hooks render`` run as a user runs it: a real subprocess from the repository root, once per input.

Shared by the preview's tests (``tests/service/``) and the guide's (``tests/docs/``), which show its output.
"""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@cache
def render(source: str, stage: str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m hooks render`` from the repository root, as the guide shows it (docs/api/preview.md)."""
    args = [sys.executable, "-m", "hooks", "render", source, *(["--stage", stage] if stage else [])]
    return subprocess.run(args, cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=60, check=False)


def rendered(source: str, stage: str | None = None, stdin: str | None = None) -> str:
    result = render(source, stage, stdin)
    assert result.returncode == 0, result.stderr
    return result.stdout
