"""The scenario of ``make bench-points`` (``bench/points.py``), which runs this file as its own session: not part of
the Patroni tier (its name is not ``test_*``), so CI never runs it. The figures go to ``SHARDDB_POINTS_JSON``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.points import FIGURES_ENV, RUNS_ENV, SECONDS_ENV, SHARDS_ENV, longest_wait, median_wait
from hooks.spec import ShardDBSpec
from testbed.real.controlplane import ControlPlane
from tools.image.patroni import PatroniImages

from ..support.kube import Kube
from .conftest import IMAGES, new_shard
from .members import Member, podman, start_member
from .stores import SUPERUSER_SECRET, WRITER, client, leading, run_restore_point_job

KIND = "recipe"
PARENT = "orders"
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
LEAD_SECONDS = 2.0  # the client writes this long before the baseline, and between the two


def one_run(primaries: list[Member], image: str, spec: ShardDBSpec, run: str, seconds: float) -> tuple[float, ...]:
    """The baseline's points, then the Job's, under the client's writes: (pause, spread, the longest wait during
    the Job, during the baseline, the median wait)."""
    hosts = [member.address for member in primaries]
    writer = f"bench-points-writer-{run}"
    client(image, writer, WRITER, [str(seconds), *hosts], detach=True)
    try:
        time.sleep(LEAD_SECONDS)
        started = time.time()
        said = client(image, f"bench-points-baseline-{run}", BASELINE, [f"baseline-{run}", *hosts])
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
    return pause, spread, longest_wait(acks, *job), longest_wait(acks, *baseline), median_wait(acks)


def shards_up(kube: Kube, plane: ControlPlane, count: int, root: pytest.TempPathFactory) -> list[Member]:
    """``count`` shards of one member each, leading, with the client's table."""
    members = []
    for number in range(count):
        shard = new_shard(KIND, kube, plane, root.mktemp(f"bench-points-{number}"))
        member = start_member(shard, 0)
        members.append(member)
        leading(shard, member)
        member.sql("CREATE TABLE rounds (number int)")
    return members


@pytest.fixture(scope="module")
def members(
    images: PatroniImages, control_plane: ControlPlane, kube: Kube, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Member]]:
    assert IMAGES[KIND] in images.names
    counts = [int(each) for each in os.environ[SHARDS_ENV].split(",")]
    up: list[Member] = []
    try:
        up = shards_up(kube, control_plane, max(counts), tmp_path_factory)
        yield up
    finally:
        for member in up:
            member.remove()


def test_figures_of_each_run_are_written(members: list[Member]) -> None:
    password = {"secretKeyRef": {"name": SUPERUSER_SECRET[0], "key": SUPERUSER_SECRET[1]}}
    spec = ShardDBSpec.model_validate(
        {"shards": 1, "dbImage": IMAGES[KIND], "cache": {"image": "redis"}, "replication": {"members": 2},
         "db": {"env": [{"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": password}]}}
    )  # fmt: skip
    counts = sorted({int(each) for each in os.environ[SHARDS_ENV].split(",")})
    runs, seconds = int(os.environ[RUNS_ENV]), float(os.environ[SECONDS_ENV])
    written = []
    for count in counts:
        for run in range(runs):
            values = one_run(members[:count], IMAGES[KIND], spec, f"{count}-{run}", seconds)
            written.append({"shards": count, "values": list(values)})
            Path(os.environ[FIGURES_ENV]).write_text(json.dumps(written))
    assert len(written) == len(counts) * runs
