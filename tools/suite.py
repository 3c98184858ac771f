"""``python -m tools.suite`` (``make test``): every tier, each starting once the builds it needs are done.

On 2 cores, a first run spends half its time building (Go's compiles, Debian's images) and the
end-to-end tier spends most of its time waiting, so the phases run in five lanes side by side:

- ``builds``: the test stack's binaries, then the nodes' (Go, at a lower CPU priority);
- ``images``: the test and product images (mmdebstrap, lower priority), the guide, ``make image``, then the
  Patroni images and their tier (real Patroni against the test stack) beside the last two tiers;
- ``unit``: lint and the fast tier (every test that needs no API server), one core's work;
- ``tests``: the cluster tier, then the data and installed tiers on real nodes (the run's longest path);
- ``own-stacks``: the end-to-end files that start stacks of their own (``OWN_STACKS``), then the
  end-to-end tests on the shared stack, mostly waiting, beside the data tier and the installed tier's start.

Each phase's output is kept in ``.evidence/suite/``; the test lane's also streams as it comes. The
run ends with a table (when each phase started, its wall and CPU minutes, its result) and a line
counting every test of every tier.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
COUNTS = re.compile(r"(?P<count>\d+) (?P<what>passed|failed|errors?|skipped)\b")
SUMMARY = re.compile(r"^=+ .*\b(passed|failed|errors?|no tests ran)\b.* in [\d.]+s")
# pytest's short summary: one line per failed test, which the closing lines repeat so a log's tail names them.
FAILURE = re.compile(r"^(FAILED|ERROR) \S")
LOGS = ROOT / ".evidence" / "suite"


@dataclass(frozen=True)
class Phase:
    """One command of the run: it waits for ``needs`` (and is not run if one failed) and for ``after`` (however
    it ended), then runs after the phases before it in its lane."""

    name: str
    command: tuple[str, ...]
    lane: str
    needs: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    pytest: bool = False
    nice: int = 0  # a lower CPU priority (nice), so a build (or a tier beside the last two) never slows them


def pytest_phase(
    name: str,
    markers: str,
    *paths: str,
    lane: str = "tests",
    needs: tuple[str, ...] = (),
    after: tuple[str, ...] = (),
    sandboxed: bool = False,
    nice: int = 0,
) -> Phase:
    command: tuple[str, ...] = (PYTHON, "-m", "pytest", "-m", markers, *paths)
    if sandboxed:  # a real node's tier runs inside namespaces of its own (testbed/real/sandbox.py)
        command = (PYTHON, "-m", "testbed.real.sandbox", "--", *command)
    return Phase(name, command, lane, needs, after, pytest=True, nice=nice)


FAST = "not cluster and not e2e and not data and not installed and not patroni"
# The end-to-end files that start stacks of their own (an older checkout, two partitions, a canned hook, the
# fault campaign): half the tier's time, mostly waiting, so they run in a lane of their own beside the cluster
# tier, and the shared stack's end-to-end tests follow them there.
OWN_STACKS = (
    "tests/e2e/test_chaos.py",
    "tests/e2e/test_model.py",
    "tests/e2e/test_partitions.py",
    "tests/e2e/test_strategies.py",
    "tests/e2e/test_upgrade.py",
)
NODE = ("testbin", "nodebin", "images", "product-images")
# Go's compiles in one, Debian's packages (mmdebstrap, mostly waiting on the network and dpkg) in the other.
BUILD_LANES = ("builds", "images")
PHASES = (
    # The test stack gates the cluster and end-to-end tiers; the images are needed only by the last two tiers.
    Phase("testbin", ("bash", "testbed/real/build-binaries.sh"), "builds", nice=10),
    Phase("nodebin", ("bash", "testbed/real/build-node-binaries.sh"), "builds", nice=10),
    Phase("images", (PYTHON, "-m", "testbed.images.workloads"), "images", nice=19),
    Phase("product-images", (PYTHON, "-m", "testbed.images.product"), "images", nice=19),
    Phase("docs", ("make", "--no-print-directory", "docs"), "images"),
    Phase("image", ("make", "--no-print-directory", "image"), "images"),
    # The images lane is idle once make image is done, while the data and installed tiers run: the Patroni
    # images build there (lowest priority), then their tier, which needs only the test stack; it too yields the
    # CPU to the tiers beside it, whose outages are measured (its containers and API server inherit the nice).
    Phase("patroni-images", (PYTHON, "-m", "tools.image.patroni"), "images", nice=19),
    pytest_phase("patroni", "patroni", lane="images", needs=("testbin", "patroni-images"), nice=10),
    Phase("lint", ("make", "--no-print-directory", "lint"), "unit"),
    # The fast phase holds the bare-clone check (``tests/tree/test_bare_clone.py``: the unit part once more, 5 of
    # its 14 minutes). In a phase of its own beside the data tier it made that window too busy for the Patroni
    # tier's two-primaries check, whose prober then missed its quarter-second cadence (0.293 s).
    pytest_phase("fast", FAST, lane="unit"),
    pytest_phase("cluster", "cluster", needs=("testbin",)),
    pytest_phase("e2e-own-stacks", "e2e", *OWN_STACKS, lane="own-stacks", needs=("testbin",)),
    # The shared stack's end-to-end tests, mostly waiting (2 CPU minutes in 11), follow the files with stacks of
    # their own in their lane, beside the data and installed tiers: the tiers on real nodes, the run's longest
    # path, start once the builds they need are done, not after them.
    pytest_phase("e2e", "e2e", *(f"--ignore={path}" for path in OWN_STACKS), lane="own-stacks", needs=("testbin",)),
    # The data tier waits for the fast phase's core. Not for the files with stacks of their own: as light on the
    # CPU as the shared stack's end-to-end tests it already ran beside (4.2 CPU minutes in 11, those 4.4 in 12),
    # and on a cold run their end (the test stack's build, then 11 minutes) came 5 minutes after the nodes' builds.
    pytest_phase("data", "data", needs=NODE, after=("fast",), sandboxed=True),
    # The run's longest path: its log ends with where its time went (pytest's slowest 40 setups, calls, teardowns).
    # Started at 4 minutes instead, beside the fast phase and the end-to-end tests (load average 18 on 2 cores), it
    # ran 40 % slower and its network checks failed: a pod's connection to the hooks refused, the API server's
    # proxy to Prometheus unavailable (2026-12-07). It waits for the fast phase's core, behind the data tier.
    pytest_phase("installed", "installed", "--durations=40", needs=NODE, sandboxed=True),
)


@dataclass
class Result:
    phase: Phase
    started: float = 0.0
    seconds: float = 0.0
    cpu: float = 0.0
    code: int | None = None
    skipped_for: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def ok(self) -> bool:
        return self.code == 0

    def outcome(self) -> str:
        if self.skipped_for:
            return f"not run: {self.skipped_for}"
        if self.code is None:
            return "not run"
        tests = ", ".join(f"{n} {what}" for what, n in self.counts.items())
        return ("passed" if self.ok else f"FAILED (exit {self.code})") + (f": {tests}" if tests else "")


class Run:
    """The phases' results, and the lock that keeps one lane's lines whole beside the other's."""

    def __init__(self, phases: Sequence[Phase]) -> None:
        self.start = time.monotonic()
        self.results = {phase.name: Result(phase) for phase in phases}
        self.output = threading.Lock()

    def say(self, line: str) -> None:
        with self.output:
            sys.stderr.write(f"suite: {line}\n")
            sys.stderr.flush()

    def wait_for(self, result: Result) -> bool:
        """Wait for the phases a phase comes after; False (and why, on the result) when one it needs failed."""
        for name in (*result.phase.needs, *result.phase.after):
            other = self.results.get(name)
            if other is None:
                continue  # left out by --only
            if not other.done.is_set():
                self.say(f"{result.phase.name} waits for {name}")
                other.done.wait()
            if name in result.phase.needs and not other.ok:
                result.skipped_for = f"{name} failed"
                return False
        return True

    def execute(self, result: Result) -> None:
        """Run one phase. The test lane's output streams as it comes; a build's progress lines (its stderr) are
        shown with its name; every other lane's output goes only to its log, whose end is shown if it fails."""
        phase = result.phase
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / f"{phase.name}.log"
        # A tier in a build lane (the Patroni tier) is a tier: its output is kept whole, not shown as progress.
        live, builds = phase.lane == "tests", phase.lane in BUILD_LANES and not phase.pytest
        result.started = time.monotonic() - self.start
        self.say(f"{phase.name} starts at {result.started / 60:.1f} min: {' '.join(phase.command[-4:])}")
        # The builds yield the CPU to the tiers running beside them. make image's check (a service started
        # within a time) is not one of them.
        command = ("nice", "-n", str(phase.nice), *phase.command) if phase.nice else phase.command
        with log.open("w") as kept:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=kept if builds else subprocess.PIPE,
                stderr=subprocess.PIPE if builds else subprocess.STDOUT,
                text=True,
                bufsize=1,
            )
            stream = process.stderr if builds else process.stdout
            assert stream is not None
            tail: list[str] = []
            for line in stream:
                kept.write(line)
                tail = [*tail[-39:], line]
                if phase.pytest and FAILURE.match(line):
                    result.failures.append(line.rstrip())
                if builds:
                    self.say(f"[{phase.name}] {line.rstrip()}")
                elif live:
                    with self.output:
                        sys.stdout.write(line)
                        sys.stdout.flush()
            # wait4: the CPU the phase's whole process tree spent (each descendant counts once reaped), so
            # the table says where the machine's two cores went, not only the wall clock.
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = result.code = os.waitstatus_to_exitcode(status)
            result.cpu = usage.ru_utime + usage.ru_stime
        result.seconds = time.monotonic() - self.start - result.started
        if phase.pytest:
            result.counts = pytest_counts(tail)
        if not result.ok and not live:
            with self.output:
                sys.stderr.write(f"suite: the end of {phase.name}'s output:\n{''.join(tail)}")
        kept_in = os.path.relpath(log, ROOT)
        self.say(f"{phase.name} {result.outcome()} in {result.seconds / 60:.1f} min (log: {kept_in})")

    def lane(self, name: str) -> None:
        for result in self.results.values():
            if result.phase.lane != name:
                continue
            try:
                if self.wait_for(result):
                    self.execute(result)
            finally:
                result.done.set()

    def table(self) -> str:
        lines = [
            "",
            "| phase | lane | started (min) | took (min) | CPU (min) | result |",
            "|---|---|---:|---:|---:|---|",
        ]
        for result in self.results.values():
            ran = result.code is not None
            started, took, cpu = (
                f"{value / 60:.1f}" if ran else "" for value in (result.started, result.seconds, result.cpu)
            )
            lines.append(
                f"| {result.phase.name} | {result.phase.lane} | {started} | {took} | {cpu} | {result.outcome()} |"
            )
        spent = sum(result.cpu for result in self.results.values())
        lines.append(f"| all | | | {(time.monotonic() - self.start) / 60:.1f} | {spent / 60:.1f} | |")
        return "\n".join(lines)


