"""barman-cloud, the backup engine in the member image, against a real S3 server over TLS, as ``spec.backup`` has the
hooks configure it: a shard's WAL archived by the rendered ``archive_command`` as Patroni runs PostgreSQL, a base
backup taken on its standby by the base backups' Job as rendered (``backup/cronjob.py``: its script, in the member
image, logged in over TLS), and a new shard bootstrapped by Patroni from them to a moment before a ``DROP TABLE`` by
the bootstrap ``spec.restore`` renders (``backup/restore.py``); one that would archive over its source is refused,
and so is a new shard made by initdb under the source's name and prefix (``backup/fresh.py``).

The object store is versitygw (``testbed/real/objectstore.py``) on the host's loopback, which the members share.
The member's configuration is ``PatroniConfig`` with the backup section; its environment is ``backup.member.env``
with each Secret reference resolved as the kubelet resolves it, and the CA is mounted where the rendered volume
puts it. The Job's container shares the host's network too, with the shard's ``-standby`` and ``-primary`` Service
names resolving to the members' addresses, as cluster DNS resolves them.
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
from hooks.backup import restore as backup_restore
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


def object_store(store: ObjectStore, prefix: str) -> Obj:
    """The store under ``prefix``, its access key and CA in the user's Secrets."""
    secret, key_id, secret_key = CREDENTIALS
    return {
        "destinationPath": f"s3://{BUCKET}/{prefix}",
        "endpointURL": store.endpoint,
        "endpointCA": {"name": CA_SECRET[0], "key": CA_SECRET[1]},
        "region": store.region,
        "s3Credentials": {
            "accessKeyId": {"name": secret, "key": key_id},
            "secretAccessKey": {"name": secret, "key": secret_key},
        },
    }


def spec_of(store: ObjectStore, prefix: str, restore: Obj | None = None) -> ShardDBSpec:
    """A ShardDB that backs up to the store (under ``prefix``), the superuser's password in another Secret, as
    ``spec.db.env`` hands it to Patroni; ``restore`` as ``spec.restore``."""
    password = {"secretKeyRef": {"name": SUPERUSER_SECRET[0], "key": SUPERUSER_SECRET[1]}}
    return ShardDBSpec.model_validate(
        {
            "shards": 1,
            "dbImage": "postgres-patroni",
            "cache": {"image": "redis"},
            "replication": {"members": 2},
            "db": {"env": [{"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": password}]},
            "backup": {
                "objectStore": object_store(store, prefix),
                "archiveTimeoutSeconds": 10,
                "retentionPolicy": "7d",
            },
            **({"restore": restore} if restore is not None else {}),
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


def resolved_env(spec: ShardDBSpec, store: ObjectStore) -> dict[str, str]:
    """The member's rendered backup (and restore) environment, resolved."""
    assert spec.backup is not None
    restoring = backup_restore.env(spec.restore) if spec.restore is not None else []
    return resolved([*backup_member.env(spec.backup), *restoring], store)


def ca_volumes(store: ObjectStore, folder: Path, spec: ShardDBSpec) -> dict[Path, str]:
    """The rendered CA volumes (the store's, and the restore source's): each Secret's key as ``ca.crt``, mounted
    where the rendered mount says."""
    assert spec.backup is not None
    rendered = [(backup_member.volumes(spec.backup), backup_member.mounts(spec.backup))]
    if spec.restore is not None:
        rendered.append((backup_restore.volumes(spec.restore), backup_restore.mounts(spec.restore)))
    out: dict[Path, str] = {}
    for (volume,), (mount,) in rendered:
        (item,) = volume["secret"]["items"]
        assert (volume["secret"]["secretName"], item["key"]) == CA_SECRET
        held = folder / volume["name"]
        held.mkdir(exist_ok=True, parents=True)
        held.chmod(0o755)
        (held / item["path"]).write_bytes(store.ca_bundle.read_bytes())
        (held / item["path"]).chmod(0o644)
        out[held] = mount["mountPath"]
    return out


def rendered_config(shard: Shard, spec: ShardDBSpec, name: str, change: Obj | None = None) -> Path:
    """``PatroniConfig`` with the backup (and restore) sections, as the member template carries it; ``change``
    merged into its top-level sections."""
    config = patroni_config.PatroniConfig(
        shard.parent, 0, DB_PORT, "/var/lib/postgresql/data", True, backup=spec.backup, restore=spec.restore
    )
    data = config.as_dict()
    for section, values in (change or {}).items():
        data[section] = {**data.get(section, {}), **values}
    path = shard.folder / name
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o644)
    return path


def restored_spec(store: ObjectStore, prefix: str, source: Shard, target: str) -> ShardDBSpec:
    """A ShardDB archiving under ``prefix`` and restored from ``source``'s backups to ``target``."""
    origin = {"name": source.parent, "objectStore": object_store(store, source.namespace)}
    return spec_of(store, prefix, {"source": origin, "recoveryTarget": {"targetTime": target}})


def bootstrapping(shard: Shard, spec: ShardDBSpec, name: str) -> Path:
    """The configuration ``spec`` renders, bootstrapped by a custom method: with ``spec.restore``, from the source's
    latest base backup before the target, its archived WAL replayed to the target, then promoted; else by initdb
    once the shard's own archive folder is shown unused.

    While a custom bootstrap runs, Patroni trusts only the socket and the member's own address, from which a
    pod's Patroni connects; here every client's source is the host's loopback address, so Patroni takes the socket.
    """
    return rendered_config(shard, spec, f"{name}-{shard.namespace}.json", {"postgresql": {"use_unix_socket": True}})


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
    source_wal: frozenset[str]  # the source's archive once it was gone
    source_wal_after: frozenset[str]  # the same after the restore and the refused bootstraps
    own_wal: frozenset[str]  # the restored shard's own archive
    clash_leader: str | None  # who leads the refused restore's shard
    anew_leader: str | None  # who leads the shard made anew over the source's folder
    anew_initialized: bool  # whether that shard's cluster was left recorded as made
    anew_log: str  # what its member said before Patroni stopped
    refusal: str  # what a member says of a used archive folder


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
        asked = restored_spec(store, again.namespace, shard, target)
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


def test_the_engine_lists_the_base_backup_it_took(restored: Restored) -> None:
    (line,) = [line for line in restored.backups.splitlines() if line.split()[:1] and line.split()[0][:1].isdigit()]
    assert line.split()[0].startswith("20"), restored.backups


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
