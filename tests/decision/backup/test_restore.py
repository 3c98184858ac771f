"""``spec.restore``: each shard of a new ShardDB bootstrapped by Patroni from the same shard of another's backups."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

import pytest

from hooks import pod_templates, template_choice
from hooks.backup import commands, member, restore
from hooks.replication import config as patroni_config
from hooks.replication import template as member_pods
from hooks.replication.shape import Plan
from hooks.spec import ShardDBSpec

from ...support.backups import STORE
from ...support.replication import BASE, answer, applied, child, healthy, parent, primary_slice, request, sync_record
from ...support.samples import ARCHIVE_STORE

Obj = dict[str, Any]
PLAN = Plan(members=2, synchronous=True)
SOURCE_STORE = ARCHIVE_STORE
SOURCE = {"name": "orders", "objectStore": SOURCE_STORE}


def spec(target: Obj | None = None, *, backup: bool = True, store: Obj | None = None) -> ShardDBSpec:
    asked: Obj = {"source": {**SOURCE, "objectStore": store or SOURCE_STORE}}
    if target is not None:
        asked["recoveryTarget"] = target
    fields: Obj = {**BASE, "replication": {"members": 2}, "restore": asked}
    if backup:
        fields["backup"] = {"objectStore": STORE}
    return ShardDBSpec.model_validate(fields)


def template(the_spec: ShardDBSpec, shard: int = 1) -> Obj:
    return member_pods.member_template("demo", shard, the_spec, PLAN, pod_templates.db_template("demo", the_spec))


def bootstrap(the_spec: ShardDBSpec, shard: int = 1) -> Obj:
    config: Obj = json.loads(template(the_spec, shard)["metadata"]["annotations"][patroni_config.CONFIG_ANNOTATION])
    found: Obj = config["bootstrap"]
    return found


def script(the_spec: ShardDBSpec, shard: int = 1) -> str:
    argv = shlex.split(bootstrap(the_spec, shard)["restore"]["command"])
    assert argv[:2] == ["sh", "-c"]
    return argv[2]


def restore_line(the_spec: ShardDBSpec) -> list[str]:
    (line,) = [line for line in script(the_spec).splitlines() if commands.RESTORE in line]
    args = shlex.split(line)
    return args[args.index(commands.RESTORE) :]


def db(pod: Obj) -> Obj:
    found: Obj = next(c for c in pod["spec"]["containers"] if c["name"] == "db")
    return found


def test_patroni_bootstraps_each_shard_by_the_restore_method_rather_than_initdb() -> None:
    found = bootstrap(spec())
    assert found["method"] == restore.METHOD
    assert found["restore"]["no_params"] is True


def test_each_shard_restores_the_same_shard_of_the_source_into_its_data_folder() -> None:
    args = restore_line(spec())
    assert args[-3:-1] == ["orders-db-1", restore.LATEST]
    assert args[-1] == f"{BASE.get('db', {}).get('dataPath', '/var/lib/postgresql/data')}/pgdata"
    assert "s3://archive/prod" in args
    assert "https://s3.elsewhere.example.com" in args


def test_without_a_target_the_newest_base_backup_is_replayed_to_the_end_of_the_archive() -> None:
    recovery = bootstrap(spec())["restore"]["recovery_conf"]
    assert not {key for key in recovery if key.startswith("recovery_target") and key != "recovery_target_timeline"}
    assert recovery["recovery_target_timeline"] == "latest"


def test_a_target_time_lets_the_engine_pick_the_newest_base_backup_taken_before_it() -> None:
    the_spec = spec({"targetTime": "2026-12-07T05:00:00Z"})
    args = restore_line(the_spec)
    assert args[-2] == commands.AUTO
    assert args[args.index("--target-time") + 1] == "2026-12-07T05:00:00Z"
    recovery = bootstrap(the_spec)["restore"]["recovery_conf"]
    assert recovery["recovery_target_time"] == "2026-12-07 05:00:00+00:00"
    assert recovery["recovery_target_action"] == "promote"


@pytest.mark.parametrize(
    ("asked", "told"),
    [
        ("2026-12-07T05:00:00Z", "2026-12-07 05:00:00+00:00"),
        ("2026-12-07t05:00:00.123456z", "2026-12-07 05:00:00.123456+00:00"),
        ("2026-12-07 07:00:00+02:00", "2026-12-07 07:00:00+02:00"),
    ],
)
def test_postgresql_is_told_the_target_time_with_a_numeric_offset_which_it_reads_before_its_zone_names(
    asked: str, told: str
) -> None:
    assert restore.postgres_time(asked) == told


def test_a_named_restore_point_is_reached_from_the_newest_base_backup() -> None:
    the_spec = spec({"targetName": "before-migration"})
    assert restore_line(the_spec)[-2] == restore.LATEST
    recovery = bootstrap(the_spec)["restore"]["recovery_conf"]
    assert recovery["recovery_target_name"] == "before-migration"
    assert recovery["recovery_target_action"] == "promote"


def test_a_base_backup_named_by_its_id_is_the_one_restored() -> None:
    the_spec = spec({"targetName": "before-migration", "backupID": "20261207T040000"})
    assert restore_line(the_spec)[-2] == "20261207T040000"
    assert "--target-time" not in restore_line(the_spec)


def test_the_source_wal_is_fetched_with_the_source_stores_credentials_not_the_members_own() -> None:
    command = bootstrap(spec())["restore"]["recovery_conf"]["restore_command"]
    for name in (*restore.BOTO_NAMES, member.CA_ENV):
        assert f'{name}="${{RESTORE_{name}}}"' in command
    assert "orders-db-1" in command
    assert commands.WAL_RESTORE in command


def test_the_members_own_archiving_keeps_its_own_store() -> None:
    config: Obj = json.loads(template(spec())["metadata"]["annotations"][patroni_config.CONFIG_ANNOTATION])
    archive = config["postgresql"]["parameters"]["archive_command"]
    assert "RESTORE_" not in archive
    assert f"{STORE['destinationPath']} demo-db-1" in archive


def test_the_source_stores_credentials_come_from_its_secret_by_reference() -> None:
    env = {var["name"]: var for var in db(template(spec()))["env"]}
    key = env["RESTORE_" + member.ACCESS_KEY_ENV]["valueFrom"]["secretKeyRef"]
    assert key == {"name": "archive-s3", "key": "id"}
    assert env["RESTORE_" + member.REGION_ENV]["value"] == "eu-west-3"
    assert env["RESTORE_" + member.CA_ENV]["value"] == f"{restore.CA_DIR}/{member.CA_FILE}"


def test_the_source_stores_ca_is_mounted_read_only_beside_the_members_own() -> None:
    pod = template(spec())
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == restore.CA_VOLUME)
    assert volume["secret"]["secretName"] == "archive-ca"
    mount = next(m for m in db(pod)["volumeMounts"] if m["name"] == restore.CA_VOLUME)
    assert mount == {"name": restore.CA_VOLUME, "mountPath": restore.CA_DIR, "readOnly": True}


def test_a_source_without_a_ca_trusts_the_image_even_where_the_members_own_store_names_one() -> None:
    store = {key: value for key, value in SOURCE_STORE.items() if key != "endpointCA"}
    the_spec = spec(store=store)
    command = bootstrap(the_spec)["restore"]["recovery_conf"]["restore_command"]
    assert command.startswith(f"env -u {member.CA_ENV} ")
    assert restore.CA_VOLUME not in {v["name"] for v in template(the_spec)["spec"]["volumes"]}


def test_a_member_refuses_to_restore_when_its_own_archive_folder_holds_wal_naming_the_field() -> None:
    text = script(spec())
    assert commands.CHECK_WAL_ARCHIVE in text
    assert text.index(commands.CHECK_WAL_ARCHIVE) < text.index(commands.RESTORE)
    assert "spec.backup.objectStore.destinationPath: s3://backups/orders/demo-db-1 already holds WAL" in text
    assert member.TERMINATION_LOG in text


def test_a_restored_sharddb_that_does_not_back_up_checks_no_archive() -> None:
    assert commands.CHECK_WAL_ARCHIVE not in script(spec(backup=False))


def test_the_bootstrap_script_is_valid_shell() -> None:
    checked = subprocess.run(["sh", "-n", "-c", script(spec())], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr


def test_a_sharddb_without_restore_bootstraps_by_initdb() -> None:
    plain = ShardDBSpec.model_validate({**BASE, "replication": {"members": 2}})
    assert "method" not in bootstrap(plain)
    assert not {var["name"] for var in db(template(plain))["env"]} & {"RESTORE_" + member.ACCESS_KEY_ENV}


def test_restore_shapes_no_hash_so_removing_it_restarts_no_member() -> None:
    plain = ShardDBSpec.model_validate({**BASE, "replication": {"members": 2}, "backup": {"objectStore": STORE}})
    assert template_choice.inputs(spec(), "db") == template_choice.inputs(plain, "db")


# --- the lifecycle: never seeded, the cache still waits ------------------------------------------------------


def restored(fields: Obj | None = None) -> Obj:
    return parent({"restore": {"source": SOURCE}, **(fields or {})})


def marks() -> list[Obj]:
    return [*healthy(), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]


def test_a_restored_sharddb_is_never_seeded() -> None:
    new = answer(request(restored()))
    ready = answer(request(restored(), applied(new["children"], seeded=False), marks()))
    running = answer(request(restored(), applied(ready["children"], seeded=False), marks()))
    for reply in (new, ready, running):
        assert not [each for each in reply["children"] if each["kind"] == "Job"], reply["children"]


def test_a_restored_sharddbs_cache_waits_for_its_shards_as_any_other() -> None:
    new = answer(request(restored()))
    assert not [each for each in new["children"] if each["kind"] == "Deployment"]
    ready = answer(request(restored(), applied(new["children"]), marks()))
    assert [each for each in ready["children"] if each["kind"] == "Deployment"]


def test_removing_restore_from_a_running_sharddb_keeps_its_member_templates() -> None:
    new = answer(request(restored()))
    ready = answer(request(restored(), applied(new["children"]), marks()))
    running = applied(ready["children"])
    edited = parent()
    edited["metadata"]["generation"] = 2
    reply = answer(request(edited, running, marks()))
    before = child(ready["children"], "StatefulSet", "demo-db-0")["spec"]["template"]
    assert child(reply["children"], "StatefulSet", "demo-db-0")["spec"]["template"] == before
