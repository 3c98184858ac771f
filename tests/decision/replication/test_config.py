"""``hooks/replication/config.py``: what Patroni is told in every member of a shard, and the timing it runs by.

Read back from the rendered member template's annotation, as Patroni reads the file projected from it.
"""

from __future__ import annotations

import json
import shlex

import yaml

from hooks import names
from hooks.replication import callback, incluster
from hooks.replication import config as patroni_config
from hooks.replication import template as member_pods
from hooks.replication.shape import Plan

from ...support.replication import config, members, rendered, spec, statefulset

# --- the labels Patroni sets --------------------------------------------------------------------------------


def test_patroni_is_told_the_labels_the_services_select() -> None:
    kubernetes = config(rendered())["kubernetes"]
    assert (kubernetes["role_label"], kubernetes["leader_label_value"], kubernetes["follower_label_value"]) == (
        names.ROLE_LABEL,
        "primary",
        "replica",
    )


def test_patronis_member_selector_is_the_shards_members() -> None:
    objects = rendered()
    kubernetes = config(objects, 1)["kubernetes"]
    patronis = {**kubernetes["labels"], kubernetes["scope_label"]: config(objects, 1)["scope"]}
    assert patronis == member_pods.member_selector("demo", 1)


# --- Patroni's configuration --------------------------------------------------------------------------------


def test_patroni_keeps_its_state_in_configmaps() -> None:
    kubernetes = config(rendered())["kubernetes"]
    assert kubernetes["use_endpoints"] is False
    assert "ports" not in kubernetes


def test_a_synchronous_shard_does_not_hang_writes_when_its_standby_is_gone() -> None:
    dcs = config(rendered())["bootstrap"]["dcs"]
    assert (dcs["synchronous_mode"], dcs["synchronous_mode_strict"]) == (True, False)


def test_an_asynchronous_shard_says_so_to_patroni() -> None:
    dcs = config(rendered(members(2, synchronous=False), Plan(2, False)))["bootstrap"]["dcs"]
    assert dcs["synchronous_mode"] is False


def test_the_timing_keeps_patronis_rule() -> None:
    dcs = config(rendered())["bootstrap"]["dcs"]
    assert dcs["ttl"] >= 20
    assert dcs["loop_wait"] + 2 * dcs["retry_timeout"] <= dcs["ttl"]


def test_a_lost_primarys_lock_is_taken_over_within_thirty_seconds() -> None:
    dcs = config(rendered())["bootstrap"]["dcs"]
    assert dcs["ttl"] + dcs["loop_wait"] <= 25


def test_a_primary_that_loses_the_api_server_keeps_serving_while_its_members_answer() -> None:
    assert config(rendered())["bootstrap"]["dcs"]["failsafe_mode"] is True


def test_each_shard_is_its_own_patroni_scope() -> None:
    objects = rendered()
    assert [config(objects, shard)["scope"] for shard in (0, 1)] == ["demo-db-0", "demo-db-1"]


def test_postgresql_listens_on_the_spec_port_and_keeps_its_data_on_the_volume() -> None:
    the_spec = spec(replication={"members": 2}, db={"port": 5433, "dataPath": "/data/shard/"})
    postgresql = config(rendered(the_spec))["postgresql"]
    assert (postgresql["listen"], postgresql["data_dir"]) == ("0.0.0.0:5433", "/data/shard/pgdata")
    assert postgresql["pgpass"].startswith("/data/shard/")


def test_patroni_reads_the_configuration_as_yaml() -> None:
    text = statefulset(rendered())["spec"]["template"]["metadata"]["annotations"][patroni_config.CONFIG_ANNOTATION]
    assert yaml.safe_load(text) == json.loads(text)


def test_every_address_needs_a_password() -> None:
    rules = config(rendered())["postgresql"]["pg_hba"]
    assert all(rule.endswith(" scram-sha-256") for rule in rules if rule.startswith("host"))
    assert [rule for rule in rules if not rule.startswith("host")] == ["local all all trust"]


# --- Patroni's REST API and the WAL kept for an absent standby ----------------------------------------------


def test_patronis_rest_api_takes_an_unsafe_call_only_from_a_members_address() -> None:
    assert config(rendered())["restapi"]["allowlist_include_members"] is True


def test_the_wal_kept_for_an_absent_standby_is_a_quarter_of_the_volume_by_default() -> None:
    default = config(rendered())["postgresql"]["parameters"]["max_slot_wal_keep_size"]
    larger = config(rendered(spec(replication={"members": 2}, storage={"size": "10Gi"})))
    assert (default, larger["postgresql"]["parameters"]["max_slot_wal_keep_size"]) == ("256MB", "2560MB")


def test_the_wal_kept_for_an_absent_standby_is_what_the_spec_asks_in_whole_megabytes() -> None:
    asked = spec(replication={"members": 2, "maxSlotWalKeepSize": "1.5Gi"})
    assert config(rendered(asked))["postgresql"]["parameters"]["max_slot_wal_keep_size"] == "1536MB"


def test_a_strict_shard_tells_patroni_to_hold_writes_without_a_synchronous_standby() -> None:
    strict = Plan(2, True, strict=True)
    dcs = config(rendered(spec(replication={"members": 2, "strict": True}), strict))["bootstrap"]["dcs"]
    assert (dcs["synchronous_mode"], dcs["synchronous_mode_strict"]) == (True, True)


# --- the role-change callback -------------------------------------------------------------------------------


def test_a_new_primary_runs_the_callback_that_takes_the_primary_label_off_the_others() -> None:
    command = shlex.split(config(rendered())["postgresql"]["callbacks"]["on_role_change"])
    assert command[:2] == ["python3", "-c"]
    compile(command[2], "on_role_change", "exec")
    assert f"{names.SCOPE_LABEL}=" in command[2]
    assert f"{names.ROLE_LABEL}={names.LEADER_LABEL_VALUE}" in command[2]


def test_the_callback_reads_the_members_name_and_namespace_from_variables_patroni_leaves_alone() -> None:
    env = {var["name"]: var for var in member_pods.patroni_env(5432)}
    for name, path in ((incluster.MEMBER_ENV, "metadata.name"), (incluster.NAMESPACE_ENV, "metadata.namespace")):
        assert not name.startswith("PATRONI_")
        assert env[name]["valueFrom"]["fieldRef"]["fieldPath"] == path
        assert name in callback.SCRIPT
