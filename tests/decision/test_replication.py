"""``spec.replication``: what it means, when it is refused, when a shard with members is ready, and what Patroni gets.

The building blocks (``hooks/replication/``, ``hooks/replication/objects.py``), called directly, and a ShardDB without
members answering as it always did; the lifecycle they are wired into is ``test_members_lifecycle.py``'s.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from hooks import handler, names, pod_templates
from hooks.replication import config as patroni_config
from hooks.replication import objects as patroni_objects
from hooks.replication import shape
from hooks.replication import template as member_pods
from hooks.replication.health import MemberState, ShardHealth, member_states, registered, shard_health
from hooks.replication.marks import Endpoint, Failover, MemberPod, SyncRecord
from hooks.replication.shape import SINGLE_COPY, Observed, Plan, decide
from hooks.spec import ShardDBSpec
from testbed.models.metacontroller import difference, for_create, needs_update
from testbed.models.world import World, bring_up, sharddb

from ..support.hook import at, direct
from ..support.kube_schema import problems
from ..support.replication import (
    HEAD_LSN,
    OWNER,
    PATRONI_IMAGE,
    TWO,
    claims,
    members,
    patroni_status,
    rendered,
    spec,
)

Obj = dict[str, Any]


def one(objects: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [obj for obj in objects if obj["kind"] == kind and obj["metadata"]["name"] == name]
    return found


def statefulset(objects: list[Obj], shard: int = 0) -> Obj:
    return one(objects, "StatefulSet", f"demo-db-{shard}")


def container(objects: list[Obj], shard: int = 0) -> Obj:
    found: list[Obj] = statefulset(objects, shard)["spec"]["template"]["spec"]["containers"]
    (db,) = [each for each in found if each["name"] == "db"]
    return db


def config(objects: list[Obj], shard: int = 0) -> Obj:
    annotations = statefulset(objects, shard)["spec"]["template"]["metadata"]["annotations"]
    loaded: Obj = json.loads(annotations[patroni_config.CONFIG_ANNOTATION])
    return loaded


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


# --- the field ---------------------------------------------------------------------------------


def test_a_sharddb_without_replication_has_one_member() -> None:
    assert spec().replication.members == 1
    assert decide("demo", spec(), Observed()).plan == SINGLE_COPY
    assert not SINGLE_COPY.patroni


def test_members_are_one_two_or_three() -> None:
    for count in (1, 2, 3):
        assert members(count).replication.members == count
    for count in (0, 4):
        with pytest.raises(ValidationError, match="members"):
            members(count)


def test_members_are_synchronous_by_default() -> None:
    asked = spec(replication={"members": 2})
    assert decide("demo", asked, Observed()).plan == Plan(2, synchronous=True)
    assert Plan(2, synchronous=True).synchronous_standbys == 1


def test_one_member_is_the_single_copy_whatever_synchronous_says() -> None:
    assert decide("demo", members(1, synchronous=True), Observed()).plan == SINGLE_COPY


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


def test_no_patroni_object_is_rendered_for_one_member() -> None:
    assert rendered(spec(), SINGLE_COPY) == []


# --- the engine ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "image",
    ["mariadb:10.11", "docker.io/library/mariadb:10.11", "mysql:8.4", "registry.example.com:5000/db/mariadb@sha256:ab"],
)
def test_mariadb_with_members_is_refused_naming_the_field(image: str) -> None:
    outcome = decide("demo", spec(dbImage=image, replication={"members": 2}), Observed())
    assert outcome.refusal is not None
    assert outcome.refusal.reason == "ReplicationUnsupported"
    assert "spec.replication.members" in outcome.refusal.message
    assert "MariaDB" in outcome.refusal.message


def test_a_refused_new_sharddb_gets_no_shards() -> None:
    assert decide("demo", spec(dbImage="mariadb:10.11", replication={"members": 2}), Observed()).plan is None


def test_a_refused_running_sharddb_keeps_its_shards_as_they_are() -> None:
    outcome = decide("demo", spec(dbImage="mariadb:10.11", replication={"members": 3}), Observed(single_copy=True))
    assert outcome.plan == SINGLE_COPY


def test_mariadb_with_one_member_is_not_refused() -> None:
    assert decide("demo", spec(dbImage="mariadb:10.11"), Observed()) == shape.Outcome(SINGLE_COPY)


@pytest.mark.parametrize("image", [PATRONI_IMAGE, "postgres:16", "ghcr.io/zalando/spilo-16:3.3-p1", "localhost/my-db"])
def test_an_image_not_named_for_mariadb_or_mysql_is_postgresql(image: str) -> None:
    assert shape.engine(image) is shape.Engine.POSTGRESQL


def test_a_registry_port_is_not_read_as_a_tag() -> None:
    assert shape.engine("mysql.example.com:5000/postgres:16") is shape.Engine.POSTGRESQL


# --- changes once shards exist ------------------------------------------------------------------


def test_single_copy_shards_are_not_given_members() -> None:
    outcome = decide("demo", members(2), Observed(single_copy=True))
    assert outcome.plan == SINGLE_COPY
    assert outcome.refusal is not None
    assert outcome.refusal.reason == "ReplicationChangeRefused"
    assert outcome.refusal.message.startswith("spec.replication.members may not change from 1 to 2")


def test_shards_with_members_are_never_made_single_copies() -> None:
    outcome = decide("demo", spec(), Observed(members=2, synchronous=True))
    assert outcome.plan == TWO
    assert outcome.refusal is not None
    assert "spec.replication.members may not change from 2 to 1" in outcome.refusal.message


def test_two_members_may_grow_to_three() -> None:
    assert decide("demo", members(3), Observed(members=2, synchronous=True)) == shape.Outcome(Plan(3, True))


def test_three_members_do_not_shrink_to_two() -> None:
    outcome = decide("demo", members(2), Observed(members=3, synchronous=True))
    assert outcome.plan == Plan(3, True)
    assert outcome.refusal is not None
    assert "from 3 to 2" in outcome.refusal.message


def test_synchronous_is_fixed_once_the_shards_exist() -> None:
    outcome = decide("demo", members(2, synchronous=False), Observed(members=2, synchronous=True))
    assert outcome.plan == TWO
    assert outcome.refusal is not None
    assert outcome.refusal.message.startswith("spec.replication.synchronous may not change from true to false")


def test_an_unchanged_shape_is_not_refused() -> None:
    assert decide("demo", members(2), Observed(members=2, synchronous=True)) == shape.Outcome(TWO)


def test_the_shape_is_read_back_from_what_the_statefulsets_record() -> None:
    recorded = [shape.record(Plan(3, False))] * 2
    assert Observed.from_annotations(False, recorded) == Observed(members=3, synchronous=False)


def test_a_missing_or_bad_record_reads_as_no_members() -> None:
    bad = [{}, {names.MEMBERS_ANNOTATION: "two"}, {names.MEMBERS_ANNOTATION: "1"}]
    assert Observed.from_annotations(True, bad) == Observed(single_copy=True)


def test_statefulsets_that_disagree_read_as_the_larger_shape() -> None:
    recorded = [shape.record(Plan(2, True)), shape.record(Plan(3, True))]
    assert Observed.from_annotations(False, recorded).members == 3


# --- names ---------------------------------------------------------------------------------------------


def test_a_name_too_long_for_members_is_refused_and_todays_limit_stays() -> None:
    longest = "x" * names.MAX_REPLICATED_NAME_LENGTH
    assert decide(longest, members(2), Observed()).refusal is None
    outcome = decide(longest + "x", members(2), Observed())
    assert outcome.refusal is not None
    assert outcome.refusal.reason == "ReplicationNameTooLong"
    assert "spec.replication.members" in outcome.refusal.message
    assert decide(longest + "x", spec(), Observed()).refusal is None
    assert names.MAX_NAME_LENGTH == 49


def test_the_longest_name_with_members_leaves_every_member_name_within_its_limit() -> None:
    longest = "x" * names.MAX_REPLICATED_NAME_LENGTH
    for what, value, limit in names.replicated_derived(longest):
        assert len(value) <= limit, what
    assert names.replicated_binding_limit() == "a member pod's label controller-revision-hash"


# --- readiness -----------------------------------------------------------------------------------------


def primary(name: str = "demo-db-0-0", **fields: Any) -> MemberPod:
    values: Obj = {"role": "primary", "ready": True, "state": "running", **fields}
    return MemberPod(name, **values)


def standby(name: str = "demo-db-0-1", **fields: Any) -> MemberPod:
    values: Obj = {"role": "replica", "ready": True, "state": "running", "replication_state": "streaming", **fields}
    return MemberPod(name, **values)


SYNCED = SyncRecord(leader="demo-db-0-0", standbys=frozenset({"demo-db-0-1"}))


def health(pods_seen: list[MemberPod], sync: SyncRecord = SYNCED, plan: Plan = TWO) -> ShardHealth:
    return shard_health("demo-db-0", plan, pods_seen, sync)


def test_a_shard_with_a_primary_and_a_streaming_sync_standby_is_ready() -> None:
    seen = health([primary(), standby()])
    assert (seen.ready, seen.primary, seen.sync_standby) == (True, "demo-db-0-0", "demo-db-0-1")


def test_a_shard_without_a_primary_is_not_ready() -> None:
    assert health([standby()]).reason == "NoPrimary"


def test_a_primary_not_ready_yet_is_no_primary() -> None:
    assert health([primary(ready=False), standby()]).reason == "NoPrimary"


def test_a_primary_being_deleted_is_no_primary() -> None:
    assert health([primary(deleting=True), standby()]).reason == "NoPrimary"


def test_two_pods_labelled_primary_are_never_ready_and_both_are_named() -> None:
    seen = health([primary(), primary("demo-db-0-1")])
    assert (seen.ready, seen.reason) == (False, "TwoPrimaries")
    assert "demo-db-0-0 and demo-db-0-1" in seen.message


def test_a_synchronous_shard_waits_for_its_sync_standby_to_stream() -> None:
    seen = health([primary(), standby(replication_state="in archive recovery")])
    assert (seen.ready, seen.reason) == (False, "NoSyncStandby")


def test_a_streaming_standby_not_named_sync_does_not_make_it_ready() -> None:
    assert health([primary(), standby()], SyncRecord(leader="demo-db-0-0")).reason == "NoSyncStandby"


def test_a_sync_record_of_an_older_leader_does_not_count() -> None:
    stale = SyncRecord(leader="demo-db-0-1", standbys=frozenset({"demo-db-0-1"}))
    assert health([primary(), standby()], stale).reason == "NoSyncStandby"


def test_an_asynchronous_shard_is_ready_with_its_primary_alone() -> None:
    seen = health([primary()], SyncRecord(), Plan(2, synchronous=False))
    assert (seen.ready, seen.sync_standby, seen.streaming) == (True, None, ())


def test_the_pods_marks_are_read_as_patroni_writes_them() -> None:
    pod: Obj = {
        "metadata": {
            "name": "demo-db-0-1",
            "labels": {names.ROLE_LABEL: "replica"},
            "annotations": {"status": '{"state":"running","role":"replica","replication_state":"streaming"}'},
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert MemberPod.from_pod(pod) == standby()


def test_an_unreadable_status_annotation_reads_as_not_running() -> None:
    pod: Obj = {"metadata": {"name": "demo-db-0-0", "annotations": {"status": "{not json"}}}
    assert MemberPod.from_pod(pod) == MemberPod("demo-db-0-0")


# --- each member's state and lag, as the status shows them --------------------------------------------


def marked(name: str, role: str | None, status: str) -> MemberPod:
    """A member pod read from Patroni's marks: its role label and its ``status`` annotation."""
    labels = {names.ROLE_LABEL: role} if role else {}
    pod: Obj = {"metadata": {"name": name, "labels": labels, "annotations": {"status": status}}}
    return MemberPod.from_pod(pod)


