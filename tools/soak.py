"""``python -m tools.soak`` (``make soak``): the end-to-end and data tiers run N times, to measure how flaky they are.

Each run is a fresh pytest session of each tier, one after the other (the data
tier inside the real node's namespaces, as ``make data`` runs it). It prints each
run's result as it ends and, at the end, every failure's first line with the
folder its evidence was kept in; it exits 1 if any run failed. A tier's whole
output is kept in ``.evidence/soak-<time>/``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"(?P<count>\d+) (?P<what>passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
FAILURE = re.compile(r"^(FAILED|ERROR) ")
EVIDENCE = re.compile(r"^in (?P<folder>\S+)/ \(logs cut")


@dataclass(frozen=True)
class Tier:
    name: str
    command: list[str]


@dataclass
class Outcome:
    """One tier's session in one run, read from its output."""

    tier: str
    code: int
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # "FAILED test - its message's first line"
    evidence: str = ""

    @property
    def passed(self) -> bool:
        return self.code == 0

    def __str__(self) -> str:
        counts = ", ".join(f"{count} {what}" for what, count in self.counts.items()) or f"exit {self.code}"
        return f"{self.tier} {'passed' if self.passed else 'FAILED'} ({counts}; {self.seconds:.0f} s)"


def read(tier: str, code: int, seconds: float, output: str) -> Outcome:
    """What a pytest session said: the counts of its last line, its short summary's failures, its evidence folder."""
    lines = output.splitlines()
    last = next((line for line in reversed(lines) if SUMMARY.search(line)), "")
    counts = {_word(m["what"]): int(m["count"]) for m in SUMMARY.finditer(last)}
    failures = [line for line in lines if FAILURE.match(line)]
    folder = next((m["folder"] for line in lines if (m := EVIDENCE.match(line))), "")
    return Outcome(tier, code, seconds, counts, failures, folder)


def _word(what: str) -> str:
    return "error" if what.startswith("error") else what


def tiers(e2e: list[str], data: list[str], python: str = sys.executable) -> list[Tier]:
    """The tiers to soak, each with its selection (none: the whole tier); an empty ``data`` leaves the tier out."""
    pytest = [python, "-m", "pytest", "-p", "no:cacheprovider", "-rfE"]
    found = []
    if e2e:
        found.append(Tier("e2e", [*pytest, "-m", "e2e", *(a for a in e2e if a != "all")]))
    if data:
        found.append(
            Tier(
                "data",
                [python, "-m", "testbed.real.sandbox", "--", *pytest, "-m", "data", *(a for a in data if a != "all")],
            )
        )
    return found


def report(runs: list[list[Outcome]]) -> str:
    """The soak's figure, then each failed run's failures' first lines and evidence."""
    failed = [(index, run) for index, run in enumerate(runs, 1) if not all(o.passed for o in run)]
    lines = [f"soak: {len(runs) - len(failed)} of {len(runs)} runs passed"]
    for index, run in failed:
        for outcome in (o for o in run if not o.passed):
            lines.append(f"run {index}, {outcome}" + (f"; evidence in {outcome.evidence}" if outcome.evidence else ""))
            lines += [f"  {failure}" for failure in outcome.failures] or ["  (no test failed: the session itself did)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each tier (10)")
    parser.add_argument("--e2e", nargs="*", default=["all"], help="the end-to-end selection (all; none to skip)")
    parser.add_argument("--data", nargs="*", default=["all"], help="the data tier's selection (all; none to skip)")
    args = parser.parse_args(argv)
    selected = tiers([] if args.e2e == ["none"] else args.e2e, [] if args.data == ["none"] else args.data)
    logs = ROOT / ".evidence" / f"soak-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    logs.mkdir(parents=True, exist_ok=True)
    # Keep every failing session's evidence for the length of the soak, not only the newest few.
    environment = {**os.environ, "SHARDDB_EVIDENCE_RUNS": str(args.runs * len(selected) + 5)}
    runs: list[list[Outcome]] = []
    for index in range(1, args.runs + 1):
        run = []
        for tier in selected:
            started = time.monotonic()
            log = logs / f"run-{index}-{tier.name}.txt"
            with log.open("w") as out:
                code = subprocess.run(
                    tier.command, cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT
                ).returncode
            outcome = read(tier.name, code, time.monotonic() - started, log.read_text(errors="replace"))
            run.append(outcome)
            print(f"run {index}/{args.runs}: {outcome}", flush=True)
            for failure in outcome.failures:
                print(f"  {failure}", flush=True)
        runs.append(run)
    print(report(runs))
    print(f"each session's output: {logs.relative_to(ROOT)}/")
    return 0 if all(o.passed for run in runs for o in run) else 1


if __name__ == "__main__":
    sys.exit(main())
