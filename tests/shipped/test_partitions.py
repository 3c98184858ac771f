"""Partitions, as rendered: each ShardDB is served by one CompositeController, run by one Metacontroller.

Every shipped ``components/partitions-<N>`` is rendered on the dev overlay (and
on production, whose hooks speak HTTPS with a token) with ``kubectl kustomize``,
and read with ``testbed.real.partitions``, the same reader the end-to-end tier and the
fleet benchmark use. The policy's behaviour on a real API server is in
``tests/cluster/test_partitions.py``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from hooks import kinds
from hooks.replication import cleanup
from hooks.replication import objects as patroni_objects
from hooks.replication import rollout as member_rollout
from testbed.real import partitions
from testbed.real.partitions import LABEL, Setup

Obj = dict[str, Any]

OVERLAYS = partitions.DEPLOY / "overlays"
COUNTS = partitions.counts()
PARTITIONS_PAGE = (partitions.ROOT / "docs" / "installing" / "partitions.md").read_text()
WRITE = {"create", "update", "patch", "delete"}
READ = {"get", "list", "watch"}

by_count = pytest.mark.parametrize("count", COUNTS, ids=[f"{n}-partitions" for n in COUNTS])


@cache
def setup(count: int, overlay: str = "dev") -> Setup:
    return partitions.render(OVERLAYS / overlay, count)


def labels(partition: str | None) -> dict[str, str]:
    return {} if partition is None else {LABEL: partition}


def names(count: int) -> list[str]:
    return [f"p{k}" for k in range(count)]


def role() -> Obj:
    (found,) = [o for o in setup(2).of("ClusterRole") if o["metadata"]["name"] == partitions.ROLE]
    return found


def group_of(kind: kinds.Kind) -> str:
    return kind.api_version.rpartition("/")[0]


def allowed(group: str, resource: str) -> set[str]:
    return {
        verb
        for rule in role()["rules"]
        if group in rule["apiGroups"] and resource in rule["resources"]
        for verb in rule["verbs"]
    }


# --- what ships --------------------------------------------------------------------


def test_components_ship_for_one_two_four_and_eight_partitions() -> None:
    assert set(COUNTS) >= {1, 2, 4, 8}


@by_count
def test_a_component_lists_its_partitions_in_order(count: int) -> None:
    text = (partitions.component(count) / "kustomization.yaml").read_text()
    assert yaml.safe_load(text)["resources"] == [f"../../partitions/{name}" for name in names(count)]


@by_count
def test_each_partition_has_one_compositecontroller_and_one_metacontroller(count: int) -> None:
    found = setup(count).partitions
    assert [p.name for p in found] == names(count)
    assert [p.controller["metadata"]["name"] for p in found] == ["sharddb"] + [f"sharddb-{n}" for n in names(count)[1:]]
    assert [p.instance["metadata"]["name"] for p in found] == [f"metacontroller-{n}" for n in names(count)]


@by_count
def test_p0_keeps_the_name_existing_sharddbs_hold_the_finalizer_of(count: int) -> None:
    assert setup(count).partitions[0].finalizer == "metacontroller.io/compositecontroller-sharddb"


# --- which CompositeController serves a ShardDB ----------------------------------------


@by_count
def test_an_unlabelled_sharddb_is_served_by_p0(count: int) -> None:
    assert setup(count).serving({}).name == "p0"


@by_count
def test_each_partition_label_is_served_by_its_partition_alone(count: int) -> None:
    for name in names(count):
        assert setup(count).serving(labels(name)).name == name


@by_count
def test_other_labels_do_not_change_the_partition(count: int) -> None:
    last = names(count)[-1]
    assert setup(count).serving({LABEL: last, "team": "payments"}).name == last


@by_count
def test_a_label_no_partition_runs_would_land_in_p0_so_the_policy_refuses_it(count: int) -> None:
    stray = f"p{count}"
    assert setup(count).serving(labels(stray)).name == "p0"
    assert stray not in setup(count).admitted()


def test_growing_the_partition_count_moves_no_sharddb_the_policy_admitted() -> None:
    for smaller in COUNTS:
        for larger in (n for n in COUNTS if n > smaller):
            for label in [None, *setup(smaller).admitted()]:
                before = setup(smaller).serving(labels(label)).name
                assert setup(larger).serving(labels(label)).name == before, (smaller, larger, label)


# --- which Metacontroller runs a CompositeController ---------------------------------------


@by_count
def test_each_metacontroller_runs_its_own_partitions_controller_and_no_other(count: int) -> None:
    controllers = setup(count).of("CompositeController")
    for partition in setup(count).partitions:
        selector = partitions.parse(partition.target_selector)
        chosen = [c["metadata"]["name"] for c in controllers if partitions.selects(selector, c["metadata"]["labels"])]
        assert chosen == [partition.controller["metadata"]["name"]]


@by_count
def test_a_shared_metacontroller_restricted_as_documented_runs_none_of_them(count: int) -> None:
    selector = partitions.parse(partitions.SHARED_SELECTOR)
    assert not any(
        partitions.selects(selector, c["metadata"]["labels"]) for c in setup(count).of("CompositeController")
    )
    assert f"--target-label-selector='{partitions.SHARED_SELECTOR}'" in PARTITIONS_PAGE


@by_count
def test_each_metacontroller_is_one_pod(count: int) -> None:
    for partition in setup(count).partitions:
        assert partition.instance["spec"]["replicas"] == 1


@by_count
def test_each_metacontroller_writes_as_an_account_of_its_own(count: int) -> None:
    accounts = [p.service_account for p in setup(count).partitions]
    assert len(set(accounts)) == count
    declared = {
        f"system:serviceaccount:{o['metadata']['namespace']}:{o['metadata']['name']}"
        for o in setup(count).of("ServiceAccount")
    }
    assert set(accounts) <= declared


@by_count
def test_each_account_is_bound_to_the_shared_role(count: int) -> None:
    bound = {
        f"system:serviceaccount:{s['namespace']}:{s['name']}"
        for binding in setup(count).of("ClusterRoleBinding")
        if binding["roleRef"]
        == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": partitions.ROLE}
        for s in binding["subjects"]
    }
    assert bound == {p.service_account for p in setup(count).partitions}


@by_count
def test_metacontroller_pods_meet_the_restricted_pod_security_standard(count: int) -> None:
    for partition in setup(count).partitions:
        pod = partition.instance["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]
            assert context["runAsNonRoot"] is True
            assert context["readOnlyRootFilesystem"] is True
            assert not any("hostPort" in port for port in container.get("ports", []))


@by_count
def test_the_hooks_admit_calls_from_every_metacontroller(count: int) -> None:
    (policy,) = setup(count).of("NetworkPolicy")
    sources = [s["podSelector"]["matchLabels"] for s in policy["spec"]["ingress"][0]["from"] if "podSelector" in s]
    for partition in setup(count).partitions:
        pod = partition.instance["spec"]["template"]["metadata"]["labels"]
        assert partition.instance["metadata"]["namespace"] == policy["metadata"]["namespace"]
        assert any(source.items() <= pod.items() for source in sources), partition.name


# --- every partition is the same controller -----------------------------------------------


def without_parents_selector(controller: Obj) -> Obj:
    spec = dict(controller["spec"])
    spec["parentResource"] = {k: v for k, v in spec["parentResource"].items() if k != "labelSelector"}
    return spec


@pytest.mark.parametrize("overlay", ["dev", "production"])
@by_count
def test_every_partition_runs_p0s_hooks_children_and_resync(overlay: str, count: int) -> None:
    first, *others = setup(count, overlay).partitions
    for partition in others:
        assert without_parents_selector(partition.controller) == without_parents_selector(first.controller)


def test_production_partitions_call_the_hooks_over_https_with_the_token() -> None:
    for partition in setup(2, "production").partitions:
        for hook in partition.controller["spec"]["hooks"].values():
            assert hook["webhook"]["url"].startswith("https://")
            assert hook["webhook"]["authorization"]["secretRef"]["name"] == "sharddb-hooks-token"


# --- the policy and the role ----------------------------------------------------------------


@by_count
def test_the_policy_admits_exactly_the_partitions_that_run(count: int) -> None:
    assert setup(count).admitted() == names(count)


def test_a_single_metacontroller_install_admits_only_p0() -> None:
    assert partitions.admitted(partitions.kustomize(OVERLAYS / "dev")) == ["p0"]


@by_count
def test_the_policy_is_bound_to_deny(count: int) -> None:
    (binding,) = setup(count).of("ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {"policyName": partitions.POLICY, "validationActions": ["Deny"]}


def test_the_role_lets_metacontroller_apply_every_child_kind() -> None:
    for kind in kinds.CHILDREN:
        assert allowed(group_of(kind), kind.plural) >= READ | WRITE, kind.kind


def test_the_role_holds_every_permission_patronis_role_grants() -> None:
    """The API server refuses a Role to a client that does not hold what it grants (escalation prevention)."""
    for group, resource, verbs in patroni_objects.RBAC_RULES:
        assert allowed(group, resource) >= set(verbs), resource


def test_the_role_holds_every_permission_the_patroni_cleanup_role_grants() -> None:
    """The cleanup Job's Role is applied by Metacontroller on deletion: the same escalation prevention holds."""
    for resource, verbs in cleanup.RBAC_RULES:
        assert allowed("", resource) >= set(verbs), resource