LEADING = patroni_status("10.0.0.10", "primary")


def following(behind_received: int, behind_replayed: int) -> str:
    """A streaming standby's annotation: it received and replayed up to so many bytes short of the primary."""
    received, replayed = HEAD_LSN - behind_received, HEAD_LSN - behind_replayed
    return patroni_status(
        "10.0.0.11",
        "replica",
        xlog_location=max(received, replayed),
        replay_lsn=replayed,
        receive_lsn=received,
        replication_state="streaming",
    )


def states(*pods: MemberPod) -> dict[str, MemberState]:
    return {state.name: state for state in member_states(list(pods))}


def test_a_members_timeline_and_wal_positions_are_read_as_patroni_writes_them() -> None:
    seen = marked("demo-db-0-1", "replica", following(16, 4096))
    assert (seen.timeline, seen.xlog_location, seen.receive_lsn, seen.replay_lsn) == (
        1,
        HEAD_LSN - 16,
        HEAD_LSN - 16,
        HEAD_LSN - 4096,
    )


@pytest.mark.parametrize("written", ['"0/4000098"', "true", "-1", "1.5", "null", str(2**63)])
def test_a_wal_position_that_is_not_a_json_count_reads_as_unknown(written: str) -> None:
    seen = marked("demo-db-0-0", "primary", f'{{"state":"running","role":"primary","xlog_location":{written}}}')
    assert seen.xlog_location is None


