"""Prometheus's ``promtool``, to check and unit-test the shipped alert rules: found, or taken from Debian's package.

Debian packages Prometheus as ``prometheus``, which ships ``/usr/bin/promtool``. Installing it also
installs (and, where an init system runs, starts) a Prometheus server as a service, which no test
wants; so when no promtool is found, this downloads the package with ``apt-get download`` (the
machine's own Debian registry, no root needed) and keeps its two programs, promtool and the
server (which a test starts on loopback and stops), in the cache outside the repository.

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
PROGRAMS = ("promtool", "prometheus")
HOW = (
    "promtool (Debian package prometheus) checks and tests the alert rules: install it with "
    "`apt-get install prometheus`, or let `python -m testbed.real.promtool` take it from the package into "
    "the cache ($XDG_CACHE_HOME/sharddb/promtool), or set SHARDDB_PROMTOOL (and SHARDDB_PROMETHEUS) to one"
)


class PromtoolMissingError(RuntimeError):
    """No promtool here, and none could be taken from the Debian package."""


def cache_dir() -> Path:
    return cache_root() / "promtool"


def find(environ: dict[str, str] | None = None, program: str = "promtool") -> Path | None:
    """SHARDDB_PROMTOOL (SHARDDB_PROMETHEUS), else ``program`` on PATH, else the one cached by ``fetch``."""
    env = os.environ if environ is None else environ
    named = env.get(f"SHARDDB_{program.upper()}")
    if named:
        return Path(named)
    on_path = shutil.which(program, path=env.get("PATH"))
    if on_path is not None:
        return Path(on_path)
    cached = cache_dir() / program
    return cached if cached.is_file() else None


def _run(args: list[str], cwd: Path) -> None:
    try:
        done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PromtoolMissingError(f"{' '.join(args)}: {error}; {HOW}") from None
    if done.returncode != 0:
        raise PromtoolMissingError(f"{' '.join(args)} failed: {done.stderr.strip()[-500:]}; {HOW}")


def fetch() -> Path:
    """Downloads the Debian package and keeps its promtool and prometheus in the cache; nothing is installed."""
    target = cache_dir()
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as scratch:
        work = Path(scratch)
        _run(["apt-get", "download", PACKAGE], work)
        debs = sorted(work.glob(f"{PACKAGE}_*.deb"))
        if not debs:
            raise PromtoolMissingError(f"apt-get download {PACKAGE} left no package; {HOW}")
        _run(["dpkg-deb", "-x", str(debs[0]), "root"], work)
        for program in PROGRAMS:
            extracted = work / "root" / "usr" / "bin" / program
            if not extracted.is_file():
                raise PromtoolMissingError(f"{debs[0].name} holds no usr/bin/{program}; {HOW}")
            staged = work / program
            shutil.copy2(extracted, staged)
            staged.replace(target / program)  # atomic: a concurrent run sees the whole file or none
    return target / "promtool"


def promtool() -> Path:
    """A promtool to run, fetched once if none is found."""
    return find() or fetch()


def prometheus() -> Path:
    """A Prometheus server to run (the same package's), fetched once if none is found."""
    found = find(program="prometheus")
    if found is None:
        fetch()
        found = cache_dir() / "prometheus"
    return found


def main() -> int:
    try:
        print(promtool())
    except PromtoolMissingError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