def test_the_role_holds_every_permission_the_rollout_role_grants() -> None:
    """The rollout Job's Role is applied by Metacontroller during a rollout: the same escalation prevention holds."""
    for group, resource, verbs in member_rollout.RBAC_RULES:
        assert allowed(group, resource) >= set(verbs), resource


def test_the_role_lets_metacontroller_watch_every_related_kind() -> None:
    for kind in kinds.RELATED:
        assert allowed(group_of(kind), kind.plural) >= READ, kind.kind


def test_the_role_lets_metacontroller_watch_namespaces_and_its_own_kinds() -> None:
    # Metacontroller v4.17.2 watches namespaces even with no namespace selector in use.
    assert allowed("", "namespaces") >= READ
    assert allowed("metacontroller.k8s.io", "compositecontrollers") >= READ
    assert allowed("apiextensions.k8s.io", "customresourcedefinitions") >= READ


def test_the_role_lets_metacontroller_keep_the_finalizer_and_the_status() -> None:
    assert allowed("mygroup.example.com", "sharddbs") >= READ | {"update"}
    assert allowed("mygroup.example.com", "sharddbs/status") >= {"update"}
    assert "delete" not in allowed("mygroup.example.com", "sharddbs")


def test_the_role_grants_nothing_by_wildcard() -> None:
    for rule in role()["rules"]:
        assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"], rule