def test_a_standbys_lags_are_the_primarys_position_less_what_it_received_and_replayed() -> None:
    seen = states(marked("demo-db-0-0", "primary", LEADING), marked("demo-db-0-1", "replica", following(16, 4096)))
    assert (seen["demo-db-0-1"].receive_lag, seen["demo-db-0-1"].replay_lag) == (16, 4096)


def test_the_primary_has_no_lag() -> None:
    seen = states(marked("demo-db-0-0", "primary", LEADING), marked("demo-db-0-1", "replica", following(0, 0)))
    assert (seen["demo-db-0-0"].receive_lag, seen["demo-db-0-0"].replay_lag) == (None, None)


def test_a_lag_is_unknown_while_the_primary_has_not_written_its_position() -> None:
    primary_without = patroni_status("10.0.0.10", "primary", xlog_location=None)
    seen = states(marked("demo-db-0-0", "primary", primary_without), marked("demo-db-0-1", "replica", following(0, 0)))
    assert (seen["demo-db-0-1"].receive_lag, seen["demo-db-0-1"].replay_lag) == (None, None)


def test_a_lag_is_unknown_for_a_standby_that_has_not_written_its_positions() -> None:
    cloning = patroni_status("10.0.0.11", "replica", state="creating replica", xlog_location=None, timeline=None)
    seen = states(marked("demo-db-0-0", "primary", LEADING), marked("demo-db-0-1", None, cloning))
    assert (seen["demo-db-0-1"].receive_lag, seen["demo-db-0-1"].replay_lag) == (None, None)


