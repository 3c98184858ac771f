"""Real stack: what a stack said, kept after it stops: its logs (cut to a window, bounded) copied out of its folder.

A stack's parts all log into its control plane's folder (``<root>/*.log``, the
audit log among them, and the hooks' files in ``<root>/hooks/``), which goes
with the stack. The test tiers keep a failing test's window of them
(``tests/support/evidence.py``); the fault campaign keeps a failed campaign's.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

FILE_BYTES = 4 * 1024 * 1024


def logs(root: Path) -> list[Path]:
    """Every log of the stack whose folder is ``root``."""
    hooks = root / "hooks"
    found = sorted(root.glob("*.log"))
    if hooks.is_dir():
        found += sorted(p for p in hooks.iterdir() if p.is_file())
    return found


def window(log: Path, start: int, target: Path, limit: int = FILE_BYTES) -> str:
    """Copy ``log`` from byte ``start`` on (its last ``limit`` bytes, from a line's start); say what was cut."""
    with log.open("rb") as source:
        end = source.seek(0, os.SEEK_END)
        start = min(start, end)
        begin = max(start, end - limit)
        source.seek(begin)
        text = source.read(end - begin)
    if begin > start and b"\n" in text:
        text = text[text.index(b"\n") + 1 :]
    target.write_bytes(text)
    cut = end - start - len(text)
    return f"{target.name}: bytes {start}..{end} of {log}" + (f", the first {cut} left out" if cut else "")


def keep_logs(root: Path, target: Path, marks: dict[Path, int] | None = None, limit: int = FILE_BYTES) -> None:
    """Each log of ``root`` from its mark (the start without one) into ``target``; ``windows.txt`` says the cuts."""
    target.mkdir(parents=True, exist_ok=True)
    cuts = []
    for log in logs(root):
        name = log.name if log.parent == root else f"{log.parent.name}-{log.name}"
        with contextlib.suppress(OSError):
            cuts.append(window(log, (marks or {}).get(log, 0), target / name, limit))
    (target / "windows.txt").write_text("\n".join(cuts) + "\n")
