"""``hooks/replication/objects.py``: the objects a ShardDB with members needs, as apply-style desired state.

RBAC for Patroni, each shard's StatefulSet, Services and budget, none of Patroni's own objects, and
every object as the API server keeps it (its schema, Metacontroller's update a fixed point); rendered
by ``children`` and called directly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hooks import names, pod_templates
from hooks.replication import config as patroni_config
from hooks.replication import objects as patroni_objects
from hooks.replication import template as member_pods
from hooks.replication.shape import SINGLE_COPY, Observed, Plan
from testbed.models.metacontroller import difference, for_create, needs_update

from ...support.backups import STORE
from ...support.kube_schema import problems
from ...support.replication import OWNER, TWO, claims, container, members, rendered, spec, statefulset
from ...support.replication import child as one

Obj = dict[str, Any]


# --- one member ---------------------------------------------------------------------------------------------


def test_no_patroni_object_is_rendered_for_one_member() -> None:
    assert rendered(spec(), SINGLE_COPY) == []


# --- Patroni's own objects ----------------------------------------------------------------------------------


def test_no_child_is_a_configmap_endpoints_or_bears_a_patroni_name() -> None:
    objects = rendered(members(3), Plan(3, True), shards=4)
    owned = set().union(*(names.patroni_owned(f"demo-db-{shard}") for shard in range(4)))
    assert {obj["kind"] for obj in objects} <= patroni_objects.RENDERED_KINDS
    assert not {"ConfigMap", "Endpoints"} & patroni_objects.RENDERED_KINDS
    assert not owned & {obj["metadata"]["name"] for obj in objects}


@pytest.mark.parametrize(("kind", "name"), [("ConfigMap", "demo-db-0-x"), ("Service", "demo-db-1-leader")])
def test_a_patroni_object_among_the_children_is_a_bug(kind: str, name: str) -> None:
    with pytest.raises(patroni_objects.PatroniObjectError):
        patroni_objects.never_patronis("demo", 2, [{"kind": kind, "metadata": {"name": name}}])


# --- RBAC ---------------------------------------------------------------------------------------------------


def test_the_role_grants_only_what_patronis_kubernetes_dcs_and_the_stop_order_call() -> None:
    rules = one(rendered(), "Role", "demo-patroni")["rules"]
    granted = {(rule["apiGroups"][0], rule["resources"][0], verb) for rule in rules for verb in rule["verbs"]}
    assert (
        granted
        == {(group, resource, verb) for group, resource, verbs in patroni_objects.RBAC_RULES for verb in verbs}
        == {("", "configmaps", verb) for verb in ("create", "get", "list", "patch", "watch")}
        | {("", "pods", verb) for verb in ("list", "patch", "watch")}
        | {("apps", "statefulsets", "get")}
    )


def test_the_role_grants_what_kubernetes_checks_by_name_only_on_the_sharddbs_own_names() -> None:
    rules = one(rendered(), "Role", "demo-patroni")["rules"]
    named = {rule["resources"][0]: rule for rule in rules if "resourceNames" in rule}
    assert named["pods"]["verbs"] == ["patch"]
    assert named["pods"]["resourceNames"] == ["demo-db-0-0", "demo-db-0-1", "demo-db-1-0", "demo-db-1-1"]
    assert named["configmaps"]["verbs"] == ["get", "patch"]
    assert named["configmaps"]["resourceNames"] == [
        f"demo-db-{shard}-{suffix}" for shard in (0, 1) for suffix in ("leader", "config", "sync", "failover")
    ]
    assert named["statefulsets"] == {
        "apiGroups": ["apps"],
        "resources": ["statefulsets"],
        "resourceNames": ["demo-db-0", "demo-db-1"],
        "verbs": ["get"],
    }


def test_the_role_grants_by_kind_only_the_verbs_kubernetes_never_checks_by_name() -> None:
    rules = one(rendered(), "Role", "demo-patroni")["rules"]
    nameless = {verb for rule in rules if "resourceNames" not in rule for verb in rule["verbs"]}
    assert nameless == {"create", "list", "watch"}


def test_the_role_names_a_third_member_and_a_new_shard_as_they_are_added() -> None:
    rules = one(rendered(members(3), Plan(3, True), shards=3), "Role", "demo-patroni")["rules"]
    pods = next(rule for rule in rules if rule.get("resourceNames") and rule["resources"] == ["pods"])
    assert pods["resourceNames"] == [f"demo-db-{shard}-{member}" for shard in range(3) for member in range(3)]


# --- who reaches a member -----------------------------------------------------------------------------------


def test_each_shard_gets_a_network_policy_selecting_its_members() -> None:
    objects = rendered()
    for shard in (0, 1):
        policy = one(objects, "NetworkPolicy", f"demo-db-{shard}")
        assert (
            policy["spec"]["podSelector"]["matchLabels"]
            == statefulset(objects, shard)["spec"]["selector"]["matchLabels"]
        )
        assert policy["spec"]["policyTypes"] == ["Ingress"]


def test_patronis_rest_api_is_reachable_only_from_the_shards_own_members() -> None:
    objects = rendered()
    policy = one(objects, "NetworkPolicy", "demo-db-0")
    api = [rule for rule in policy["spec"]["ingress"] if {"protocol": "TCP", "port": 8008} in rule["ports"]]
    assert api == [
        {
            "from": [{"podSelector": {"matchLabels": statefulset(objects, 0)["spec"]["selector"]["matchLabels"]}}],
            "ports": [{"protocol": "TCP", "port": 8008}],
        }
    ]


def test_postgresqls_port_stays_open_to_every_client_when_none_are_declared() -> None:
    policy = one(rendered(), "NetworkPolicy", "demo-db-0")
    assert {"ports": [{"protocol": "TCP", "port": 5432}]} in policy["spec"]["ingress"]


CLIENTS: list[dict[str, Any]] = [
    {"podSelector": {"matchLabels": {"app": "orders-api"}}},
    {"namespaceSelector": {"matchLabels": {"team": "billing"}}, "podSelector": {}},
    {"ipBlock": {"cidr": "10.20.0.0/16", "except": ["10.20.9.0/24"]}},
]


def database_rule(policy: dict[str, Any]) -> dict[str, Any]:
    rules = [rule for rule in policy["spec"]["ingress"] if {"protocol": "TCP", "port": 5432} in rule["ports"]]
    assert len(rules) == 1, rules
    rule: dict[str, Any] = rules[0]
    return rule


def test_declared_clients_and_the_sharddbs_own_pods_alone_reach_postgresqls_port() -> None:
    objects = rendered(spec(replication={"members": 2, "clients": CLIENTS}))
    rule = database_rule(one(objects, "NetworkPolicy", "demo-db-1"))
    ours = [
        statefulset(objects, 1)["spec"]["selector"]["matchLabels"],
        names.selector_labels("demo", names.SEED),
        names.selector_labels("demo", names.CACHE),
    ]
    assert rule == {"from": [{"podSelector": {"matchLabels": each}} for each in ours] + CLIENTS, "ports": rule["ports"]}


def test_a_sharddb_that_backs_up_also_lets_its_base_backups_job_reach_postgresqls_port() -> None:
    backed_up = spec(replication={"members": 2, "clients": CLIENTS}, backup={"objectStore": STORE})
    rule = database_rule(one(rendered(backed_up), "NetworkPolicy", "demo-db-0"))
    assert {"podSelector": {"matchLabels": names.selector_labels("demo", names.BACKUP)}} in rule["from"]
    assert rule["from"][4:] == CLIENTS


def test_a_sharddb_that_does_not_back_up_lets_no_backup_pod_in() -> None:
    rule = database_rule(
        one(rendered(spec(replication={"members": 2, "clients": CLIENTS})), "NetworkPolicy", "demo-db-0")
    )
    assert {"podSelector": {"matchLabels": names.selector_labels("demo", names.BACKUP)}} not in rule["from"]


def test_no_clients_declared_is_a_policy_that_lets_only_the_sharddbs_own_pods_in() -> None:
    rule = database_rule(one(rendered(spec(replication={"members": 2, "clients": []})), "NetworkPolicy", "demo-db-0"))
    assert len(rule["from"]) == 3


def test_the_declared_clients_are_copied_so_no_answer_shares_the_spec() -> None:
    asked = spec(replication={"members": 2, "clients": CLIENTS})
    rule = database_rule(one(rendered(asked), "NetworkPolicy", "demo-db-0"))
    rule["from"][-1]["ipBlock"]["except"].append("10.20.8.0/24")
    assert asked.replication.clients == CLIENTS


def test_no_other_port_of_a_member_is_reachable() -> None:
    policy = one(rendered(), "NetworkPolicy", "demo-db-0")
    ports = {port["port"] for rule in policy["spec"]["ingress"] for port in rule["ports"]}
    assert ports == {5432, 8008}


def test_the_member_pods_run_as_the_account_the_role_is_bound_to() -> None:
    objects = rendered()
    binding = one(objects, "RoleBinding", "demo-patroni")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "demo-patroni", "namespace": "shop"}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "demo-patroni"}
    assert one(objects, "ServiceAccount", "demo-patroni")
    assert statefulset(objects)["spec"]["template"]["spec"]["serviceAccountName"] == "demo-patroni"


def test_the_users_service_account_is_bound_instead_of_ours() -> None:
    objects = rendered(spec(serviceAccountName="payments", replication={"members": 2}))
    assert not [obj for obj in objects if obj["kind"] == "ServiceAccount"]
    assert one(objects, "RoleBinding", "demo-patroni")["subjects"][0]["name"] == "payments"
    assert statefulset(objects)["spec"]["template"]["spec"]["serviceAccountName"] == "payments"


# --- per shard ----------------------------------------------------------------------------------------------


def test_each_shard_is_one_statefulset_of_its_members() -> None:
    objects = rendered(members(3), Plan(3, True), shards=2)
    for shard in (0, 1):
        body = statefulset(objects, shard)["spec"]
        assert (body["replicas"], body["serviceName"]) == (3, f"demo-db-{shard}")
        assert body["selector"]["matchLabels"] == member_pods.member_selector("demo", shard)


def test_the_statefulset_records_the_shape_it_was_made_with() -> None:
    annotations = statefulset(rendered())["metadata"]["annotations"]
    assert Observed.from_annotations(False, [annotations]) == Observed(members=2, synchronous=True)


def test_the_teardown_may_scale_a_shard_to_zero() -> None:
    template = member_pods.member_template("demo", 0, members(2), TWO, pod_templates.db_template("demo", members(2)))
    assert patroni_objects.shard_statefulset("demo", 0, TWO, template, claims(), replicas=0)["spec"]["replicas"] == 0


def test_the_primary_service_selects_the_label_patroni_sets_on_the_leader() -> None:
    selector = one(rendered(), "Service", "demo-db-0-primary")["spec"]["selector"]
    assert selector == {**member_pods.member_selector("demo", 0), "mygroup.example.com/role": "primary"}


def test_the_standby_service_selects_the_label_patroni_sets_on_a_running_standby() -> None:
    selector = one(rendered(), "Service", "demo-db-0-standby")["spec"]["selector"]
    assert selector == {**member_pods.member_selector("demo", 0), "mygroup.example.com/role": "replica"}


def test_a_shards_members_share_its_headless_service() -> None:
    service = one(rendered(), "Service", "demo-db-0")["spec"]
    assert service["clusterIP"] == "None"
    assert service["selector"] == member_pods.member_selector("demo", 0)


def test_a_budget_lets_one_member_of_a_shard_go_at_a_time() -> None:
    budget = one(rendered(), "PodDisruptionBudget", "demo-db-1")["spec"]
    assert budget == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": member_pods.member_selector("demo", 1)},
    }


def test_the_same_spec_renders_the_same_bytes() -> None:
    assert json.dumps(rendered()) == json.dumps(rendered())


# --- as the API server keeps them ---------------------------------------------------------------------------


def test_every_object_passes_the_kubernetes_schema_strictly() -> None:
    for obj in rendered(members(3), Plan(3, True)):
        assert problems(obj) == [], (obj["kind"], obj["metadata"]["name"])


def as_stored(desired: Obj) -> Obj:
    """What the API server keeps after Metacontroller creates ``desired``: its defaults added, in every kind."""
    stored = for_create(desired, OWNER)
    spec_ = stored.get("spec", {})
    if stored["kind"] == "Service":
        cluster_ip = spec_.get("clusterIP", "10.96.0.10")
        spec_.update(
            clusterIP=cluster_ip,
            clusterIPs=[cluster_ip],
            type=spec_.get("type", "ClusterIP"),
            sessionAffinity="None",
            ipFamilies=["IPv4"],
            ipFamilyPolicy="SingleStack",
            internalTrafficPolicy="Cluster",
        )
    if stored["kind"] == "StatefulSet":
        spec_.update(revisionHistoryLimit=10, minReadySeconds=0)
        spec_["updateStrategy"]["rollingUpdate"] = {"partition": 0}
        pod = spec_["template"]["spec"]
        pod.update(restartPolicy="Always", dnsPolicy="ClusterFirst", schedulerName="default-scheduler")
        for each in pod["containers"]:
            each.update(
                imagePullPolicy="IfNotPresent",
                terminationMessagePath="/dev/termination-log",
                terminationMessagePolicy="File",
            )
            for probe in ("readinessProbe", "livenessProbe"):
                each[probe].update(timeoutSeconds=1, successThreshold=1)
    return stored


def test_every_object_is_a_fixed_point_of_metacontrollers_update_once_stored() -> None:
    for desired in rendered(members(3), Plan(3, True)):
        stored = as_stored(desired)
        assert not needs_update(stored, desired), difference(stored, desired)


def test_every_list_the_merge_replaces_whole_is_rendered_as_stored() -> None:
    """Lists whose items have no merge key (rules, subjects, affinity terms) get no server default inside."""
    objects = rendered()
    role_obj, binding = one(objects, "Role", "demo-patroni"), one(objects, "RoleBinding", "demo-patroni")
    for rule in role_obj["rules"]:
        assert {"apiGroups", "resources", "verbs"} <= set(rule) <= {"apiGroups", "resources", "resourceNames", "verbs"}
    assert set(binding["subjects"][0]) == {"kind", "name", "namespace"}
    pod = statefulset(objects)["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == patroni_config.CONFIG_VOLUME]
    assert volume["downwardAPI"]["defaultMode"] == 0o644
    assert volume["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"
    for var in container(objects)["env"]:
        if "valueFrom" in var and "fieldRef" in var["valueFrom"]:
            assert var["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