def test_a_standby_written_after_the_primarys_last_position_lags_zero_not_less() -> None:
    ahead = patroni_status(
        "10.0.0.11",
        "replica",
        xlog_location=HEAD_LSN + 100,
        replay_lsn=HEAD_LSN + 100,
        receive_lsn=HEAD_LSN + 100,
        replication_state="streaming",
    )
    seen = states(marked("demo-db-0-0", "primary", LEADING), marked("demo-db-0-1", "replica", ahead))
    assert (seen["demo-db-0-1"].receive_lag, seen["demo-db-0-1"].replay_lag) == (0, 0)


def test_two_pods_labelled_primary_leave_every_lag_unknown() -> None:
    seen = states(
        marked("demo-db-0-0", "primary", LEADING),
        marked("demo-db-0-1", "primary", LEADING),
        marked("demo-db-0-2", "replica", following(0, 0)),
    )
    assert (seen["demo-db-0-2"].receive_lag, seen["demo-db-0-2"].replay_lag) == (None, None)


def test_a_member_being_deleted_is_not_listed() -> None:
    assert [each.name for each in member_states([primary(), standby(deleting=True)])] == ["demo-db-0-0"]


def test_a_standby_not_streaming_is_named_once_the_shard_has_a_primary() -> None:
    seen = health([primary(), standby(replication_state="in archive recovery")], plan=Plan(2, synchronous=False))
    assert [(each.name, each.patroni_state) for each in seen.not_streaming] == [
        ("demo-db-0-1", "running, in archive recovery")
    ]


