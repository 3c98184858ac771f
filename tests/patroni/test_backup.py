"""barman-cloud, the backup engine in the member image, against a real S3 server over TLS, as ``spec.backup`` has the
hooks configure it: a shard's WAL archived by the rendered ``archive_command`` as Patroni runs PostgreSQL, a base
backup taken on its standby by the base backups' Job as rendered (``backup/cronjob.py``: its script, in the member
image, logged in over TLS), and a new shard bootstrapped by Patroni from them to a moment before a ``DROP TABLE`` by
the bootstrap ``spec.restore`` renders (``backup/restore.py``); one that would archive over its source is refused,
and so is a new shard made by initdb under the source's name and prefix (``backup/fresh.py``).

The store, the members and the Job run as ``stores.py`` describes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from hooks.backup import commands
from hooks.backup import member as backup_member
from testbed.real.controlplane import ControlPlane
from testbed.real.objectstore import ObjectStore
from tools.image.patroni import PatroniImages

from ..support.kube import Kube
from .conftest import IMAGES, new_shard
from .members import Shard, podman, start_member, wait_for
from .stores import (
    BUCKET,
    backup_of,
    bootstrapping,
    ca_volumes,
    leading,
    resolved_env,
    restored_spec,
    run_backup_job,
    serving,
    spec_of,
    streaming,
)

Obj = dict[str, Any]

ROWS = 200  # acknowledged before the target
LATE_ROWS = 10  # committed after the target, before the drop


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    yield from serving(tmp_path_factory)


@dataclass(frozen=True)
class Restored:
    """The source shard's story and the shard restored from its backups."""

    target: str  # the moment restored to: after ROWS rows, before the late ones and the drop
    dropped: bool  # the source no longer has the table
    job_log: str  # what the base backups' Job said
    failing_log: str  # what it said of a run while the primary's archiving failed
    backups: str  # the engine's list of base backups
    count: str  # rows of the table in the restored shard
    late: str  # rows committed after the target, in the restored shard
    source_wal: frozenset[str]  # the source's archive once it was gone
    source_wal_after: frozenset[str]  # the same after the restore and the refused bootstraps
    own_wal: frozenset[str]  # the restored shard's own archive
    clash_leader: str | None  # who leads the refused restore's shard
    anew_leader: str | None  # who leads the shard made anew over the source's folder
    anew_initialized: bool  # whether that shard's cluster was left recorded as made
    anew_log: str  # what its member said before Patroni stopped
    refusal: str  # what a member says of a used archive folder


# The archiver's own record: its last attempt failed, after its last success.
ARCHIVER_FAILING = (
    "SELECT last_failed_time > coalesce(last_archived_time, '-infinity') FROM pg_catalog.pg_stat_archiver"
)


