"""``python -m bench.points`` (``make bench-points``): what a restore point on every shard costs writers, by shard
count, beside the same points written with nothing paused, in the same run.

The parts are the Patroni tier's: real Patroni members of the recipe's image in podman (on runc), a real API
server as their DCS, one member per shard. A client in the member image writes rounds across every shard as fast
as it can (one insert per shard, each acknowledged before the next). In each run, the baseline first: a program
that writes ``pg_create_restore_point`` on each shard in turn, nothing paused (its spread, first point to last, is
the window a write across shards can straddle); then the restore points' Job as rendered
(``hooks/backup/pause.py``), which says how long it held writes. For each, the longest wait of the client's
acknowledged inserts while it ran; and the client's median wait. Figures, not assertions: the exit status is 1
only when a part could not run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hooks.spec import ShardDBSpec
from testbed.real.controlplane import ControlPlane, build_binaries, start_plane
from tests.patroni.members import (
    DB_PORT,
    PASSWORDS,
    Member,
    PodmanError,
    Shard,
    load,
    podman,
    prepare,
    start_member,
)
from tests.patroni.stores import SUPERUSER_SECRET, leading, run_restore_point_job
from tests.support.kube import Kube
from tools.image.builders import ulimits_below_own
from tools.image.patroni import RECIPE_NAME, build_patroni_images

PARENT = "orders"
# One insert per shard per round; "<shard> <round> <epoch seconds>" per acknowledged insert.
WRITER = """
import sys, time, psycopg2
seconds, hosts = float(sys.argv[1]), sys.argv[2:]
sessions = [psycopg2.connect(host=host, dbname="postgres", sslmode="require") for host in hosts]
for session in sessions:
    session.autocommit = True
end, number = time.time() + seconds, 0
while time.time() < end:
    number += 1
    for shard, session in enumerate(sessions):
        with session.cursor() as cursor:
            cursor.execute("INSERT INTO rounds VALUES (%s)", (number,))
        print(shard, number, time.time(), flush=True)
"""
# The baseline: the same points, one shard after another, nothing paused.
BASELINE = """
import sys, time, psycopg2
name, hosts = sys.argv[1], sys.argv[2:]
sessions = [psycopg2.connect(host=host, dbname="postgres", sslmode="require") for host in hosts]
start = time.monotonic()
for session in sessions:
    with session.cursor() as cursor:
        cursor.execute("SELECT pg_catalog.pg_create_restore_point(%s)", (name,))
    session.commit()
