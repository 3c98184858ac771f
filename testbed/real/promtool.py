"""Prometheus's ``promtool``, to check and unit-test the shipped alert rules: found, or taken from Debian's package.

Debian packages Prometheus as ``prometheus``, which ships ``/usr/bin/promtool``. Installing it also
installs (and, where an init system runs, starts) a Prometheus server, which no test wants; so
when no promtool is found, this downloads the package with ``apt-get download`` (the machine's own
Debian registry, no root needed) and keeps only promtool, in the cache outside the repository.

``python -m testbed.real.promtool`` prints its path, fetching it first when needed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .machine import cache_root

PACKAGE = "prometheus"
HOW = (
    "promtool (Debian package prometheus) checks and tests the alert rules: install it with "
    "`apt-get install prometheus`, or let `python -m testbed.real.promtool` take it from the package into "
    "the cache ($XDG_CACHE_HOME/sharddb/promtool), or set SHARDDB_PROMTOOL to a promtool"
)


class PromtoolMissingError(RuntimeError):
    """No promtool here, and none could be taken from the Debian package."""


def cache_dir() -> Path:
    return cache_root() / "promtool"


def find(environ: dict[str, str] | None = None) -> Path | None:
    """SHARDDB_PROMTOOL, else promtool on PATH, else the one cached by ``fetch``."""
    env = os.environ if environ is None else environ
    named = env.get("SHARDDB_PROMTOOL")
    if named:
        return Path(named)
    on_path = shutil.which("promtool", path=env.get("PATH"))
    if on_path is not None:
        return Path(on_path)
    cached = cache_dir() / "promtool"
    return cached if cached.is_file() else None


def _run(args: list[str], cwd: Path) -> None:
    try:
        done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PromtoolMissingError(f"{' '.join(args)}: {error}; {HOW}") from None
    if done.returncode != 0:
        raise PromtoolMissingError(f"{' '.join(args)} failed: {done.stderr.strip()[-500:]}; {HOW}")


def fetch() -> Path:
    """Downloads the Debian package and keeps its promtool in the cache; the package is not installed."""
    target = cache_dir()
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as scratch:
        work = Path(scratch)
        _run(["apt-get", "download", PACKAGE], work)
        debs = sorted(work.glob(f"{PACKAGE}_*.deb"))
        if not debs:
            raise PromtoolMissingError(f"apt-get download {PACKAGE} left no package; {HOW}")
        _run(["dpkg-deb", "-x", str(debs[0]), "root"], work)
        extracted = work / "root" / "usr" / "bin" / "promtool"
        if not extracted.is_file():
            raise PromtoolMissingError(f"{debs[0].name} holds no usr/bin/promtool; {HOW}")
        staged = work / "promtool"
        shutil.copy2(extracted, staged)
        staged.replace(target / "promtool")  # atomic: a concurrent run sees the whole file or none
    return target / "promtool"


def promtool() -> Path:
    """A promtool to run, fetched once if none is found."""
    return find() or fetch()


def main() -> int:
    try:
        print(promtool())
    except PromtoolMissingError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