# --- the reader itself ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a!=b", {"a": "c"}),
        ("!a", {}),
        ("a", {"a": ""}),
        ("a in (b, c),d notin (e)", {"a": "c", "d": "f"}),
    ],
)
def test_command_line_selectors_are_read_as_kubernetes_reads_them(text: str, expected: dict[str, str]) -> None:
    assert partitions.selects(partitions.parse(text), expected)


@pytest.mark.parametrize(("text", "labels_"), [("a=b", {"a": "c"}), ("!a", {"a": "b"}), ("a notin (b)", {"a": "b"})])
def test_command_line_selectors_refuse_what_they_should(text: str, labels_: dict[str, str]) -> None:
    assert not partitions.selects(partitions.parse(text), labels_)


def test_a_selector_that_cannot_be_read_is_an_error_naming_it() -> None:
    with pytest.raises(partitions.SelectorError, match="a in b"):
        partitions.parse("a in b")


def test_reading_an_install_without_partitions_says_so() -> None:
    with pytest.raises(AssertionError, match="partitions with a controller"):
        partitions.read(partitions.kustomize(OVERLAYS / "dev"))


def test_the_shipped_partitioned_overlay_is_read_like_a_rendered_component() -> None:
    shipped = partitions.read(partitions.kustomize(OVERLAYS / "partitioned"))
    assert [p.name for p in shipped.partitions] == names(4)
    assert Path(partitions.component(4)).is_dir()
