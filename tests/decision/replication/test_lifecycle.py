"""A ShardDB with members through the wired hooks: Patroni's shape from the sync and finalize hooks, the gates
read from each shard's primary, refusals as Degraded, and a teardown that stops every member together; and
today's ShardDB, answering the same bytes with ``spec.replication`` at its default.

Patroni's marks (role labels, the ``-sync`` ConfigMap, the ``-primary`` endpoints) are given as Patroni
writes them (``tests/support/replication.py``); the hooks only read them.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hooks import handler, names
from hooks.lifecycle import decide
from hooks.names import FOLLOWER_LABEL_VALUE, LEADER_LABEL_VALUE
from hooks.replication import config as patroni_config
from hooks.replication import shape
from testbed.models.world import World, bring_up, sharddb

from ...support.hook import at, direct
from ...support.replication import (
    SWITCHED,
    answer,
    applied,
    child,
    config_record,
    healthy,
    kinds_named,
    member_pod,
    parent,
    primary_slice,
    request,
    stages,
    sync_record,
)
from ...support.snapshots import available

Obj = dict[str, Any]
STAGES = stages()


def condition(body: Obj, kind: str) -> Obj:
    found: Obj = next(c for c in body["status"]["conditions"] if c["type"] == kind)
    return found


def marks(*, registered: bool = True) -> list[Obj]:
    """Both shards led by member 0 with member 1 its streaming sync standby, and (``registered``) reached."""
    out = [*healthy(), sync_record(0), sync_record(1)]
    return out + ([primary_slice(0), primary_slice(1)] if registered else [])


def env(job: Obj, name: str) -> str:
    value: str = next(e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == name)
    return value


# --- what a ShardDB with members is made of ------------------------------------------------------------


def test_each_shard_is_a_statefulset_of_its_members_run_by_patroni() -> None:
    children = STAGES["new"]["children"]
    for shard in (0, 1):
        sts = child(children, "StatefulSet", f"demo-db-{shard}")
        assert sts["spec"]["replicas"] == 2
        assert patroni_config.CONFIG_ANNOTATION in sts["spec"]["template"]["metadata"]["annotations"]


def test_patronis_account_role_and_binding_come_with_the_shards() -> None:
    assert {
        ("ServiceAccount", "demo-patroni"),
        ("Role", "demo-patroni"),
        ("RoleBinding", "demo-patroni"),
    } <= kinds_named(STAGES["new"]["children"])


def test_todays_statefulset_and_budget_are_replaced_by_each_shards() -> None:
    children = kinds_named(STAGES["new"]["children"])
    assert ("StatefulSet", "demo-db") not in children
    assert ("PodDisruptionBudget", "demo-db") not in children
    assert {("PodDisruptionBudget", "demo-db-0"), ("PodDisruptionBudget", "demo-db-1")} <= children


def test_the_headless_service_of_every_shard_pod_stays() -> None:
    assert ("Service", "demo-db") in kinds_named(STAGES["new"]["children"])


def test_each_shard_gets_a_service_for_its_primary_and_one_for_its_standbys() -> None:
    children = kinds_named(STAGES["new"]["children"])
    assert {
        ("Service", "demo-db-0-primary"),
        ("Service", "demo-db-0-standby"),
        ("Service", "demo-db-1-primary"),
    } <= children


def test_no_child_is_one_of_patronis_own_objects() -> None:
    for stage in STAGES.values():
        assert not {kind for kind, _ in kinds_named(stage["children"])} & {"ConfigMap", "Endpoints"}


# --- the gates, read from each shard's primary ----------------------------------------------------------


def test_no_seed_runs_while_a_shard_has_no_primary() -> None:
    without = [pod for pod in healthy() if pod["metadata"]["name"] != "demo-db-1-0"]
    body = answer(request(parent(), applied(STAGES["new"]["children"]), [*without, sync_record(0), sync_record(1)]))
    assert body["status"]["readyShards"] == 1
    assert not any(each["kind"] == "Job" for each in body["children"])


def test_no_seed_runs_while_a_synchronous_shard_has_no_streaming_sync_standby() -> None:
    pods = [member_pod(0, 0, LEADER_LABEL_VALUE), member_pod(0, 1, FOLLOWER_LABEL_VALUE, streaming=False)]
    pods += [member_pod(1, 0, LEADER_LABEL_VALUE), member_pod(1, 1, FOLLOWER_LABEL_VALUE)]
    body = answer(request(parent(), applied(STAGES["new"]["children"]), [*pods, sync_record(0), sync_record(1)]))
    assert body["status"]["readyShards"] == 1
    assert not any(each["kind"] == "Job" for each in body["children"])


def test_ready_pods_alone_do_not_make_a_shard_ready() -> None:
    """The StatefulSets report every member ready, but no pod carries Patroni's role: no shard is ready."""
    unmarked = [member_pod(shard, member, None) for shard in (0, 1) for member in (0, 1)]
    body = answer(request(parent(), applied(STAGES["new"]["children"]), unmarked))
    assert body["status"]["readyShards"] == 0


