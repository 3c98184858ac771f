"""A rollout of shards with members moves each shard's primary once: each StatefulSet is OnDelete, and a Job
evicts the outdated standbys first and the primary last, while any member runs an older template.

The Job's script runs in the installed tier; here, what the hooks ask for and when.
"""

from __future__ import annotations

from typing import Any

from hooks.replication import rollout as member_rollout
from hooks.replication.shape import Plan
from hooks.spec import ShardDBSpec
from hooks.workloads import Rollout

from ...support.replication import answer, applied, child, healthy, parent, primary_slice, request, stages, sync_record

Obj = dict[str, Any]
STAGES = stages()
ROLE = "demo-patroni-rollout"
PLAN = Plan(members=2, synchronous=True)
SPEC = ShardDBSpec.model_validate(parent()["spec"])


def marks() -> list[Obj]:
    return [*healthy(), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]


def newer(image: str = "registry.example.com/postgres-patroni:16-4.1.5", generation: int = 2) -> Obj:
    return parent({"dbImage": image}) | {"metadata": {**parent()["metadata"], "generation": generation}}


def jobs(body: Obj) -> list[Obj]:
    return [each for each in body["children"] if each["kind"] == "Job" and "-rollout-" in each["metadata"]["name"]]


def rolling_children(updated: int = 1) -> dict[str, dict[str, Obj]]:
    """The children as the answer to ``newer()`` left them, their controllers having read it: ``updated`` of 2
    members run the new template."""
    answered = answer(request(newer(), applied(STAGES["running"]["children"]), marks()))
    children = applied(answered["children"])
    for sts in children["StatefulSet.apps/v1"].values():
        sts["metadata"]["generation"] = 2
        sts["status"].update(observedGeneration=2, updatedReplicas=updated, updateRevision="r2")
    return children


def env(job: Obj, name: str) -> str:
    value: str = next(e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == name)
    return value


def test_each_shards_statefulset_changes_a_member_only_when_it_is_gone() -> None:
    body = answer(request(parent(), applied(STAGES["running"]["children"]), marks()))
    for shard in (0, 1):
        assert child(body["children"], "StatefulSet", f"demo-db-{shard}")["spec"]["updateStrategy"] == {
            "type": "OnDelete"
        }


def test_a_settled_sharddb_asks_for_no_rollout_job() -> None:
    body = answer(request(parent(), applied(STAGES["running"]["children"]), marks()))
    assert jobs(body) == []
    assert not any(each["metadata"]["name"] == ROLE for each in body["children"])


