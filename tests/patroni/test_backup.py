"""barman-cloud, the backup engine in the member image, against a real S3 server over TLS, as ``spec.backup`` has the
hooks configure it: a shard's WAL archived by the rendered ``archive_command`` as Patroni runs PostgreSQL, a base
backup taken on its standby by the base backups' Job as rendered (``backup/cronjob.py``: its script, in the member
image, logged in over TLS), and a new shard bootstrapped by Patroni from them to a moment before a ``DROP TABLE``.

The object store is versitygw (``testbed/real/objectstore.py``) on the host's loopback, which the members share.
The member's configuration is ``PatroniConfig`` with the backup section; its environment is ``backup.member.env``
with each Secret reference resolved as the kubelet resolves it, and the CA is mounted where the rendered volume
puts it. The Job's container shares the host's network too, with the shard's ``-standby`` and ``-primary`` Service
names resolving to the members' addresses, as cluster DNS resolves them. The restore's bootstrap is written here
from ``backup.commands``: the hooks do not render a restore yet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hooks import render
from hooks.backup import commands
from hooks.backup import member as backup_member
from hooks.backup.spec import Backup
from hooks.replication import config as patroni_config
from hooks.spec import ShardDBSpec
from testbed.real import objectstore
from testbed.real.controlplane import ControlPlane
from testbed.real.objectstore import ObjectStore
from tools.image.builders import ulimits_below_own
from tools.image.patroni import PatroniImages

from ..support.kube import Kube
from .conftest import IMAGES, new_shard
from .members import DB_PORT, PASSWORDS, Member, PodmanError, Shard, podman, start_member, wait_for

Obj = dict[str, Any]
BUCKET = "backups"
# The user's Secrets, as the kubelet would read them: (Secret, key) -> value.
CREDENTIALS = ("store-s3", "ACCESS_KEY_ID", "ACCESS_SECRET_KEY")
CA_SECRET = ("store-ca", "ca.crt")
SUPERUSER_SECRET = ("shard-passwords", "superuser")
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


def spec_of(store: ObjectStore, prefix: str) -> ShardDBSpec:
    """A ShardDB that backs up to the store, its access key and CA in the user's Secrets, the superuser's password
    in another, as ``spec.db.env`` hands it to Patroni."""
    secret, key_id, secret_key = CREDENTIALS
    password = {"secretKeyRef": {"name": SUPERUSER_SECRET[0], "key": SUPERUSER_SECRET[1]}}
    return ShardDBSpec.model_validate(
        {
            "shards": 1,
            "dbImage": "postgres-patroni",
            "cache": {"image": "redis"},
            "replication": {"members": 2},
            "db": {"env": [{"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": password}]},
            "backup": {
                "objectStore": {
                    "destinationPath": f"s3://{BUCKET}/{prefix}",
                    "endpointURL": store.endpoint,
                    "endpointCA": {"name": CA_SECRET[0], "key": CA_SECRET[1]},
                    "region": store.region,
                    "s3Credentials": {
                        "accessKeyId": {"name": secret, "key": key_id},
                        "secretAccessKey": {"name": secret, "key": secret_key},
                    },
                },
                "archiveTimeoutSeconds": 10,
                "retentionPolicy": "7d",
            },
        }
    )


def backup_of(store: ObjectStore, prefix: str) -> Backup:
    """``spec.backup`` of ``spec_of``."""
    backup = spec_of(store, prefix).backup
    assert backup is not None
    return backup


def resolved(env: list[Obj], store: ObjectStore) -> dict[str, str]:
    """A rendered environment with each ``secretKeyRef`` read from the user's Secrets, as the kubelet does."""
    secret, key_id, secret_key = CREDENTIALS
    secrets = {
        (secret, key_id): store.access_key,
        (secret, secret_key): store.secret_key,
        SUPERUSER_SECRET: PASSWORDS["PATRONI_SUPERUSER_PASSWORD"],
    }
    out: dict[str, str] = {}
    for var in env:
        ref = var.get("valueFrom", {}).get("secretKeyRef")
        out[var["name"]] = secrets[(ref["name"], ref["key"])] if ref else var["value"]
    return out


def resolved_env(backup: Backup, store: ObjectStore) -> dict[str, str]:
    """The member's rendered backup environment, resolved."""
    return resolved(backup_member.env(backup), store)


def ca_volume(store: ObjectStore, folder: Path, backup: Backup) -> dict[Path, str]:
    """The rendered CA volume: the Secret's key as ``ca.crt``, mounted where the rendered mount says."""
    (volume,) = backup_member.volumes(backup)
    (item,) = volume["secret"]["items"]
    assert (volume["secret"]["secretName"], item["key"]) == CA_SECRET
    folder.mkdir(exist_ok=True)
    folder.chmod(0o755)
    (folder / item["path"]).write_bytes(store.ca_bundle.read_bytes())
    (folder / item["path"]).chmod(0o644)
    (mount,) = backup_member.mounts(backup)
    return {folder: mount["mountPath"]}


def rendered_config(shard: Shard, backup: Backup, name: str, change: Obj | None = None) -> Path:
    """``PatroniConfig`` with the backup section, as the member template carries it; ``change`` merged into its
    top-level sections."""
    config = patroni_config.PatroniConfig(shard.parent, 0, DB_PORT, "/var/lib/postgresql/data", True, backup=backup)
    data = config.as_dict()
    for section, values in (change or {}).items():
        data[section] = {**data.get(section, {}), **values}
    path = shard.folder / name
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o644)
    return path