def test_the_seed_runs_once_every_shard_has_a_primary_and_a_streaming_sync_standby() -> None:
    assert ("Job", "demo-seed-2") in kinds_named(STAGES["ready"]["children"])


def test_the_seed_reaches_each_shard_through_its_primary_service() -> None:
    job = child(STAGES["ready"]["children"], "Job", "demo-seed-2")
    assert env(job, "SHARDDB_HOSTS") == "demo-db-0-primary demo-db-1-primary"


def test_the_cache_waits_until_every_primary_is_a_ready_endpoint_of_its_primary_service() -> None:
    seeded = applied(STAGES["ready"]["children"])
    body = answer(
        request(parent(), seeded, [*marks(registered=False), primary_slice(0), primary_slice(1, ready=False)])
    )
    assert body["status"]["registeredShards"] == 1
    assert not any(each["kind"] == "Deployment" for each in body["children"])


def test_the_cache_starts_once_every_primary_is_registered() -> None:
    assert ("Deployment", "demo-cache") in kinds_named(STAGES["registered"]["children"])
    assert STAGES["running"]["status"]["phase"] == "Available"


def test_a_primary_registered_under_another_member_does_not_count() -> None:
    seeded = applied(STAGES["ready"]["children"])
    body = answer(request(parent(), seeded, [*marks(registered=False), primary_slice(0), primary_slice(1, member=1)]))
    assert body["status"]["registeredShards"] == 1


def test_a_wake_or_a_replay_never_seeds_again_for_the_same_count() -> None:
    """The seed memory is on each shard's StatefulSet too: a lost status and a deleted Job run no seed."""
    children = applied(STAGES["running"]["children"])
    del children["Job.batch/v1"]
    body = answer(request(parent(), children, marks()))
    assert not any(each["kind"] == "Job" for each in body["children"])
    assert body["status"]["seededShards"] == 2


# --- the status ---------------------------------------------------------------------------------------


def test_the_status_names_each_shards_primary_sync_standby_and_streaming_standbys() -> None:
    shard = STAGES["running"]["status"]["replication"]["shards"][1]
    assert shard == {
        "shard": 1,
        "ready": True,
        "reason": "Ready",
        "message": "shard demo-db-1: primary demo-db-1-0, synchronous standby demo-db-1-1",
        "primary": "demo-db-1-0",
        "syncStandby": "demo-db-1-1",
        "streaming": ["demo-db-1-1"],
        "members": [
            {"name": "demo-db-1-0", "role": "primary", "state": "running", "timeline": 1},
            {
                "name": "demo-db-1-1",
                "role": "replica",
                "state": "running",
                "replicationState": "streaming",
                "timeline": 1,
                "receiveLagMiB": 0,
                "replayLagMiB": 0,
            },
        ],
    }


def shown(pods: list[Obj] | None = None, *extra: Obj) -> list[Obj]:
    """What the running ShardDB's shards show: these member pods (every one healthy by default), and more."""
    members = healthy() if pods is None else pods
    return [*members, sync_record(0), sync_record(1), primary_slice(0), primary_slice(1), *extra]


def running_with(related: list[Obj]) -> Obj:
    return answer(request(parent(), applied(STAGES["running"]["children"]), related))


def member_entry(body: Obj, shard: int, name: str) -> Obj:
    found: Obj = next(
        each for each in body["status"]["replication"]["shards"][shard]["members"] if each["name"] == name
    )
    return found


def test_the_status_shows_each_standbys_lag_behind_its_primary_in_whole_mib() -> None:
    pods = [pod for pod in healthy() if pod["metadata"]["name"] != "demo-db-1-1"]
    body = running_with(shown([*pods, member_pod(1, 1, FOLLOWER_LABEL_VALUE, behind=3 * 1024 * 1024 + 8192)]))
    entry = member_entry(body, 1, "demo-db-1-1")
    assert (entry["receiveLagMiB"], entry["replayLagMiB"]) == (3, 3)