@pytest.fixture(scope="module")
def restored(
    shard: Shard,
    store: ObjectStore,
    images: PatroniImages,
    control_plane: ControlPlane,
    kube: Kube,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Restored]:
    _ = images
    spec = spec_of(store, shard.namespace)
    backup = backup_of(store, shard.namespace)
    env = resolved_env(spec, store)
    ca = tmp_path_factory.mktemp("store-ca")
    mounts = ca_volumes(store, ca, spec)
    config = bootstrapping(shard, spec, "archiving")
    primary = start_member(shard, 0, env, config, mounts)
    members = [primary]
    try:
        leading(shard, primary)
        standby = start_member(shard, 1, env, config, mounts)
        members.append(standby)
        streaming(primary, standby)
        primary.sql("CREATE TABLE orders (id int PRIMARY KEY)")
        primary.sql(f"INSERT INTO orders SELECT generate_series(1, {ROWS // 2})")
        by_role = {"standby": standby, "primary": primary}
        job_log = run_backup_job(shard, spec, store, by_role, ca / backup_member.CA_VOLUME)
        # Archiving broken on the primary by hand (the store refusing would do the same): the next run fails naming
        # it and keeps every backup; once mended, the segments it held back are archived, and the restore below
        # starts from the backup taken meanwhile.
        primary.sql("ALTER SYSTEM SET archive_command = '/bin/false'")
        primary.sql("SELECT pg_catalog.pg_reload_conf()")
        primary.sql("SELECT pg_catalog.pg_logical_emit_message(false, 'sharddb', 'archiving broken')")
        primary.sql("SELECT pg_catalog.pg_switch_wal()")
        wait_for("the archiver failing", lambda: primary.sql(ARCHIVER_FAILING) == "t", members)
        failing_log = run_backup_job(shard, spec, store, by_role, ca / backup_member.CA_VOLUME, fails=True)
        primary.sql("ALTER SYSTEM RESET archive_command")
        primary.sql("SELECT pg_catalog.pg_reload_conf()")
        primary.sql(f"INSERT INTO orders SELECT generate_series({ROWS // 2 + 1}, {ROWS})")
        # RFC 3339, as spec.restore.recoveryTarget.targetTime takes it.
        target = primary.sql(
            "SELECT to_char(pg_catalog.clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        )
        time.sleep(1)
        primary.sql(f"INSERT INTO orders SELECT generate_series({ROWS + 1}, {ROWS + LATE_ROWS})")
        time.sleep(1)
        primary.sql("DROP TABLE orders")
        last = primary.sql("SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())")
        wait_for(
            f"{last} archived",
            lambda: primary.sql("SELECT last_archived_wal FROM pg_catalog.pg_stat_archiver") >= last,
            members,
        )
        dropped = primary.sql("SELECT to_regclass('orders') IS NULL") == "t"
        backups = podman("exec", primary.container, *commands.backup_list(backup.object_store, shard.scope))
        for each in members:  # the source is gone: only its store remains
            each.remove()
        source_wal = wal_objects(store, shard.namespace, shard.scope)

        kind = next(kind for kind, image in IMAGES.items() if image == shard.image)
        again = new_shard(kind, kube, control_plane, tmp_path_factory.mktemp(f"restored-{kind}"))
        asked = restored_spec(store, again.namespace, shard, {"targetTime": target})
        copy_mounts = ca_volumes(store, tmp_path_factory.mktemp("restored-ca"), asked)
        copy = start_member(again, 0, resolved_env(asked, store), bootstrapping(again, asked, "restoring"), copy_mounts)
        members.append(copy)
        leading(again, copy)
        last = copy.sql("SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())")
        wait_for(
            f"{last} archived",
            lambda: copy.sql("SELECT last_archived_wal FROM pg_catalog.pg_stat_archiver") >= last,
            [copy],
        )

        # A restore whose own archive is the source's: same name, same path (the CRD refuses it; each member too).
        clash = new_shard(kind, kube, control_plane, tmp_path_factory.mktemp(f"clash-{kind}"))
        over = spec_of(store, shard.namespace, asked.model_dump(by_alias=True, mode="json")["restore"])
        clash_config = bootstrapping(clash, over, "restoring")
        refused = start_member(clash, 0, resolved_env(over, store), clash_config, copy_mounts)
        members.append(refused)
        said = backup_member.refusal(backup, shard.scope)
        wait_for("the clashing restore refused", lambda: said in refused.logs(200), [refused])

        # A new ShardDB under the source's name and prefix, made by initdb: its folder holds the source's backups.
        anew = new_shard(kind, kube, control_plane, tmp_path_factory.mktemp(f"anew-{kind}"))
        made = start_member(anew, 0, env, bootstrapping(anew, spec, "anew"), mounts)
        members.append(made)
        wait_for("the new shard's Patroni stopped", lambda: not made.running(), [made])
        anew_log = made.logs(400)
        yield Restored(
            target,
            dropped,
            job_log,
            failing_log,
            backups,
            copy.sql("SELECT count(*) FROM orders"),
            copy.sql(f"SELECT count(*) FROM orders WHERE id > {ROWS}"),
            source_wal,
            wal_objects(store, shard.namespace, shard.scope),
            wal_objects(store, again.namespace, again.scope),
            clash.holder("leader"),
            anew.holder("leader"),
            anew.holder("config", "initialize") is not None,
            anew_log,
            said,
        )
    finally:
        for each in members:
            each.remove()


def wal_objects(store: ObjectStore, prefix: str, scope: str) -> frozenset[str]:
    """The WAL files (and timeline histories) a shard's folder holds, by name."""
    listed = store.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/{scope}/wals/")
    return frozenset(item["Key"].rsplit("/", 1)[-1] for item in listed.get("Contents", []))


def test_the_source_shard_lost_its_table(restored: Restored) -> None:
    assert restored.dropped


def test_the_backup_job_takes_the_base_backup_on_the_standby(restored: Restored) -> None:
    assert "base backup from its standby" in restored.job_log, restored.job_log
    assert "base backup taken" in restored.job_log, restored.job_log


def test_the_backup_job_applies_the_retention_policy_and_ends_well(restored: Restored) -> None:
    assert "retention, RECOVERY WINDOW OF 7 DAYS" in restored.job_log, restored.job_log
    assert "every shard backed up" in restored.job_log, restored.job_log


def test_the_engine_lists_the_base_backups_it_took(restored: Restored) -> None:
    lines = [line for line in restored.backups.splitlines() if line.split()[:1] and line.split()[0][:1].isdigit()]
    assert len(lines) == 2, restored.backups
    assert all(line.split()[0].startswith("20") for line in lines), restored.backups


def test_a_run_while_the_primary_cannot_archive_fails_naming_the_shard_and_archiving(restored: Restored) -> None:
    assert "base backup taken" in restored.failing_log, restored.failing_log
    assert "archiving fails: the last failure (segment, time): 0000" in restored.failing_log, restored.failing_log
    assert "(archiving)" in restored.failing_log.splitlines()[-1], restored.failing_log


def test_a_run_while_the_primary_cannot_archive_deletes_nothing(restored: Restored) -> None:
    assert "retention skipped: archiving fails" in restored.failing_log, restored.failing_log
    assert "retention, RECOVERY WINDOW" not in restored.failing_log, restored.failing_log


def test_a_shard_restored_to_a_moment_before_the_drop_has_every_row_committed_before_it(restored: Restored) -> None:
    assert restored.count == str(ROWS)


def test_a_shard_restored_to_a_moment_has_no_row_committed_after_it(restored: Restored) -> None:
    assert restored.late == "0"


def timelines(names: frozenset[str]) -> set[int]:
    """The timelines whose history files a folder holds (``00000003.history.gz``: timeline 3)."""
    return {int(name[:8], 16) for name in names if ".history" in name}


def test_the_restored_shard_archives_its_new_timeline_to_its_own_folder(restored: Restored) -> None:
    assert max(timelines(restored.own_wal)) > max(timelines(restored.source_wal), default=1), sorted(restored.own_wal)


def test_neither_the_restore_nor_a_refused_bootstrap_wrote_into_the_sources_archive(restored: Restored) -> None:
    assert restored.source_wal_after == restored.source_wal
    assert max(timelines(restored.own_wal)) not in timelines(restored.source_wal_after)


def test_a_restore_whose_own_archive_holds_wal_refuses_to_start_naming_the_field(restored: Restored) -> None:
    assert restored.clash_leader is None


def test_a_new_shard_whose_archive_folder_holds_wal_refuses_initdb_naming_the_field(restored: Restored) -> None:
    assert restored.refusal in restored.anew_log, restored.anew_log
    assert "The files belonging to this database system" not in restored.anew_log  # initdb never ran


def test_a_refused_new_shard_is_left_unmade_for_a_later_try(restored: Restored) -> None:
    assert restored.anew_leader is None
    assert not restored.anew_initialized
