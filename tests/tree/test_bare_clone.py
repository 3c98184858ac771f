"""The fast tier needs nothing from outside the repository: ``make unit`` passes in a bare clone.

The clone is a git clone of this checkout with the working tree's changes on top (as
a commit of them would hold it; ignored files left out), in a folder with nothing
beside it, so ``../shared`` is absent; no ``SHARDDB_*`` setting points elsewhere, and every request
off loopback goes to a proxy that is not there. It runs the fast tier's own marker
expression, read from the Makefile, so the two cannot drift apart.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens

pytestmark = pytest.mark.slow  # it runs the whole fast tier once more


def unit_expression() -> str:
    match = re.search(r"^UNIT := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, "the Makefile defines the fast tier's marker expression as UNIT := …"
    return match[1].strip()


def bare_clone(target: Path) -> Path:
    """A git clone of this checkout, with the working tree's tracked and new files (ignored ones left out) on top."""
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True, capture_output=True)

    def listed(*options: str) -> list[str]:
        found = subprocess.run(["git", "ls-files", "-z", *options], cwd=ROOT, capture_output=True, check=True).stdout
        return [name for name in found.decode().split("\0") if name]

    for name in listed("--deleted"):
        (target / name).unlink(missing_ok=True)
    for name in listed("--cached", "--others", "--exclude-standard"):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def offline_environment() -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("SHARDDB_") and k != "PYTHONPATH"}
    proxies = dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"), NOWHERE)
    return {**kept, **proxies, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def test_the_fast_tier_passes_in_a_bare_clone_with_nothing_beside_it(tmp_path: Path) -> None:
    clone = bare_clone(tmp_path / "clone")
    assert not (clone.parent / "shared").exists()
    assert (clone / "Makefile").is_file()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", unit_expression()],
        cwd=clone,
        env=offline_environment(),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    summary = run.stdout.strip().splitlines()[-1:] or [run.stderr[-2000:]]
    failures = [line for line in run.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    assert run.returncode == 0, f"{summary[0]}\n" + "\n".join(failures[:40])
    assert " passed" in summary[0]