def test_no_standby_is_named_not_streaming_while_the_shard_has_no_primary() -> None:
    assert health([primary(ready=False), standby(state="starting", replication_state=None)]).not_streaming == ()


# --- the last failover, from Patroni's history on <scope>-config ------------------------------------

# A line as Patroni 4.1 appends it after a promotion: the timeline that ended, the position it ended at,
# PostgreSQL's reason from its timeline history file, the file's time in Patroni's zone, the new leader.
PROMOTED = [1, 50331808, "no recovery target specified", "2026-05-05T07:04:58.123456+02:00", "demo-db-0-1"]


def history(value: object) -> dict[str, object]:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return {"metadata": {"name": "demo-db-0-config", "annotations": {"history": text}}}


def test_the_last_line_of_patronis_history_is_the_last_failover() -> None:
    earlier = [1, 50331808, "no recovery target specified", "2026-05-05T04:00:00+00:00", "demo-db-0-0"]
    last = [2, 83886240, "no recovery target specified", "2026-05-05T05:00:00.5+00:00", "demo-db-0-1"]
    assert Failover.from_config_map(history([earlier, last])) == Failover(
        3, "no recovery target specified", datetime(2026, 5, 5, 5, 0, 0, 500000, tzinfo=UTC), "demo-db-0-1"
    )


def test_the_failovers_time_keeps_the_zone_patroni_wrote_it_in() -> None:
    found = Failover.from_config_map(history([PROMOTED]))
    assert found is not None
    assert found.at == datetime(2026, 5, 5, 5, 4, 58, 123456, tzinfo=UTC)


def test_a_line_patroni_could_not_time_gives_no_time_and_no_new_primary() -> None:
    assert Failover.from_config_map(history([[1, 50331808, "no recovery target specified"]])) == Failover(
        2, "no recovery target specified"
    )


@pytest.mark.parametrize("config_map", [None, {"metadata": {"annotations": {}}}, history("[]")])
def test_no_history_is_no_failover(config_map: dict[str, object] | None) -> None:
    assert Failover.from_config_map(config_map) is None


@pytest.mark.parametrize(
    "written",
    [
        "[[1,50331808,",
        '{"timeline":1}',
        "[1,50331808]",
        [[1, 50331808]],
        [["1", 50331808, "no recovery target specified"]],
        [[True, 50331808, "no recovery target specified"]],
        [[0, 50331808, "no recovery target specified"]],
        [[1, "0/3000060", "no recovery target specified"]],
        [[1, 50331808, 7]],
        [[*PROMOTED[:3], "yesterday", "demo-db-0-1"]],
        [[*PROMOTED[:3], "2026-05-05T05:04:58", "demo-db-0-1"]],
        [[*PROMOTED[:4], ""]],
        [[*PROMOTED, "more"]],
        [PROMOTED, "not a line"],
    ],
)
def test_a_malformed_history_is_no_failover(written: object) -> None:
    assert Failover.from_config_map(history(written)) is None