def test_a_standby_a_few_commits_behind_shows_no_lag_so_the_status_stays_put() -> None:
    pods = [pod for pod in healthy() if pod["metadata"]["name"] != "demo-db-1-1"]
    body = running_with(shown([*pods, member_pod(1, 1, FOLLOWER_LABEL_VALUE, behind=8192)]))
    entry = member_entry(body, 1, "demo-db-1-1")
    assert (entry["receiveLagMiB"], entry["replayLagMiB"]) == (0, 0)


def test_the_status_leaves_a_lag_out_when_patroni_has_not_written_it() -> None:
    pods = [pod for pod in healthy() if pod["metadata"]["name"] != "demo-db-1-1"]
    cloning = member_pod(1, 1, None)
    cloning["metadata"]["annotations"]["status"] = '{"state":"creating replica","role":"replica","version":"4.1.5"}'
    entry = member_entry(running_with(shown([*pods, cloning])), 1, "demo-db-1-1")
    assert entry == {"name": "demo-db-1-1", "state": "creating replica"}


def test_the_status_shows_the_last_failover_as_patronis_history_records_it() -> None:
    body = running_with(shown(None, config_record(1, SWITCHED)))
    assert body["status"]["replication"]["shards"][1]["lastFailover"] == {
        "timeline": 2,
        "reason": "no recovery target specified",
        "at": "2026-05-05T05:01:02Z",
        "newPrimary": "demo-db-1-0",
    }


def test_a_shard_that_never_failed_over_shows_no_last_failover() -> None:
    body = running_with(shown(None, config_record(1, "[]")))
    assert "lastFailover" not in body["status"]["replication"]["shards"][1]


def test_a_malformed_history_leaves_the_last_failover_out_and_answers() -> None:
    body = running_with(shown(None, config_record(1, '[[1,"0/3000060","no recovery target specified"]]')))
    assert "lastFailover" not in body["status"]["replication"]["shards"][1]
    assert body["status"]["replication"]["shards"][1]["ready"] is True


def test_the_status_says_how_many_members_and_whether_synchronous() -> None:
    status = STAGES["running"]["status"]["replication"]
    assert (status["members"], status["synchronous"]) == (2, True)


def test_the_status_names_why_a_shard_is_not_ready() -> None:
    without = [pod for pod in healthy() if pod["metadata"]["name"] != "demo-db-1-0"]
    body = answer(request(parent(), applied(STAGES["new"]["children"]), without))
    assert body["status"]["replication"]["shards"][1]["reason"] == "NoPrimary"


def test_the_status_of_one_member_says_nothing_of_replication() -> None:
    body = answer(request(parent(members_count=1)))
    assert "replication" not in body["status"]


def test_the_status_is_a_fixed_point_fed_back() -> None:
    children = applied(STAGES["registered"]["children"])
    first = answer(request(parent(), children, marks()))
    again = answer(request(parent(status=first["status"]), children, marks()))
    assert again["status"] == first["status"]


# --- refusals: Degraded, naming the field, keeping what exists ---------------------------------------


def test_members_on_mariadb_are_degraded_naming_the_field_and_make_no_shard() -> None:
    body = answer(request(parent({"dbImage": "mariadb:11"})))
    degraded = condition(body, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", shape.UNSUPPORTED)
    assert "spec.replication.members" in degraded["message"]
    assert not any(each["kind"] == "StatefulSet" for each in body["children"])


def test_members_asked_of_running_single_copies_are_refused_and_the_shards_kept() -> None:
    single = answer(request(parent(members_count=1)))
    body = answer(request(parent(), applied(single["children"])))
    degraded = condition(body, "Degraded")
    assert degraded["reason"] == shape.CHANGE_REFUSED
    assert "spec.replication.members" in degraded["message"]
    assert child(body["children"], "StatefulSet", "demo-db") == child(single["children"], "StatefulSet", "demo-db")
    assert not any(each["kind"] == "Role" for each in body["children"])


def test_fewer_members_asked_of_running_shards_is_refused_and_no_child_goes() -> None:
    three = answer(request(parent(members_count=3)))
    body = answer(request(parent(members_count=2), applied(three["children"]), []))
    assert condition(body, "Degraded")["reason"] == shape.CHANGE_REFUSED
    assert kinds_named(three["children"]) <= kinds_named(body["children"])
    assert child(body["children"], "StatefulSet", "demo-db-0")["spec"]["replicas"] == 3


PGPASSWORD = {"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": "demo-db", "key": "password"}}}


def with_pgpassword(**fields: Any) -> Obj:
    """The parent with ``PGPASSWORD`` added to ``spec.db.env``, as examples/sharddb.yaml would give it."""
    return parent({"db": {"env": [PGPASSWORD]}, **fields})