print(f"spread {(time.monotonic() - start) * 1000:.1f} ms")
"""
CLIENT_ENV = ("--env", "PGUSER=postgres", "--env", f"PGPASSWORD={PASSWORDS['PATRONI_SUPERUSER_PASSWORD']}",
              "--env", f"PGPORT={DB_PORT}")  # fmt: skip
LEAD_SECONDS = 2.0  # the client writes this long before the baseline, and between the two


@dataclass
class Figures:
    """Per shard count, over the runs."""

    pauses: list[float] = field(default_factory=list)  # the Job's own, ms
    spreads: list[float] = field(default_factory=list)  # the baseline's first to last point, ms
    job_waits: list[float] = field(default_factory=list)  # the longest ack wait while the Job ran, ms
    baseline_waits: list[float] = field(default_factory=list)  # the same while the baseline ran, ms
    median_waits: list[float] = field(default_factory=list)  # the client's median ack wait, ms


def client(image: str, name: str, args: list[str], program: str, detach: bool = False) -> str:
    return podman(
        "run", *(["--detach"] if detach else ["--rm"]), "--name", name, "--pull", "never", "--network", "host",
        "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", *ulimits_below_own(),
        *CLIENT_ENV, "--entrypoint", json.dumps(["python3"]), image, "-c", program, *args,
        timeout=300.0,
    )  # fmt: skip


def longest_wait(acks: list[float], start: float, end: float) -> float:
    """The longest gap between acknowledged inserts that ends within [start, end], ms."""
    gaps = [after - before for before, after in itertools.pairwise(acks) if start <= after <= end]
    return max(gaps, default=0.0) * 1000


def one_run(primaries: list[Member], image: str, spec: ShardDBSpec, run: str, seconds: float) -> tuple[float, ...]:
    hosts = [member.address for member in primaries]
    writer = f"bench-points-writer-{run}"
    client(image, writer, [str(seconds), *hosts], WRITER, detach=True)
    try:
        time.sleep(LEAD_SECONDS)
        started = time.time()
        said = client(image, f"bench-points-baseline-{run}", [f"baseline-{run}", *hosts], BASELINE)
        baseline = (started, time.time())
        time.sleep(LEAD_SECONDS)
        started = time.time()
        log = run_restore_point_job(PARENT, spec, primaries, image, f"paused-{run}")
        job = (started, time.time())
        while podman("inspect", "--format", "{{.State.Running}}", writer).strip() == "true":
            time.sleep(0.5)
        acks = sorted(float(line.split()[2]) for line in podman("logs", writer).splitlines())
    finally:
        podman("rm", "--force", writer)
    spread = float(re.search(r"spread ([0-9.]+) ms", said).group(1))  # type: ignore[union-attr]
    pause = float(re.search(r"writes paused ([0-9.]+) ms", log).group(1))  # type: ignore[union-attr]
    median = statistics.median(after - before for before, after in itertools.pairwise(acks)) * 1000
    return pause, spread, longest_wait(acks, *job), longest_wait(acks, *baseline), median


def shards_up(kube: Kube, plane: ControlPlane, count: int, root: Path) -> list[Member]:
    """``count`` shards of one member each, leading, with the client's table."""
    members = []
    for number in range(count):
        namespace = f"bench-points-{number}"
        response = kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        assert response.status_code == 201, response.text
        folder = root / namespace
        folder.mkdir()
        shard: Shard = prepare(kube, namespace, PARENT, plane.port, plane.ca_file, folder, RECIPE_NAME)
        member = start_member(shard, 0)
        members.append(member)
        leading(shard, member)
        member.sql("CREATE TABLE rounds (number int, shard int)")
    return members


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
    parser = argparse.ArgumentParser(prog="python -m bench.points", description=__doc__.splitlines()[0])
    parser.add_argument("--shards", default="1,2,4", help="shard counts, comma-separated (default 1,2,4)")
    parser.add_argument("--runs", type=int, default=5, help="runs per shard count (default 5)")
    parser.add_argument("--seconds", type=float, default=8.0, help="each run's client writes this long")
    args = parser.parse_args(argv)
    counts = sorted({int(each) for each in args.shards.split(",")})
    archive = build_patroni_images().names[RECIPE_NAME]
    load(archive, RECIPE_NAME)
    plane = start_plane(build_binaries())
    kube = Kube(plane.url, plane.token, plane.ca_file, plane.kubeconfig)
    members: list[Member] = []
    password = {"secretKeyRef": {"name": SUPERUSER_SECRET[0], "key": SUPERUSER_SECRET[1]}}
    spec = ShardDBSpec.model_validate(
        {"shards": 1, "dbImage": RECIPE_NAME, "cache": {"image": "redis"}, "replication": {"members": 2},
         "db": {"env": [{"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": password}]}}
    )  # fmt: skip
    results: dict[int, Figures] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-points-") as root:
            members = shards_up(kube, plane, max(counts), Path(root))
            for count in counts:
                figures = results.setdefault(count, Figures())
                for run in range(args.runs):
                    values = one_run(members[:count], RECIPE_NAME, spec, f"{count}-{run}", args.seconds)
                    for bucket, value in zip(
                        (figures.pauses, figures.spreads, figures.job_waits, figures.baseline_waits,
                         figures.median_waits), values, strict=True,
                    ):  # fmt: skip
                        bucket.append(value)
                    print(f"shards {count} run {run + 1}: " + ", ".join(f"{v:.1f}" for v in values), file=sys.stderr)
    except PodmanError as error:
        print(f"bench-points: {error}", file=sys.stderr)
        return 1
    finally:
        for member in members:
            member.remove()
        kube.close()
        plane.stop()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