def restoring(shard: Shard, backup: Backup, source: Backup, scope: str, target: str) -> Path:
    """A new shard bootstrapped by Patroni's custom method: the latest base backup of ``scope`` in ``source``'s store,
    then its archived WAL replayed to ``target``, then promoted; it archives to ``backup``'s path, a path of its own."""
    store = source.object_store
    restore = {
        "command": commands.line(commands.restore(store, scope, "latest", DATA)),
        "no_params": True,
        "recovery_conf": {
            "restore_command": commands.line(commands.wal_restore(store, scope)),
            "recovery_target_time": target,
            "recovery_target_action": "promote",
            "recovery_target_timeline": "latest",
        },
    }
    bootstrap = {**patroni_config.PatroniConfig(shard.parent, 0, DB_PORT, "", True).as_dict()["bootstrap"]}
    bootstrap.update(method="restore", restore=restore)
    # While a custom bootstrap recovers, Patroni trusts only the socket and the member's own address, from which a
    # pod's Patroni connects; here every client's source is the host's loopback address, so Patroni takes the socket.
    postgresql = {"use_unix_socket": True}
    return rendered_config(shard, backup, "restoring.json", {"bootstrap": bootstrap, "postgresql": postgresql})


def leading(shard: Shard, member: Member) -> None:
    wait_for(f"{member.name} leads {shard.scope}", lambda: shard.holder("leader") == member.name, [member])
    wait_for(f"{member.name} accepts writes", lambda: _writable(member), [member])


def _writable(member: Member) -> bool:
    try:
        return member.sql("SELECT pg_catalog.pg_is_in_recovery()") == "f"
    except PodmanError:  # not up yet: asked again
        return False


def streaming(primary: Member, standby: Member) -> None:
    wait_for(f"{standby.name} streams", lambda: primary.streams_to(standby.name) != "", [primary, standby])


def run_backup_job(shard: Shard, spec: ShardDBSpec, store: ObjectStore, by_role: dict[str, Member], ca: Path) -> str:
    """The CronJob's Job as rendered: its container's command and environment in the member image, restricted as
    its pod is, the shard's role Services resolving to the members holding them; its log."""
    assert spec.backup is not None
    job = render.base_backups(shard.parent, spec, spec.backup, 1)
    (container,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    (mount,) = container["volumeMounts"]
    hosts = [f"--add-host={shard.scope}-{role}:{member.address}" for role, member in by_role.items()]
    env = [f"--env={name}={value}" for name, value in resolved(container["env"], store).items()]
    command = container["command"]
    return podman(
        "run", "--rm", "--pull", "never", "--network", "host", "--read-only", "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges", *ulimits_below_own(), *hosts, *env,
        "--volume", f"{ca}:{mount['mountPath']}:ro",
        "--entrypoint", json.dumps(command[:1]), shard.image, *command[1:],
        timeout=300.0,
    )  # fmt: skip


@dataclass(frozen=True)
class Restored:
    """The source shard's story and the shard restored from its backups."""

    target: str  # the moment restored to: after ROWS rows, before the late ones and the drop
    dropped: bool  # the source no longer has the table
    job_log: str  # what the base backups' Job said
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
    spec = spec_of(store, shard.namespace)
    backup = backup_of(store, shard.namespace)
    env = resolved_env(backup, store)
    ca = tmp_path_factory.mktemp("store-ca")
    mounts = ca_volume(store, ca, backup)
    config = rendered_config(shard, backup, "archiving.json")
    primary = start_member(shard, 0, env, config, mounts)
    members = [primary]
    try:
        leading(shard, primary)
        standby = start_member(shard, 1, env, config, mounts)
        members.append(standby)
        streaming(primary, standby)
        primary.sql("CREATE TABLE orders (id int PRIMARY KEY)")
        primary.sql(f"INSERT INTO orders SELECT generate_series(1, {ROWS // 2})")
        job_log = run_backup_job(shard, spec, store, {"standby": standby, "primary": primary}, ca)
        primary.sql(f"INSERT INTO orders SELECT generate_series({ROWS // 2 + 1}, {ROWS})")
        target = primary.sql("SELECT pg_catalog.clock_timestamp()")
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

        kind = next(kind for kind, image in IMAGES.items() if image == shard.image)
        again = new_shard(kind, kube, control_plane, tmp_path_factory.mktemp(f"restored-{kind}"))
        config = restoring(again, backup_of(store, again.namespace), backup, shard.scope, target)
        copy = start_member(again, 0, env, config, mounts)
        members.append(copy)
        leading(again, copy)
        yield Restored(
            target,
            dropped,
            job_log,
            backups,
            copy.sql("SELECT count(*) FROM orders"),
            copy.sql(f"SELECT count(*) FROM orders WHERE id > {ROWS}"),
        )
    finally:
        for each in members:
            each.remove()


def test_the_source_shard_lost_its_table(restored: Restored) -> None:
    assert restored.dropped


def test_the_backup_job_takes_the_base_backup_on_the_standby(restored: Restored) -> None:
    assert "base backup from its standby" in restored.job_log, restored.job_log
    assert "base backup taken" in restored.job_log, restored.job_log


def test_the_backup_job_applies_the_retention_policy_and_ends_well(restored: Restored) -> None:
    assert "retention, RECOVERY WINDOW OF 7 DAYS" in restored.job_log, restored.job_log
    assert "every shard backed up" in restored.job_log, restored.job_log


def test_the_engine_lists_the_base_backup_it_took(restored: Restored) -> None:
    (line,) = [line for line in restored.backups.splitlines() if line.split()[:1] and line.split()[0][:1].isdigit()]
    assert line.split()[0].startswith("20"), restored.backups


def test_a_shard_restored_to_a_moment_before_the_drop_has_every_row_committed_before_it(restored: Restored) -> None:
    assert restored.count == str(ROWS)


def test_a_shard_restored_to_a_moment_has_no_row_committed_after_it(restored: Restored) -> None:
    assert restored.late == "0"
