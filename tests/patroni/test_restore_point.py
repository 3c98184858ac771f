"""One restore point for two shards, written by the restore points' Job as rendered (``backup/restore_points.py``)
while a client writes to both, and both shards restored to it by name: one moment for the whole ShardDB.

The client is a program in the member image (its Python and Patroni's driver) on the host's network, as fast as
it can: each round inserts the same number on shard 0, then on shard 1, each in its own transaction, and prints
what each server acknowledged. Restored to the point, shard 1 holds the same numbers as shard 0, or one fewer:
the one round in flight across the two shards at the moment, never more; every number acknowledged before the
Job started is there, and writes went on after it. The members run as ``stores.py`` describes (the recipe's
image: the Job runs in the image users build).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from testbed.real.controlplane import ControlPlane
from testbed.real.objectstore import ObjectStore
from tools.image.patroni import PatroniImages

from ..support.kube import Kube
from .conftest import IMAGES, new_shard
from .members import Member, podman, start_member, wait_for
from .stores import (
    WRITER,
    bootstrapping,
    ca_volumes,
    client,
    leading,
    resolved_env,
    restored_spec,
    run_backup_job,
    run_restore_point_job,
    serving,
    spec_of,
)

KIND = "recipe"
POINT = "before-late"
WRITE_SECONDS = 8  # the client's run; the Job starts after LEAD seconds of it
LEAD = 3.0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    yield from serving(tmp_path_factory)


@dataclass(frozen=True)
class Pointed:
    job_log: str
    acknowledged: dict[int, list[tuple[int, float]]]  # per shard: (number, when) as the client was told
    job_started: float
    restored: dict[int, list[int]]  # per shard: the numbers a restore to the point holds


def write(members: list[Member], image: str, seconds: int) -> str:
    """The client, detached; its container's name."""
    name = f"sharddb-writer-{members[0].container}"
    client(image, name, WRITER, [str(seconds), *(member.address for member in members)], detach=True)
    return name


def acknowledged(log: str) -> dict[int, list[tuple[int, float]]]:
    out: dict[int, list[tuple[int, float]]] = {0: [], 1: []}
    for line in log.splitlines():
        shard, number, when = line.split()
        out[int(shard)].append((int(number), float(when)))
    return out


@pytest.fixture(scope="module")
def pointed(
    store: ObjectStore,
    images: PatroniImages,
    control_plane: ControlPlane,
    kube: Kube,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Pointed]:
    assert IMAGES[KIND] in images.names
    started: list[Member] = []
    writer = ""
    try:
        shards = [new_shard(KIND, kube, control_plane, tmp_path_factory.mktemp(f"point-{n}")) for n in range(2)]
        specs = [spec_of(store, shard.namespace) for shard in shards]
        primaries = []
        for shard, spec in zip(shards, specs, strict=True):
            ca = tmp_path_factory.mktemp("point-ca")
            mounts = ca_volumes(store, ca, spec)
            member = start_member(shard, 0, resolved_env(spec, store), bootstrapping(shard, spec, "point"), mounts)
            started.append(member)
            leading(shard, member)
            member.sql("CREATE TABLE rounds (number int PRIMARY KEY)")
            run_backup_job(shard, spec, store, {"primary": member}, ca / "backup-ca")
            primaries.append(member)

        image = shards[0].image
        writer = write(primaries, image, WRITE_SECONDS)
        time.sleep(LEAD)
        job_started = time.time()
        job_log = run_restore_point_job(shards[0].parent, specs[0], primaries, image, POINT)
        wait_for("the client's run ended", lambda: not _running(writer), primaries, timeout=120.0)
        written = acknowledged(podman("logs", writer))
        for member in primaries:  # the point's segment archived, for the restores to replay
            archived(member, primaries)

        restored: dict[int, list[int]] = {}
        for number, source in enumerate(shards):
            copy_shard = new_shard(KIND, kube, control_plane, tmp_path_factory.mktemp(f"pointed-{number}"))
            asked = restored_spec(store, copy_shard.namespace, source, {"targetName": POINT})
            mounts = ca_volumes(store, tmp_path_factory.mktemp("pointed-ca"), asked)
            config = bootstrapping(copy_shard, asked, "pointed")
            copy = start_member(copy_shard, 0, resolved_env(asked, store), config, mounts)
            started.append(copy)
            leading(copy_shard, copy)
            rows = copy.sql("SELECT coalesce(string_agg(number::text, ' ' ORDER BY number), '') FROM rounds")
            restored[number] = [int(each) for each in rows.split()]
        yield Pointed(job_log, written, job_started, restored)
    finally:
        if writer:
            podman("rm", "--force", writer)
        for member in started:
            member.remove()


def archived(member: Member, members: list[Member]) -> None:
    """The member's current segment closed and archived."""
    last = member.sql("SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())")
    query = "SELECT last_archived_wal FROM pg_catalog.pg_stat_archiver"
    wait_for(f"{last} archived", lambda: member.sql(query) >= last, members)


def _running(container: str) -> bool:
    return podman("inspect", "--format", "{{.State.Running}}", container).strip() == "true"


def test_the_job_writes_the_point_on_every_shard_and_says_how_long_writes_paused(pointed: Pointed) -> None:
    assert f"restore point {POINT} on every shard" in pointed.job_log, pointed.job_log
    assert "writes paused" in pointed.job_log, pointed.job_log


def test_each_shard_restored_to_the_point_holds_an_unbroken_run_of_rounds(pointed: Pointed) -> None:
    for numbers in pointed.restored.values():
        assert numbers == list(range(1, len(numbers) + 1))


def test_the_shards_restored_to_the_point_differ_by_at_most_the_one_round_in_flight(pointed: Pointed) -> None:
    first, second = len(pointed.restored[0]), len(pointed.restored[1])
    assert second <= first <= second + 1, (first, second)


def test_every_round_acknowledged_before_the_job_started_is_restored(pointed: Pointed) -> None:
    for shard, numbers in pointed.restored.items():
        before = [number for number, when in pointed.acknowledged[shard] if when < pointed.job_started]
        assert before, "the client wrote nothing before the Job"
        assert set(before) <= set(numbers)


def test_writes_went_on_after_the_point(pointed: Pointed) -> None:
    for shard, numbers in pointed.restored.items():
        assert len(pointed.acknowledged[shard]) > len(numbers)
