"""``python -m bench.ha`` (``make bench-ha``): the members' fault steps, repeated, as p50 and max per step.

CI runs each step of ``tests/installed/test_production_members/`` once (a file per step, in
order); one gap is not a figure. This runs that folder ``--runs`` times, each a session of its
own inside the real nodes' namespaces (as ``make installed`` runs it), reads back the outages each
session wrote (``SHARDDB_OUTAGES_JSON``, ``testbed/faults/outages.py``'s ``Outage``, the class the
tier writes) and prints one table over all of them. The figures are benchmark goals, not
assertions: a failed run is reported, its outages still counted if it wrote them, and the exit
status is 1 (as when a run's outages cannot be read)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from testbed.faults.outages import Outage

ROOT = Path(__file__).resolve().parent.parent
# The members' steps, one file each, run in their order (``test_01_bring_up.py`` to ``test_15_deletion.py``).
FOLDER = "tests/installed/test_production_members"
OUTAGES_ENV = "SHARDDB_OUTAGES_JSON"
HEADER = "| step | runs | outage p50 (s) | outage max (s) |\n|---|---:|---:|---:|"


@dataclass(frozen=True)
class Row:
    """One step over every run: ``gaps`` pools the affected writers' gaps of each run that recorded it."""

    step: str
    runs: int
    gaps: tuple[float, ...]

    def line(self) -> str:
        if not self.gaps:
            return f"| {self.step} | {self.runs} | — | — |"
        return f"| {self.step} | {self.runs} | {statistics.median(self.gaps):.1f} | {max(self.gaps):.1f} |"


def rows(runs: Sequence[Sequence[Outage]]) -> list[Row]:
    """Each step's row, in the order the steps first ran; a step recorded twice in a run counts once as a run."""
    order: list[str] = []
    seen: dict[str, int] = {}
    gaps: dict[str, list[float]] = {}
    for run in runs:
        for step in dict.fromkeys(outage.step for outage in run):
            if step not in seen:
                order.append(step)
            seen[step] = seen.get(step, 0) + 1
        for outage in run:
            gaps.setdefault(outage.step, []).extend(outage.gaps[name] for name in outage.affected)
    return [Row(step, seen[step], tuple(gaps.get(step, []))) for step in order]


def table(found: Sequence[Row]) -> str:
    return "\n".join([HEADER, *(row.line() for row in found)])


def read(path: Path) -> list[Outage]:
    """A run's outages file; ``ValueError`` saying what is wrong with it when it is missing or not the conftest's."""
    try:
        loaded = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{path} was not written") from None
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not JSON: {error}") from None
    if not isinstance(loaded, list):
        raise ValueError(f"{path} is not a list of outages")
    try:
        return [Outage.from_json(item) for item in loaded]
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def collect(files: Sequence[Path]) -> tuple[list[list[Outage]], list[str]]:
    """Every readable run's outages, and a line for each run whose file could not be read (numbered from 1)."""
    runs: list[list[Outage]] = []
    problems: list[str] = []
    for number, path in enumerate(files, 1):
        try:
            runs.append(read(path))
        except ValueError as error:
            problems.append(f"run {number}: {error}")
    return runs, problems


def command(python: str = sys.executable) -> list[str]:
    """The members' steps alone, inside the real nodes' namespaces, as ``make installed`` runs its tier."""
    pytest = [python, "-m", "pytest", "-m", "installed", FOLDER, "-p", "no:cacheprovider", "-q"]
    return [python, "-m", "testbed.real.sandbox", "--", *pytest]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ha", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="sessions of the members' steps (20)")
    parser.add_argument("--keep", type=Path, help="keep each run's log and outages here (else kept only on failure)")
    args = parser.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="sharddb-bench-ha-"))
    folder.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    failed: list[str] = []
    for number in range(1, args.runs + 1):
        outages, log = folder / f"run-{number}.json", folder / f"run-{number}.log"
        outages.unlink(missing_ok=True)  # a kept folder's older file must not stand in for this run's
        files.append(outages)
        started = time.monotonic()
        # The caller's environment goes through: the tier needs what .ci/run exports (SHARDDB_METACONTROLLER_*).
        environment = {**os.environ, OUTAGES_ENV: str(outages.resolve())}
        with log.open("w") as out:
            code = subprocess.run(command(), cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT).returncode
        result = "passed" if code == 0 else f"FAILED (exit {code}; log {log})"
        print(f"run {number}/{args.runs}: {result}, {time.monotonic() - started:.0f} s", flush=True)
        if code != 0:
            failed.append(f"run {number} failed (exit {code}): {log}")
    runs, problems = collect(files)
    print(table(rows(runs)))
    for line in [*failed, *problems]:
        print(line)
    if args.keep is None:
        if failed or problems:
            print(f"each run's log and outages: {folder}")
        else:
            shutil.rmtree(folder)
    return 1 if failed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