def member_templates(children: list[Obj]) -> dict[str, Obj]:
    return {each["metadata"]["name"]: each["spec"]["template"] for each in children if each["kind"] == "StatefulSet"}


def test_pgpassword_with_members_is_degraded_naming_the_field_and_makes_no_shard() -> None:
    body = answer(request(with_pgpassword()))
    degraded = condition(body, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", shape.PASSWORD_REFUSED)
    assert "spec.db.env[PGPASSWORD]" in degraded["message"]
    assert "POSTGRES_PASSWORD" in degraded["message"]
    assert not any(each["kind"] == "StatefulSet" for each in body["children"])


def test_pgpassword_added_to_running_shards_rolls_no_member_and_no_child_goes() -> None:
    running = STAGES["running"]["children"]
    body = answer(request(with_pgpassword(), applied(running), marks()))
    assert condition(body, "Degraded")["reason"] == shape.PASSWORD_REFUSED
    assert kinds_named(running) <= kinds_named(body["children"])
    assert member_templates(body["children"]) == member_templates(running)


def test_pgpassword_added_to_running_shards_is_held_even_when_a_roll_is_asked() -> None:
    running = STAGES["running"]["children"]
    asked = with_pgpassword()
    asked["metadata"]["annotations"] = {names.APPLY_TEMPLATES_ANNOTATION: "now"}
    body = answer(request(asked, applied(running), marks()))
    assert member_templates(body["children"]) == member_templates(running)


def test_running_shards_refused_for_pgpassword_get_no_new_shard() -> None:
    running = STAGES["running"]["children"]
    body = answer(request(with_pgpassword(shards=3), applied(running), marks()))
    assert set(member_templates(body["children"])) == {"demo-db-0", "demo-db-1"}


def test_two_members_grow_to_three_in_place() -> None:
    body = answer(request(parent(members_count=3), applied(STAGES["running"]["children"]), marks()))
    assert condition(body, "Degraded")["status"] == "False"
    assert child(body["children"], "StatefulSet", "demo-db-1")["spec"]["replicas"] == 3


# --- teardown: the same order, every member stopped together --------------------------------------------


def test_finalize_keeps_every_member_while_the_cache_drains() -> None:
    stopping = STAGES["stopping"]
    assert stopping["status"]["phase"] == "DrainingCache"
    assert [child(stopping["children"], "StatefulSet", f"demo-db-{s}")["spec"]["replicas"] for s in (0, 1)] == [2, 2]
    assert not any(each["kind"] == "PodDisruptionBudget" for each in stopping["children"])


def test_finalize_then_scales_every_member_statefulset_to_zero_at_once() -> None:
    drained = STAGES["drained"]
    assert [child(drained["children"], "StatefulSet", f"demo-db-{s}")["spec"]["replicas"] for s in (0, 1)] == [0, 0]
    assert drained["finalized"] is False  # the member pods still exist


def test_finalize_is_done_once_no_member_pod_remains_and_no_patroni_state_is_left() -> None:
    """Patroni's ConfigMaps watched and none left (``tests/decision/replication/test_cleanup.py`` runs the cleanup)."""
    body = request(parent(), applied(STAGES["drained"]["children"]), [], finalizing=True)
    body["related"]["ConfigMap.v1"] = {}
    gone = answer(body, finalize=True)
    assert gone["finalized"] is True


def test_a_teardown_keeps_each_member_template_as_it_runs() -> None:
    running = child(STAGES["running"]["children"], "StatefulSet", "demo-db-0")
    drained = child(STAGES["drained"]["children"], "StatefulSet", "demo-db-0")
    assert drained["spec"]["template"] == running["spec"]["template"]


def test_hibernation_stops_the_cache_first_then_every_member() -> None:
    asleep = parent({"hibernated": True})
    first = answer(request(asleep, applied(STAGES["running"]["children"]), marks()))
    assert child(first["children"], "Deployment", "demo-cache")["spec"]["replicas"] == 0
    assert child(first["children"], "StatefulSet", "demo-db-0")["spec"]["replicas"] == 2
    cache_gone = answer(request(asleep, applied(first["children"]), marks()))
    assert ("Deployment", "demo-cache") not in kinds_named(cache_gone["children"])
    stopped = answer(request(asleep, applied(cache_gone["children"]), marks()))
    assert [child(stopped["children"], "StatefulSet", f"demo-db-{s}")["spec"]["replicas"] for s in (0, 1)] == [0, 0]


def test_a_sharddb_with_members_hibernated_before_any_shard_makes_no_single_copy() -> None:
    body = answer(request(parent({"hibernated": True})))
    assert not any(each["kind"] == "StatefulSet" for each in body["children"])


def test_waking_runs_no_seed_again() -> None:
    asleep = parent({"hibernated": True})
    answered = answer(request(asleep, applied(STAGES["running"]["children"]), marks()))
    for _ in range(3):
        answered = answer(request(asleep, applied(answered["children"]), []))
    assert answered["status"]["phase"] == "Hibernated"
    woken = answer(request(parent(), applied(answered["children"], ready=False), marks()))
    assert not any(each["kind"] == "Job" and each["metadata"]["name"] != "demo-seed-2" for each in woken["children"])
    assert woken["status"]["seededShards"] == 2


# --- rollouts: a running member template is kept ----------------------------------------------------


def test_a_running_shard_keeps_its_member_template_until_its_spec_changes() -> None:
    """Another version of the hooks renders the template differently: no member restarts for it."""
    children = applied(STAGES["running"]["children"])
    stored = children["StatefulSet.apps/v1"]["demo-db-0"]
    stored["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["periodSeconds"] = 11
    body = answer(request(parent(), children, marks()))
    assert child(body["children"], "StatefulSet", "demo-db-0")["spec"]["template"] == stored["spec"]["template"]
    assert body["status"]["newerTemplates"] == "shards"


def test_a_new_db_image_rolls_every_shards_members() -> None:
    newer = parent({"dbImage": "registry.example.com/postgres-patroni:16-4.1.5"}) | {
        "metadata": {**parent()["metadata"], "generation": 2}
    }
    body = answer(request(newer, applied(STAGES["running"]["children"]), marks()))
    for shard in (0, 1):
        sts = child(body["children"], "StatefulSet", f"demo-db-{shard}")
        assert sts["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":16-4.1.5")
    assert condition(body, "Progressing")["reason"] == "RollingUpdate"


# --- customize -----------------------------------------------------------------------------------------


def customize(the_parent: Obj) -> list[Obj]:
    rules: list[Obj] = handler.customize(json.dumps({"controller": {}, "parent": the_parent}).encode())[
        "relatedResources"
    ]
    return rules


def test_customize_watches_each_primary_services_endpointslices() -> None:
    (rule,) = [
        r for r in customize(parent()) if r["resource"] == "endpointslices" and "matchExpressions" in r["labelSelector"]
    ]
    assert rule["labelSelector"]["matchExpressions"] == [
        {"key": names.SERVICE_NAME_LABEL, "operator": "In", "values": ["demo-db-0-primary", "demo-db-1-primary"]}
    ]


def test_customize_watches_patronis_configmaps_by_name_only_never_the_leader() -> None:
    """By name: a label selector would also match the leader ConfigMap, which Patroni renews every loop."""
    (rule,) = [r for r in customize(parent()) if r["resource"] == "configmaps"]
    assert rule == {
        "apiVersion": "v1",
        "resource": "configmaps",
        "names": [f"demo-db-{s}-{suffix}" for s in (0, 1) for suffix in ("config", "sync", "failover")],
    }


def test_customize_for_one_member_watches_what_it_always_did() -> None:
    assert customize(parent(members_count=1)) == customize(
        parent(members_count=1) | {"spec": {k: v for k, v in parent()["spec"].items() if k != "replication"}}
    )
    assert {r["resource"] for r in customize(parent(members_count=1))} == {"endpointslices", "pods"}


# --- pause, and one member: today's ShardDB, on a snapshot and through the hooks --------------------------


def test_a_paused_sharddb_with_members_is_frozen_too() -> None:
    body = answer(request(parent({"paused": True}), applied(STAGES["running"]["children"]), marks()))
    assert kinds_named(body["children"]) == kinds_named(STAGES["running"]["children"])


def test_the_decision_renders_todays_shape_for_one_member() -> None:
    decision = decide(available())
    assert decision.replication == shape.SINGLE_COPY
    assert decision.shard_sets == ()
    assert not decision.members


def test_todays_sharddbs_answer_the_same_bytes_with_replication_at_its_default() -> None:
    world = World(sharddb())
    bring_up(world, direct)
    request = world.request()
    answers = set()
    for written in (None, {}, {"members": 1}, {"members": 1, "synchronous": False}):
        asked = copy.deepcopy(request)
        if written is not None:
            asked["parent"]["spec"]["replication"] = written
        body = handler.sync(json.dumps(asked).encode(), finalize=False, now=at("2026-05-05T05:05:05Z")).body
        answers.add(json.dumps(body, sort_keys=True))
    assert len(answers) == 1