def test_the_sync_configmap_is_read_from_its_annotations() -> None:
    config_map: Obj = {
        "metadata": {"annotations": {"leader": "demo-db-0-0", "sync_standby": "demo-db-0-1,demo-db-0-2"}}
    }
    assert SyncRecord.from_config_map(config_map) == SyncRecord(
        "demo-db-0-0", frozenset({"demo-db-0-1", "demo-db-0-2"})
    )
    assert SyncRecord.from_config_map(None) == SyncRecord()


def test_a_primary_is_registered_once_it_is_a_ready_endpoint_of_its_primary_service() -> None:
    assert registered("demo-db-0-0", [Endpoint("demo-db-0-0")])
    assert not registered("demo-db-0-0", [Endpoint("demo-db-0-0", ready=False)])
    assert not registered("demo-db-0-0", [Endpoint("demo-db-0-1", ready=True)])
    assert not registered(None, [Endpoint(None)])


# --- Patroni's own objects ------------------------------------------------------------------------------


def test_patronis_own_configmaps_are_named_after_its_scope() -> None:
    assert names.patroni_owned("demo-db-0") == {
        "demo-db-0-leader",
        "demo-db-0-config",
        "demo-db-0-sync",
        "demo-db-0-failover",
        "demo-db-0-history",
    }


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


# --- RBAC ----------------------------------------------------------------------------------------------------


def test_the_role_grants_only_what_patronis_kubernetes_dcs_calls() -> None:
    assert one(rendered(), "Role", "demo-patroni")["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get", "list", "patch", "watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "patch", "watch"]},
    ]


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


# --- per shard -------------------------------------------------------------------------------------------------


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


def test_a_shards_selector_matches_its_members_only() -> None:
    objects = rendered()
    labels = statefulset(objects, 0)["spec"]["template"]["metadata"]["labels"]
    assert matches(member_pods.member_selector("demo", 0), labels)
    assert not matches(member_pods.member_selector("demo", 1), labels)


def test_the_primary_service_selects_the_label_patroni_sets_on_the_leader() -> None:
    selector = one(rendered(), "Service", "demo-db-0-primary")["spec"]["selector"]
    assert selector == {**member_pods.member_selector("demo", 0), "mygroup.example.com/role": "primary"}


def test_the_standby_service_selects_the_label_patroni_sets_on_a_running_standby() -> None:
    selector = one(rendered(), "Service", "demo-db-0-standby")["spec"]["selector"]
    assert selector == {**member_pods.member_selector("demo", 0), "mygroup.example.com/role": "replica"}


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


# --- Patroni's configuration ----------------------------------------------------------------------------------


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


def test_no_password_is_ever_in_the_template() -> None:
    template = json.dumps(statefulset(rendered())["spec"]["template"])
    assert "password" not in template.lower()


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
    assert db["readinessProbe"]["httpGet"] == {"path": "/readiness", "port": "patroni", "scheme": "HTTP"}
    assert db["livenessProbe"]["httpGet"]["path"] == "/liveness"
    assert {"name": "patroni", "containerPort": 8008, "protocol": "TCP"} in db["ports"]


def test_the_default_drain_is_left_to_patronis_own_shutdown() -> None:
    assert "lifecycle" not in container(rendered())


def test_a_drain_command_the_user_wrote_is_kept() -> None:
    db = container(rendered(spec(replication={"members": 2}, drainCommand=["sh", "-c", "true"])))
    assert db["lifecycle"] == {"preStop": {"exec": {"command": ["sh", "-c", "true"]}}}


def test_the_base_template_is_not_changed() -> None:
    base = pod_templates.db_template("demo", members(2))
    before = copy.deepcopy(base)
    member_pods.member_template("demo", 0, members(2), TWO, base)
    assert base == before


def test_the_same_spec_renders_the_same_bytes() -> None:
    assert json.dumps(rendered()) == json.dumps(rendered())