def pytest_counts(tail: Sequence[str]) -> dict[str, int]:
    """Counts from pytest's closing line (``=== 12 passed, 1 failed, 2 errors in 3.0s ===``); errors count once."""
    for line in reversed(tail):
        if SUMMARY.search(line):
            return {match["what"].removesuffix("s"): int(match["count"]) for match in COUNTS.finditer(line)}
    return {}


def shorten(line: str, width: int = 240) -> str:
    """A failure's line, cut to fit a CI summary's tail (the whole line stays in the phase's log)."""
    return line if len(line) <= width else line[: width - 1] + "…"


def run_all(phases: Sequence[Phase]) -> Run:
    """Every lane in a thread of its own, side by side, until all have ended."""
    run = Run(phases)
    names = dict.fromkeys(phase.lane for phase in phases)
    lanes = [threading.Thread(target=run.lane, args=(name,), name=name) for name in names]
    for thread in lanes:
        thread.start()
    for thread in lanes:
        thread.join()
    return run


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.suite", description=__doc__)
    parser.add_argument("--only", default="", help="comma-separated phases to run (and the builds they need)")
    args = parser.parse_args(argv)
    phases: tuple[Phase, ...] = PHASES
    if args.only:
        wanted = set(args.only.split(","))
        wanted |= {need for phase in PHASES if phase.name in wanted for need in phase.needs}
        phases = tuple(phase for phase in PHASES if phase.name in wanted)
    run = run_all(phases)
    results = run.results.values()
    with run.output:
        print(run.table(), file=sys.stderr)
        passed = sum(r.counts.get("passed", 0) for r in results)
        failed = sum(r.counts.get("failed", 0) + r.counts.get("error", 0) for r in results)
        for result in results:
            for failure in result.failures:
                print(f"suite: {result.phase.name}: {shorten(failure)}")
        print(f"suite: {passed} passed, {failed} failed")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
