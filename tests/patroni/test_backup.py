"""barman-cloud, the backup engine in the member image, against a real S3 server over TLS: a shard's WAL archived
as Patroni runs PostgreSQL, a base backup taken, and a new shard bootstrapped by Patroni from them to a moment
before a ``DROP TABLE``.

The object store is versitygw (``testbed/real/objectstore.py``) on the host's loopback, which the members share;
the members trust its CA by ``AWS_CA_BUNDLE``, as a user's CA Secret would be mounted. The archive and restore
commands here are the engine's own; the hooks do not render them yet.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hooks.replication import config as patroni_config
from testbed.real import objectstore
from testbed.real.controlplane import ControlPlane
from testbed.real.objectstore import ObjectStore
from tools.image.patroni import PatroniImages

from ..support.kube import Kube
from .conftest import IMAGES, new_shard
from .members import SECRETS_DIR, SOCKET_DIR, Member, PodmanError, Shard, podman, start_member, wait_for

BUCKET = "backups"
CA_NAME = "objectstore-ca.crt"  # beside the ServiceAccount's files: one more read-only mount of the member's
DATA = "/var/lib/postgresql/data/pgdata"
ROWS = 200  # acknowledged before the target
LATE_ROWS = 10  # committed after the target, before the drop


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    """A real S3 server over TLS, with the bucket the shards archive to."""
    try:
        objectstore.build()
    except objectstore.ObjectStoreError as error:
        pytest.fail(f"patroni tier: {error}", pytrace=False)
    with objectstore.running(tmp_path_factory.mktemp("objectstore") / "data") as running:
        running.create_bucket(BUCKET)
        yield running


def engine(store: ObjectStore, *args: str) -> str:
    """A barman-cloud command line against the store (the endpoint; the rest comes from the environment)."""
    return " ".join([*args[:1], "--endpoint-url", store.endpoint, *args[1:]])


def store_env(store: ObjectStore) -> dict[str, str]:
    """What a user's Secret and CA give the member: boto3's credentials, region and CA bundle."""
    return {
        "AWS_ACCESS_KEY_ID": store.access_key,
        "AWS_SECRET_ACCESS_KEY": store.secret_key,
        "AWS_DEFAULT_REGION": store.region,
        "AWS_CA_BUNDLE": f"{SECRETS_DIR}/{CA_NAME}",
    }


def trusting(shard: Shard, store: ObjectStore) -> None:
    """The store's CA where the shard's members read it."""
    target = shard.folder / "secrets" / CA_NAME
    shutil.copyfile(store.ca_bundle, target)
    target.chmod(0o644)


def written_config(shard: Shard, name: str, change: dict[str, object]) -> Path:
    """The shard's rendered configuration with ``change`` merged into its top-level sections, as a member's file."""
    config = json.loads((shard.folder / patroni_config.CONFIG_FILE).read_text())
    for section, values in change.items():
        assert isinstance(values, dict)
        config[section] = {**config.get(section, {}), **values}
    path = shard.folder / name
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o644)
    return path


def archiving(shard: Shard, store: ObjectStore, source: str) -> Path:
    """Every member archives each finished WAL segment to ``source`` under the shard's scope."""
    command = engine(store, "barman-cloud-wal-archive", source, shard.scope, "%p")
    postgresql = json.loads((shard.folder / patroni_config.CONFIG_FILE).read_text())["postgresql"]
    parameters = {**postgresql["parameters"], "archive_mode": "on", "archive_command": command}
    return written_config(shard, "archiving.json", {"postgresql": {**postgresql, "parameters": parameters}})