# --- as the API server keeps them ------------------------------------------------------------------------------


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
        assert set(rule) == {"apiGroups", "resources", "verbs"}
    assert set(binding["subjects"][0]) == {"kind", "name", "namespace"}
    pod = statefulset(objects)["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == patroni_config.CONFIG_VOLUME]
    assert volume["downwardAPI"]["defaultMode"] == 0o644
    assert volume["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"
    for var in container(objects)["env"]:
        if "valueFrom" in var and "fieldRef" in var["valueFrom"]:
            assert var["valueFrom"]["fieldRef"]["apiVersion"] == "v1"


def test_patroni_reads_the_configuration_as_yaml() -> None:
    text = statefulset(rendered())["spec"]["template"]["metadata"]["annotations"][patroni_config.CONFIG_ANNOTATION]
    assert yaml.safe_load(text) == json.loads(text)


def test_every_address_needs_a_password() -> None:
    rules = config(rendered())["postgresql"]["pg_hba"]
    assert all(rule.endswith(" scram-sha-256") for rule in rules if rule.startswith("host"))
    assert [rule for rule in rules if not rule.startswith("host")] == ["local all all trust"]


# --- PGPASSWORD in the members' env ---------------------------------------------------------------

SUPERUSER_PASSWORD = {"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": "demo-db", "key": "password"}}}


def with_pgpassword(count: int) -> ShardDBSpec:
    return spec(replication={"members": count}, db={"env": [SUPERUSER_PASSWORD]})


def test_pgpassword_with_members_is_refused_naming_the_field_and_what_to_use() -> None:
    outcome = decide("demo", with_pgpassword(2), Observed())
    assert outcome.refusal is not None
    assert outcome.refusal.reason == "ReplicationPasswordRefused"
    assert outcome.refusal.message.startswith("spec.db.env[PGPASSWORD] is set")
    assert "POSTGRES_PASSWORD" in outcome.refusal.message


def test_a_new_sharddb_refused_for_pgpassword_gets_no_shards() -> None:
    assert decide("demo", with_pgpassword(2), Observed()).plan is None


def test_running_shards_refused_for_pgpassword_are_held_as_they_run() -> None:
    outcome = decide("demo", with_pgpassword(2), Observed(members=2, synchronous=True))
    assert (outcome.plan, outcome.hold) == (TWO, True)
    assert outcome.refusal is not None
    assert outcome.refusal.reason == shape.PASSWORD_REFUSED


def test_running_shards_refused_for_pgpassword_do_not_grow() -> None:
    outcome = decide("demo", with_pgpassword(3), Observed(members=2, synchronous=True))
    assert (outcome.plan, outcome.hold) == (TWO, True)


def test_a_refusal_of_the_shape_comes_before_pgpassword_and_still_holds_the_members() -> None:
    outcome = decide("demo", with_pgpassword(1), Observed(members=2, synchronous=True))
    assert outcome.refusal is not None
    assert outcome.refusal.reason == shape.CHANGE_REFUSED
    assert (outcome.plan, outcome.hold) == (TWO, True)


def test_pgpassword_with_one_member_is_not_refused() -> None:
    assert decide("demo", with_pgpassword(1), Observed()) == shape.Outcome(SINGLE_COPY)


def test_pgpassword_on_single_copies_asked_for_members_is_refused_as_a_change_only() -> None:
    outcome = decide("demo", with_pgpassword(2), Observed(single_copy=True))
    assert outcome.refusal is not None
    assert outcome.refusal.reason == shape.CHANGE_REFUSED
    assert (outcome.plan, outcome.hold) == (SINGLE_COPY, False)


def test_postgres_password_with_members_is_not_refused() -> None:
    env = [{"name": "POSTGRES_PASSWORD", "value": "x"}, {"name": "PATRONI_SUPERUSER_PASSWORD", "value": "x"}]
    assert decide("demo", spec(replication={"members": 2}, db={"env": env}), Observed()) == shape.Outcome(TWO)
