"""Deleting a ShardDB with members removes Patroni's ConfigMaps last, by a Job the finalize hook runs once every
member is gone, so a ShardDB re-created under the same name bootstraps anew; hibernation keeps them.

The Job, its Role and binding are children only during that step; Patroni's ConfigMaps never are.
"""

from __future__ import annotations

import ast
import sys
from typing import Any

from hooks.replication import cleanup
from hooks.spec import ShardDBSpec

from ...support.replication import answer, applied, child, kinds_named, parent, request, stages

Obj = dict[str, Any]
STAGES = stages()
CLEANUP = "demo-patroni-cleanup"


def config_map(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop"}}


PATRONI_STATE = [config_map("demo-db-0-config"), config_map("demo-db-1-config"), config_map("demo-db-0-sync")]


def members_gone(related: list[Obj], job: Obj | None = None) -> Obj:
    """Finalize once every member StatefulSet is at zero and no member pod is left, with ``related`` observed."""
    children = applied(STAGES["drained"]["children"])
    for sts in children["StatefulSet.apps/v1"].values():
        sts["status"]["replicas"] = 0
    if job is not None:
        children.setdefault("Job.batch/v1", {})[CLEANUP] = job
    body = request(parent(), children, related, finalizing=True)
    body["related"].setdefault("ConfigMap.v1", {})
    return answer(body, finalize=True)


def observed_job(condition: str | None) -> Obj:
    """The cleanup Job as stored, with a ``condition`` True (Complete, Failed), else still active."""
    job = applied([cleanup.job("demo", ShardDBSpec.model_validate(parent()["spec"]))])
    stored: Obj = job["Job.batch/v1"][CLEANUP]
    stored["status"] = {"conditions": [{"type": condition, "status": "True"}]} if condition else {"active": 1}
    return stored


def test_while_members_drain_no_cleanup_is_asked() -> None:
    assert ("Job", CLEANUP) not in kinds_named(STAGES["drained"]["children"])


def test_once_every_member_is_gone_the_cleanup_job_and_its_role_are_asked() -> None:
    body = members_gone(PATRONI_STATE)
    assert {("Job", CLEANUP), ("Role", CLEANUP), ("RoleBinding", CLEANUP)} <= kinds_named(body["children"])
    assert body["finalized"] is False
    assert (
        "demo-patroni-cleanup" in next(c for c in body["status"]["conditions"] if c["type"] == "Progressing")["message"]
    )


def test_finalize_is_done_once_the_cleanup_job_succeeded() -> None:
    assert members_gone(PATRONI_STATE, observed_job("Complete"))["finalized"] is True


def test_finalize_waits_while_the_cleanup_job_runs() -> None:
    assert members_gone([], observed_job(None))["finalized"] is False


def test_a_failed_cleanup_job_holds_finalize_and_says_how_to_retry() -> None:
    body = members_gone(PATRONI_STATE, observed_job("Failed"))
    assert body["finalized"] is False
    progressing = next(c for c in body["status"]["conditions"] if c["type"] == "Progressing")
    assert "delete the Job" in progressing["message"]


def test_no_patroni_state_left_needs_no_cleanup() -> None:
    """Never bootstrapped, or a deleted namespace already removed them (and refuses the Job)."""
    body = members_gone([])
    assert body["finalized"] is True
    assert ("Job", CLEANUP) not in kinds_named(body["children"])


def test_unwatched_patroni_state_needs_the_jobs_success() -> None:
    children = applied(STAGES["drained"]["children"])
    for sts in children["StatefulSet.apps/v1"].values():
        sts["status"]["replicas"] = 0
    body = answer(request(parent(), children, [], finalizing=True), finalize=True)
    assert body["finalized"] is False
    assert ("Job", CLEANUP) in kinds_named(body["children"])


def test_hibernation_never_removes_patronis_state() -> None:
    asleep = parent({"hibernated": True})
    answered = answer(request(asleep, applied(STAGES["running"]["children"]), PATRONI_STATE))
    for _ in range(4):
        answered = answer(request(asleep, applied(answered["children"]), PATRONI_STATE))
    assert answered["status"]["phase"] == "Hibernated"
    assert not any(each["metadata"]["name"] == CLEANUP for each in answered["children"])


def test_a_single_copys_finalize_asks_no_cleanup() -> None:
    single = answer(request(parent(members_count=1)))
    children = applied(single["children"])
    children["StatefulSet.apps/v1"]["demo-db"]["spec"]["replicas"] = 0
    children["StatefulSet.apps/v1"]["demo-db"]["status"]["replicas"] = 0
    children.pop("PodDisruptionBudget.policy/v1", None)
    body = answer(request(parent(members_count=1), children, [], finalizing=True), finalize=True)
    assert body["finalized"] is True
    assert not any(each["metadata"]["name"] == CLEANUP for each in body["children"])


def test_the_job_deletes_by_patronis_labels_and_the_scope_label() -> None:
    job = child(members_gone(PATRONI_STATE)["children"], "Job", CLEANUP)
    (env,) = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env["value"] == (
        "app.kubernetes.io/name=sharddb,app.kubernetes.io/instance=demo,app.kubernetes.io/component=db,"
        "mygroup.example.com/shard"
    )


def test_the_job_runs_the_db_image_as_patronis_account() -> None:
    pod = child(members_gone(PATRONI_STATE)["children"], "Job", CLEANUP)["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == parent()["spec"]["dbImage"]
    assert pod["serviceAccountName"] == "demo-patroni"


def test_the_cleanup_role_grants_only_list_and_deletecollection_of_configmaps() -> None:
    role = child(members_gone(PATRONI_STATE)["children"], "Role", CLEANUP)
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["deletecollection", "list"]}]


def test_the_script_uses_the_standard_library_alone() -> None:
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(cleanup.SCRIPT))
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert imported
    assert imported <= set(sys.stdlib_module_names)


def test_no_configmap_is_ever_a_child() -> None:
    body = members_gone(PATRONI_STATE)
    assert not any(each["kind"] == "ConfigMap" for each in body["children"])