def restoring(shard: Shard, store: ObjectStore, source: str, scope: str, target: str) -> Path:
    """A new shard bootstrapped by Patroni's custom method: the engine's latest base backup of ``scope``, then its
    archived WAL replayed to ``target``, then promoted."""
    restore = {
        "command": engine(store, "barman-cloud-restore", source, scope, "latest", DATA),
        "no_params": True,
        "recovery_conf": {
            "restore_command": engine(store, "barman-cloud-wal-restore", source, scope, "%f", "%p"),
            "recovery_target_time": target,
            "recovery_target_action": "promote",
            "recovery_target_timeline": "latest",
        },
    }
    config = json.loads((shard.folder / patroni_config.CONFIG_FILE).read_text())
    bootstrap = {**config["bootstrap"], "method": "restore", "restore": restore}
    # While a custom bootstrap recovers, Patroni trusts only the socket and the member's own address, from which a
    # pod's Patroni connects; here every client's source is the host's loopback address, so Patroni takes the socket.
    postgresql = {**config["postgresql"], "use_unix_socket": True}
    return written_config(shard, "restoring.json", {"bootstrap": bootstrap, "postgresql": postgresql})


def leading(shard: Shard, member: Member) -> None:
    wait_for(f"{member.name} leads {shard.scope}", lambda: shard.holder("leader") == member.name, [member])
    wait_for(f"{member.name} accepts writes", lambda: _writable(member), [member])


def _writable(member: Member) -> bool:
    try:
        return member.sql("SELECT pg_catalog.pg_is_in_recovery()") == "f"
    except PodmanError:  # not up yet: asked again
        return False


@dataclass(frozen=True)
class Restored:
    """The source shard's story and the shard restored from its backups."""

    target: str  # the moment restored to: after ROWS rows, before the late ones and the drop
    dropped: bool  # the source no longer has the table
    backups: str  # the engine's list of base backups
    count: str  # rows of the table in the restored shard
    late: str  # rows committed after the target, in the restored shard


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
    source = f"s3://{BUCKET}/{shard.namespace}"
    trusting(shard, store)
    env = store_env(store)
    member = start_member(shard, 0, env, archiving(shard, store, source))
    members = [member]
    try:
        leading(shard, member)
        member.sql("CREATE TABLE orders (id int PRIMARY KEY)")
        member.sql(f"INSERT INTO orders SELECT generate_series(1, {ROWS // 2})")
        backup = engine(store, "barman-cloud-backup", "--host", SOCKET_DIR, "--user", "postgres", source, shard.scope)
        podman("exec", member.container, "sh", "-c", backup, timeout=300.0)
        member.sql(f"INSERT INTO orders SELECT generate_series({ROWS // 2 + 1}, {ROWS})")
        target = member.sql("SELECT pg_catalog.clock_timestamp()")
        time.sleep(1)
        member.sql(f"INSERT INTO orders SELECT generate_series({ROWS + 1}, {ROWS + LATE_ROWS})")
        time.sleep(1)
        member.sql("DROP TABLE orders")
        last = member.sql("SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())")
        wait_for(
            f"{last} archived",
            lambda: member.sql("SELECT last_archived_wal FROM pg_catalog.pg_stat_archiver") >= last,
            members,
        )
        dropped = member.sql("SELECT to_regclass('orders') IS NULL") == "t"
        backups = podman(
            "exec", member.container, "sh", "-c", engine(store, "barman-cloud-backup-list", source, shard.scope)
        )

        kind = next(kind for kind, image in IMAGES.items() if image == shard.image)
        again = new_shard(kind, kube, control_plane, tmp_path_factory.mktemp(f"restored-{kind}"))
        trusting(again, store)
        copy = start_member(again, 0, env, restoring(again, store, source, shard.scope, target))
        members.append(copy)
        leading(again, copy)
        yield Restored(
            target,
            dropped,
            backups,
            copy.sql("SELECT count(*) FROM orders"),
            copy.sql(f"SELECT count(*) FROM orders WHERE id > {ROWS}"),
        )
    finally:
        for each in members:
            each.remove()


def test_the_source_shard_lost_its_table(restored: Restored) -> None:
    assert restored.dropped


def test_the_engine_lists_the_base_backup_it_took(restored: Restored) -> None:
    assert "DONE" in restored.backups or restored.backups.count("\n") >= 1, restored.backups


def test_a_shard_restored_to_a_moment_before_the_drop_has_every_row_committed_before_it(restored: Restored) -> None:
    assert restored.count == str(ROWS)


def test_a_shard_restored_to_a_moment_has_no_row_committed_after_it(restored: Restored) -> None:
    assert restored.late == "0"
