"""``hooks/replication/template.py``: today's shard pod template made a Patroni member of one shard.

Its labels and anti-affinity, Patroni's env, probes and configuration file, the user's env, affinity
and drain kept, no password; read from the rendered StatefulSets and called directly.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hooks import pod_templates
from hooks.replication import config as patroni_config
from hooks.replication import template as member_pods
from hooks.replication.shape import Plan

from ...support.replication import TWO, container, members, rendered, spec, statefulset

Obj = dict[str, Any]


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


# --- labels and placement -----------------------------------------------------------------------------------


def test_a_shards_selector_matches_its_members_only() -> None:
    objects = rendered()
    labels = statefulset(objects, 0)["spec"]["template"]["metadata"]["labels"]
    assert matches(member_pods.member_selector("demo", 0), labels)
    assert not matches(member_pods.member_selector("demo", 1), labels)


def test_two_members_of_a_shard_never_share_a_node() -> None:
    affinity = statefulset(rendered())["spec"]["template"]["spec"]["affinity"]
    assert affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [
        {
            "labelSelector": {"matchLabels": member_pods.member_selector("demo", 0)},
            "topologyKey": "kubernetes.io/hostname",
        }
    ]


def test_the_users_affinity_is_kept_beside_the_anti_affinity() -> None:
    node: Obj = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": []}]}}
    theirs = {"labelSelector": {"matchLabels": {"app": "other"}}, "topologyKey": "topology.kubernetes.io/zone"}
    users = {"nodeAffinity": node, "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [theirs]}}
    the_spec = spec(replication={"members": 2}, db={"affinity": users})
    affinity = statefulset(rendered(the_spec))["spec"]["template"]["spec"]["affinity"]
    assert affinity["nodeAffinity"] == node
    assert affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][1] == theirs


# --- the member's container ---------------------------------------------------------------------------------


def test_no_password_is_ever_in_the_template() -> None:
    """Each credential is a reference to the user's Secret; none is a value, and the configuration names none."""
    template = statefulset(rendered())["spec"]["template"]
    credentials = [
        var for var in container(rendered())["env"] if "PASSWORD" in var["name"] or "USERNAME" in var["name"]
    ]
    assert credentials
    assert all(set(var) == {"name", "valueFrom"} for var in credentials)
    assert "password" not in json.dumps(template["metadata"]["annotations"]).lower()


def test_the_configuration_file_is_the_annotation_projected_by_the_downward_api() -> None:
    pod = statefulset(rendered())["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == patroni_config.CONFIG_VOLUME]
    (item,) = volume["downwardAPI"]["items"]
    assert item["fieldRef"]["fieldPath"] == f"metadata.annotations['{patroni_config.CONFIG_ANNOTATION}']"
    mount = next(m for m in container(rendered())["volumeMounts"] if m["name"] == patroni_config.CONFIG_VOLUME)
    env = {var["name"]: var.get("value") for var in container(rendered())["env"]}
    assert env["PATRONI_CONFIG_FILE"] == f"{mount['mountPath']}/{item['path']}"


def test_the_pod_ip_is_defined_before_the_addresses_that_use_it() -> None:
    order = [var["name"] for var in container(rendered())["env"]]
    assert order.index("PATRONI_KUBERNETES_POD_IP") < order.index("PATRONI_POSTGRESQL_CONNECT_ADDRESS")
    assert order.index("PATRONI_KUBERNETES_POD_IP") < order.index("PATRONI_RESTAPI_CONNECT_ADDRESS")


def test_the_users_env_replaces_ours_of_the_same_name() -> None:
    mine = {"name": "PATRONI_CONFIG_FILE", "value": "/mine.yml"}
    secret = {"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "pg", "key": "su"}}}
    env = container(rendered(spec(replication={"members": 2}, db={"env": [mine, secret]})))["env"]
    assert [var for var in env if var["name"] == "PATRONI_CONFIG_FILE"] == [mine]
    assert secret in env


def test_patronis_rest_api_decides_readiness_and_liveness() -> None:
    db = container(rendered())
    assert db["readinessProbe"]["httpGet"]["port"] == "patroni"
    assert db["livenessProbe"]["httpGet"]["path"] == "/liveness"
    assert {"name": "patroni", "containerPort": 8008, "protocol": "TCP"} in db["ports"]


def pre_stop(db: Obj) -> list[str]:
    command: list[str] = db["lifecycle"]["preStop"]["exec"]["command"]
    return command


def test_every_members_pre_stop_is_the_stop_order_of_its_own_shard() -> None:
    objects = rendered()
    for shard in (0, 1):
        command = pre_stop(container(objects, shard))
        assert command[:2] == ["python3", "-c"]
        compile(command[2], "preStop", "exec")
        assert command[3:] == [f"demo-db-{shard}"]


def test_the_default_drain_is_left_to_patronis_own_shutdown() -> None:
    """It would end the walsenders as client sessions: the stop order runs no drain of its own."""
    assert pre_stop(container(rendered()))[3:] == ["demo-db-0"]


def test_a_drain_command_the_user_wrote_runs_inside_the_stop_order() -> None:
    db = container(rendered(spec(replication={"members": 2}, drainCommand=["sh", "-c", "true"])))
    assert pre_stop(db)[3:] == ["demo-db-0", "sh", "-c", "true"]


def test_the_base_template_is_not_changed() -> None:
    base = pod_templates.db_template("demo", members(2))
    before = copy.deepcopy(base)
    member_pods.member_template("demo", 0, members(2), TWO, base)
    assert base == before


def test_two_synchronous_members_are_ready_only_as_the_primary_or_its_synchronous_standby() -> None:
    db = container(rendered())
    assert db["readinessProbe"]["httpGet"] == {"path": "/read-only-sync", "port": "patroni", "scheme": "HTTPS"}


def test_three_members_are_ready_as_any_running_member_so_the_budget_lets_one_go() -> None:
    db = container(rendered(members(3), Plan(3, True)))
    assert db["readinessProbe"]["httpGet"]["path"] == "/readiness"


def test_asynchronous_members_are_ready_as_any_running_member() -> None:
    db = container(rendered(members(2, synchronous=False), Plan(2, False)))
    assert db["readinessProbe"]["httpGet"]["path"] == "/readiness"