def test_a_new_db_image_asks_for_the_rollout_job_and_its_role_with_the_new_templates() -> None:
    body = answer(request(newer(), applied(STAGES["running"]["children"]), marks()))
    (job,) = jobs(body)
    assert job["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":16-4.1.5")
    assert env(job, "SHARDDB_SHARD_SETS") == "demo-db-0 demo-db-1"
    assert {("Role", ROLE), ("RoleBinding", ROLE)} <= {(c["kind"], c["metadata"]["name"]) for c in body["children"]}


def test_the_rollout_job_stays_while_a_member_runs_an_older_template() -> None:
    first = answer(request(newer(), applied(STAGES["running"]["children"]), marks()))
    later = answer(request(newer(), rolling_children(updated=1), marks()))
    assert [j["metadata"]["name"] for j in jobs(later)] == [j["metadata"]["name"] for j in jobs(first)]


def test_the_rollout_job_goes_once_every_member_runs_the_new_template() -> None:
    body = answer(request(newer(), rolling_children(updated=2), marks()))
    assert jobs(body) == []


def test_another_change_mid_rollout_is_another_job() -> None:
    first = answer(request(newer(), applied(STAGES["running"]["children"]), marks()))
    again = newer("registry.example.com/postgres-patroni:17-4.1.5", generation=3)
    second = answer(request(again, rolling_children(updated=1), marks()))
    assert [j["metadata"]["name"] for j in jobs(second)] != [j["metadata"]["name"] for j in jobs(first)]


def test_a_rollout_in_progress_is_progressing_not_degraded() -> None:
    body = answer(request(newer(), rolling_children(updated=1), marks()))
    conditions = {c["type"]: c for c in body["status"]["conditions"]}
    assert conditions["Progressing"]["reason"] == "RollingUpdate"
    assert conditions["Degraded"]["status"] == "False"


def test_a_rollout_in_progress_says_the_standbys_go_first() -> None:
    body = answer(request(newer(), rolling_children(updated=1), marks()))
    progressing = next(c for c in body["status"]["conditions"] if c["type"] == "Progressing")
    assert "standbys first, then its primary" in progressing["message"]


def test_the_role_names_only_this_sharddbs_statefulsets_and_member_pods() -> None:
    role = member_rollout.role("demo", 2, PLAN)
    names = {rule["resources"][0]: rule["resourceNames"] for rule in role["rules"]}
    assert names["statefulsets"] == ["demo-db-0", "demo-db-1"]
    assert names["pods"] == names["pods/eviction"] == ["demo-db-0-0", "demo-db-0-1", "demo-db-1-0", "demo-db-1-1"]


def test_the_role_may_evict_and_read_but_never_delete_or_list() -> None:
    role = member_rollout.role("demo", 2, PLAN)
    verbs = {verb for rule in role["rules"] for verb in rule["verbs"]}
    assert verbs == {"get", "create"}


def test_the_job_name_fits_where_the_cleanup_job_name_fits() -> None:
    job = member_rollout.job("demo", SPEC, 2, PLAN, [{}])
    assert len(job["metadata"]["name"]) == len("demo-patroni-cleanup")


def test_the_job_has_no_deadline_so_a_waiting_rollout_never_fails_half_done() -> None:
    job = member_rollout.job("demo", SPEC, 2, PLAN, [{}])
    assert "activeDeadlineSeconds" not in job["spec"]


def test_the_script_compiles() -> None:
    compile(member_rollout.SCRIPT, "rollout", "exec")


# --- OnDelete's revisions: the StatefulSet controller never makes the update revision current ---------


def test_an_on_delete_set_whose_pods_all_run_the_update_revision_is_settled() -> None:
    rollout = Rollout(2, 2, updated=2, current_revision="r1", update_revision="r2", on_delete=True, status_replicas=2)
    assert rollout.settled(2)


def test_an_on_delete_set_with_an_older_pod_is_rolling() -> None:
    rollout = Rollout(2, 2, updated=1, current_revision="r1", update_revision="r2", on_delete=True, status_replicas=2)
    assert rollout.new_revision()


def test_an_on_delete_set_scaling_up_is_not_rolling() -> None:
    """A pod a scale-up creates runs the update revision: the counts stay equal."""
    rollout = Rollout(3, 3, updated=2, current_revision="r1", update_revision="r1", on_delete=True, status_replicas=2)
    assert not rollout.new_revision()


def test_an_on_delete_set_whose_live_pods_all_run_the_update_revision_is_not_rolling_while_one_stops() -> None:
    """A member stopping (a failover, a drain) still counts in status.replicas but not in updatedReplicas."""
    rollout = Rollout(
        2, 2, updated=1, current_revision="r1", update_revision="r2", on_delete=True, status_replicas=2, outdated_pods=0
    )
    assert not rollout.new_revision()


def test_an_on_delete_set_with_a_live_pod_of_an_older_revision_is_rolling() -> None:
    rollout = Rollout(
        2, 2, updated=2, current_revision="r1", update_revision="r2", on_delete=True, status_replicas=2, outdated_pods=1
    )
    assert rollout.new_revision()


def labelled(pod: Obj, revision: str, *, stopping: bool = False) -> Obj:
    """A member pod as its StatefulSet labels it, and (``stopping``) being deleted."""
    meta = {**pod["metadata"], "labels": {**pod["metadata"]["labels"], "controller-revision-hash": revision}}
    if stopping:
        meta["deletionTimestamp"] = "2026-05-05T00:00:00Z"
    return {**pod, "metadata": meta}


def settled_children(updated: int, replicas: int) -> dict[str, dict[str, Obj]]:
    """The running children, each StatefulSet's status as its controller counts while a member stops."""
    children = applied(STAGES["running"]["children"])
    for sts in children["StatefulSet.apps/v1"].values():
        sts["status"].update(replicas=replicas, updatedReplicas=updated, updateRevision="r1", currentRevision="r0")
    return children


def test_a_member_stopping_in_a_failover_asks_for_no_rollout_job() -> None:
    pods = [labelled(pod, "r1", stopping=pod["metadata"]["name"].endswith("-0")) for pod in healthy()]
    related = [*pods, sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    body = answer(request(parent(), settled_children(updated=1, replicas=2), related))
    assert jobs(body) == []


def test_a_live_member_of_an_older_revision_asks_for_the_rollout_job() -> None:
    pods = [labelled(pod, "r0" if pod["metadata"]["name"].endswith("-1") else "r1") for pod in healthy()]
    related = [*pods, sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    body = answer(request(parent(), settled_children(updated=1, replicas=2), related))
    assert len(jobs(body)) == 1


# --- the Job's choice, as its script makes it (the very text it runs) -----------------------------------

CHOSEN: dict[str, Any] = {}
exec(member_rollout.CHOOSE, CHOSEN)


def pod(name: str, revision: str, role: str, ready: bool = True) -> Obj:
    return {
        "metadata": {
            "name": name,
            "labels": {"controller-revision-hash": revision, "mygroup.example.com/role": role},
        },
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def choose(pods: list[Obj], sync_named: str = "demo-db-0-1", synchronous: bool = True) -> tuple[str, str]:
    victim, why = CHOSEN["choose"](pods, "new", "mygroup.example.com/role", "primary", synchronous, sync_named)
    return (victim["metadata"]["name"] if victim else ""), why


def test_the_job_evicts_an_outdated_standby_before_the_primary() -> None:
    pods = [pod("demo-db-0-0", "old", "primary"), pod("demo-db-0-1", "old", "replica")]
    assert choose(pods) == ("demo-db-0-1", "a standby")


def test_the_job_evicts_the_primary_once_its_sync_standby_is_updated() -> None:
    pods = [pod("demo-db-0-0", "old", "primary"), pod("demo-db-0-1", "new", "replica")]
    assert choose(pods) == ("demo-db-0-0", "the primary")


def test_the_job_keeps_the_primary_until_an_updated_member_is_its_sync_standby() -> None:
    pods = [pod("demo-db-0-0", "old", "primary"), pod("demo-db-0-1", "new", "replica")]
    assert choose(pods, sync_named="")[0] == ""


def test_the_job_keeps_the_primary_while_its_updated_standby_is_not_ready() -> None:
    pods = [pod("demo-db-0-0", "old", "primary"), pod("demo-db-0-1", "new", "replica", ready=False)]
    assert choose(pods)[0] == ""


def test_the_job_evicts_nothing_without_a_ready_primary() -> None:
    pods = [pod("demo-db-0-0", "old", "primary", ready=False), pod("demo-db-0-1", "old", "replica")]
    assert choose(pods)[0] == ""


def test_the_job_evicts_nothing_when_two_members_are_labelled_primary() -> None:
    pods = [pod("demo-db-0-0", "old", "primary"), pod("demo-db-0-1", "old", "primary")]
    assert choose(pods)[0] == ""


def test_the_job_replaces_an_outdated_standby_that_never_became_ready() -> None:
    """A template whose pods never started: the next template's Job replaces that standby first."""
    pods = [pod("demo-db-0-0", "old", "primary"), pod("demo-db-0-1", "old", "replica", ready=False)]
    assert choose(pods) == ("demo-db-0-1", "a standby")


def test_with_three_members_the_job_takes_one_standby_down_at_a_time() -> None:
    pods = [
        pod("demo-db-0-0", "old", "primary"),
        pod("demo-db-0-1", "new", "replica", ready=False),
        pod("demo-db-0-2", "old", "replica"),
    ]
    assert choose(pods)[0] == ""


def test_an_asynchronous_shard_needs_no_sync_standby_to_move_its_primary() -> None:
    pods = [pod("demo-db-0-0", "old", "primary"), pod("demo-db-0-1", "new", "replica")]
    assert choose(pods, sync_named="", synchronous=False) == ("demo-db-0-0", "the primary")


def test_a_shard_whose_members_all_run_the_new_template_is_done() -> None:
    pods = [pod("demo-db-0-0", "new", "primary"), pod("demo-db-0-1", "new", "replica")]
    assert choose(pods) == ("", "done")


# --- the templates a Job rolls to: the first update revision it read of each shard ----------------------


def statefulset(revision: str, generation: int = 2, observed: int = 2) -> Obj:
    return {
        "metadata": {"generation": generation},
        "status": {"observedGeneration": observed, "updateRevision": revision},
    }


def test_the_job_rolls_each_shard_to_the_first_update_revision_it_read() -> None:
    pinned: dict[str, str] = {}
    assert CHOSEN["pin"](pinned, "demo-db-0", statefulset("r2")) == ("r2", "")
    assert pinned == {"demo-db-0": "r2"}


def test_the_job_pins_nothing_before_the_statefulsets_controller_read_the_latest_spec() -> None:
    pinned: dict[str, str] = {}
    target, why = CHOSEN["pin"](pinned, "demo-db-0", statefulset("r1", generation=3, observed=2))
    assert (target, pinned) == (None, {})
    assert "has not read the latest spec" in why


def test_a_job_whose_shard_moved_on_to_a_newer_template_evicts_nothing() -> None:
    """A dropped Job's pod can outlive its Job: it must not do the newer Job's work beside it."""
    pinned = {"demo-db-0": "r2"}
    target, why = CHOSEN["pin"](pinned, "demo-db-0", statefulset("r3", generation=3, observed=3))
    assert target is None
    assert "newer template" in why


def test_a_job_goes_on_when_its_shard_is_back_on_the_template_it_rolls_to() -> None:
    pinned = {"demo-db-0": "r2"}
    assert CHOSEN["pin"](pinned, "demo-db-0", statefulset("r2", generation=4, observed=4)) == ("r2", "")
