"""What a member gains from ``spec.backup``: archiving in Patroni's configuration, boto3's environment, the CA."""

from __future__ import annotations

import json
from typing import Any

from hooks import pod_templates, template_choice
from hooks.backup import member
from hooks.replication import config as patroni_config
from hooks.replication import template as member_pods
from hooks.replication.shape import Plan
from hooks.spec import ShardDBSpec

from ...support.backups import STORE
from ...support.replication import (
    BASE,
    answer,
    applied,
    child,
    healthy,
    parent,
    primary_slice,
    request,
    stages,
    sync_record,
)

Obj = dict[str, Any]
PLAN = Plan(members=2, synchronous=True)


def spec(**backup: Any) -> ShardDBSpec:
    return ShardDBSpec.model_validate(
        {**BASE, "replication": {"members": 2}, "backup": {"objectStore": STORE, **backup}}
    )


def template(the_spec: ShardDBSpec, shard: int = 0) -> Obj:
    return member_pods.member_template("demo", shard, the_spec, PLAN, pod_templates.db_template("demo", the_spec))


def patroni(pod: Obj) -> Obj:
    config: Obj = json.loads(pod["metadata"]["annotations"][patroni_config.CONFIG_ANNOTATION])
    return config


def db(pod: Obj) -> Obj:
    found: Obj = next(c for c in pod["spec"]["containers"] if c["name"] == "db")
    return found


def test_the_primary_archives_each_segment_to_its_shards_folder() -> None:
    parameters = patroni(template(spec(), shard=1))["postgresql"]["parameters"]
    assert parameters["archive_mode"] == "on"
    assert " s3://backups/orders demo-db-1 %p" in parameters["archive_command"]


def test_a_segment_not_yet_full_is_archived_after_the_timeout_asked() -> None:
    parameters = patroni(template(spec(archiveTimeoutSeconds=30)))["postgresql"]["parameters"]
    assert parameters["archive_timeout"] == "30s"


def test_a_standby_may_restore_from_the_archive_what_its_primary_no_longer_has() -> None:
    recovery = patroni(template(spec()))["postgresql"]["recovery_conf"]
    assert recovery["restore_command"].endswith(" s3://backups/orders demo-db-0 %f %p")


def test_the_access_key_comes_from_the_users_secret_by_reference() -> None:
    env = {var["name"]: var for var in db(template(spec()))["env"]}
    assert env[member.ACCESS_KEY_ENV]["valueFrom"] == {"secretKeyRef": {"name": "backup-s3", "key": "ACCESS_KEY_ID"}}
    assert env[member.SECRET_KEY_ENV]["valueFrom"]["secretKeyRef"]["key"] == "ACCESS_SECRET_KEY"
    assert env[member.REGION_ENV]["value"] == "us-east-1"


def test_a_named_ca_is_mounted_read_only_and_given_to_boto3() -> None:
    pod = template(spec(objectStore={**STORE, "endpointCA": {"name": "store-ca", "key": "bundle.pem"}}))
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == member.CA_VOLUME]
    assert volume["secret"]["secretName"] == "store-ca"
    assert volume["secret"]["items"] == [{"key": "bundle.pem", "path": member.CA_FILE}]
    (mount,) = [m for m in db(pod)["volumeMounts"] if m["name"] == member.CA_VOLUME]
    assert mount["readOnly"] is True
    env = {var["name"]: var.get("value") for var in db(pod)["env"]}
    assert env[member.CA_ENV] == f"{mount['mountPath']}/{member.CA_FILE}"


def test_the_ca_is_readable_by_any_user_of_the_pod_since_a_users_security_context_may_set_no_fs_group() -> None:
    pod = template(spec(objectStore={**STORE, "endpointCA": {"name": "store-ca", "key": "bundle.pem"}}))
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == member.CA_VOLUME]
    assert volume["secret"]["defaultMode"] == 0o444


def test_without_a_ca_no_volume_is_added_and_boto3_trusts_the_image() -> None:
    pod = template(spec())
    assert member.CA_VOLUME not in {v["name"] for v in pod["spec"]["volumes"]}
    assert member.CA_ENV not in {var["name"] for var in db(pod)["env"]}


def test_the_users_own_env_of_the_same_name_wins() -> None:
    own = {"name": member.REGION_ENV, "value": "eu-central-1"}
    the_spec = ShardDBSpec.model_validate(
        {**BASE, "replication": {"members": 2}, "backup": {"objectStore": STORE}, "db": {"env": [own]}}
    )
    assert [var for var in db(template(the_spec))["env"] if var["name"] == member.REGION_ENV] == [own]


def test_a_shard_without_backup_gets_nothing_of_it() -> None:
    the_spec = ShardDBSpec.model_validate({**BASE, "replication": {"members": 2}})
    pod = template(the_spec)
    postgresql = patroni(pod)["postgresql"]
    assert "archive_mode" not in postgresql["parameters"]
    assert "recovery_conf" not in postgresql
    assert not {var["name"] for var in db(pod)["env"]} & {member.ACCESS_KEY_ENV, member.SECRET_KEY_ENV}


# --- a running ShardDB asks for backups: its member templates roll to archiving -----------------------------


def edited(fields: Obj) -> Obj:
    body = parent(fields)
    body["metadata"]["generation"] = 2
    return body


def archive_command(body: Obj, shard: int = 0) -> str | None:
    sts = child(body["children"], "StatefulSet", f"demo-db-{shard}")
    config = patroni(sts["spec"]["template"])
    found: str | None = config["postgresql"]["parameters"].get("archive_command")
    return found


def running() -> dict[str, dict[str, Obj]]:
    return applied(stages()["running"]["children"])


def marks() -> list[Obj]:
    return [*healthy(), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]


def test_backups_asked_of_a_running_sharddb_roll_its_members_to_archiving() -> None:
    body = answer(request(edited({"backup": {"objectStore": STORE}}), running(), marks()))
    assert archive_command(body) is not None


def test_a_running_sharddb_without_backups_keeps_its_member_templates() -> None:
    body = answer(request(parent(), running(), marks()))
    assert archive_command(body) is None


def test_backups_shape_the_shards_inputs_and_never_the_caches() -> None:
    without = ShardDBSpec.model_validate({**BASE, "replication": {"members": 2}})
    assert template_choice.inputs(spec(), "db") != template_choice.inputs(without, "db")
    assert template_choice.inputs(spec(), "cache") == template_choice.inputs(without, "cache")
