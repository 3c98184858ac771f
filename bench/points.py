"""``python -m bench.points`` (``make bench-points``): what a restore point on every shard costs writers, by shard
count, beside the same points written with nothing paused, in the same run.

The parts are the Patroni tier's (``tests/patroni/bench_points.py``, run here as its own pytest session, as
``bench.ha`` runs the installed tier's steps): real Patroni members of the recipe's image in podman (on runc), a
real API server as their DCS, one member per shard. A client in the member image writes rounds across every
shard as fast as it can (one insert per shard, each acknowledged before the next). In each run, the baseline
first: a program that writes ``pg_create_restore_point`` on each shard in turn, nothing paused (its spread, first
point to last, is the window a write across shards can straddle); then the restore points' Job as rendered
(``hooks/backup/pause.py``), which says how long it held writes. For each, the longest wait of the client's
acknowledged inserts while it ran; and the client's median wait. Figures, not assertions: the exit status is 1
only when the session failed or wrote no figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = "tests/patroni/bench_points.py"
FIGURES_ENV = "SHARDDB_POINTS_JSON"
SHARDS_ENV = "SHARDDB_POINTS_SHARDS"
RUNS_ENV = "SHARDDB_POINTS_RUNS"
SECONDS_ENV = "SHARDDB_POINTS_SECONDS"


@dataclass
class Figures:
    """Per shard count, over the runs."""

    pauses: list[float] = field(default_factory=list)  # the Job's own, ms
    spreads: list[float] = field(default_factory=list)  # the baseline's first to last point, ms
    job_waits: list[float] = field(default_factory=list)  # the longest ack wait while the Job ran, ms
    baseline_waits: list[float] = field(default_factory=list)  # the same while the baseline ran, ms
    median_waits: list[float] = field(default_factory=list)  # the client's median ack wait, ms

    def add(self, values: list[float]) -> None:
        """One run's figures, in the order of the fields."""
        buckets = (self.pauses, self.spreads, self.job_waits, self.baseline_waits, self.median_waits)
        for bucket, value in zip(buckets, values, strict=True):
            bucket.append(value)


def longest_wait(acks: list[float], start: float, end: float) -> float:
    """The longest gap between acknowledged inserts that ends within [start, end], ms."""
    gaps = [after - before for before, after in itertools.pairwise(acks) if start <= after <= end]
    return max(gaps, default=0.0) * 1000


def median_wait(acks: list[float]) -> float:
    """The client's median gap between acknowledged inserts, ms."""
    return statistics.median(after - before for before, after in itertools.pairwise(acks)) * 1000


def p50_max(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {max(values):.1f}" if values else "—"


def table(results: dict[int, Figures]) -> str:
    lines = [
        "| shards | runs | Job's pause, p50 / max (ms) | longest insert wait during the Job | during the baseline "
        "| baseline's spread, first to last point | client's median insert wait |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for shards, each in sorted(results.items()):
        lines.append(
            f"| {shards} | {len(each.pauses)} | {p50_max(each.pauses)} | {p50_max(each.job_waits)} "
            f"| {p50_max(each.baseline_waits)} | {p50_max(each.spreads)} | {p50_max(each.median_waits)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.points", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shards", default="1,2,4", help="shard counts, comma-separated (default 1,2,4)")
    parser.add_argument("--runs", type=int, default=5, help="runs per shard count (default 5)")
    parser.add_argument("--seconds", type=float, default=8.0, help="each run's client writes this long")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-points-") as folder:
        figures = Path(folder) / "figures.json"
        env = {
            **os.environ,
            FIGURES_ENV: str(figures),
            SHARDS_ENV: args.shards,
            RUNS_ENV: str(args.runs),
            SECONDS_ENV: str(args.seconds),
        }
        command = [sys.executable, "-m", "pytest", "-m", "patroni", SCENARIO, "-p", "no:cacheprovider", "-q"]
        session = subprocess.run(command, cwd=ROOT, env=env, check=False)
        if not figures.exists():
            print(f"bench-points: the session wrote no figures (exit {session.returncode})", file=sys.stderr)
            return 1
        results: dict[int, Figures] = {}
        for run in json.loads(figures.read_text()):
            results.setdefault(int(run["shards"]), Figures()).add([float(v) for v in run["values"]])
    print(table(results))
    return 0 if session.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
