"""A ShardDB with members tells the truth about each shard's roles and pods, as today's shards do: trouble
past ``spec.podStartGraceSeconds`` is Degraded, naming what; within it, Progressing; two primaries at once.

Patroni's marks are given as Patroni writes them (``tests/support/replication.py``); the clock is the
fixed one the helpers answer at, and each member's times are set relative to it.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from hooks import names
from hooks.names import FOLLOWER_LABEL_VALUE, LEADER_LABEL_VALUE
from hooks.replication import health

from ...support.replication import (
    FIXED,
    HEAD_LSN,
    answer,
    applied,
    healthy,
    member_pod,
    parent,
    patroni_status,
    primary_slice,
    request,
    stages,
    sync_record,
)

Obj = dict[str, Any]
STAGES = stages()
JUST_NOW = (FIXED - timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")  # within the default 120 s grace


def condition(body: Obj, kind: str) -> Obj:
    found: Obj = next(c for c in body["status"]["conditions"] if c["type"] == kind)
    return found


def running(pods: list[Obj], **changes: Any) -> Obj:
    """The running ShardDB's answer with these member pods (both shards' sync records and primaries registered)."""
    children = applied(STAGES["running"]["children"])
    for shard, replicas in changes.get("observed_replicas", {}).items():
        children["StatefulSet.apps/v1"][f"demo-db-{shard}"]["status"]["replicas"] = replicas
    marks = [*pods, sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    return answer(request(parent(), children, marks))


def without(*names: str) -> list[Obj]:
    return [pod for pod in healthy() if pod["metadata"]["name"] not in names]


def moved_recently(pod: Obj) -> Obj:
    """A member created within the grace (a failover's new pod, a standby cloned again)."""
    pod["metadata"]["creationTimestamp"] = JUST_NOW
    return pod


def crash_looping(shard: int, member: int) -> Obj:
    pod = member_pod(shard, member, None)
    pod["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [
            {
                "name": "db",
                "ready": False,
                "restartCount": 4,
                "image": "postgres-patroni",
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1}},
            }
        ],
    }
    return pod


# --- no primary ---------------------------------------------------------------------------------------


def test_a_shard_without_a_primary_past_the_grace_is_degraded_no_primary() -> None:
    degraded = condition(running(without("demo-db-1-0")), "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", health.NO_PRIMARY)
    assert "demo-db-1" in degraded["message"]


def test_a_shard_without_a_primary_within_the_grace_is_progressing_not_degraded() -> None:
    pods = [*without("demo-db-1-0", "demo-db-1-1"), moved_recently(member_pod(1, 1, FOLLOWER_LABEL_VALUE))]
    body = running(pods)
    assert condition(body, "Degraded")["status"] == "False"
    progressing = condition(body, "Progressing")
    assert progressing["status"] == "True"
    assert "demo-db-1 waiting for Patroni to elect a primary" in progressing["message"]


def test_a_shard_waiting_for_a_primary_asks_to_be_called_when_its_grace_runs_out() -> None:
    pods = [*without("demo-db-1-0", "demo-db-1-1"), moved_recently(member_pod(1, 1, FOLLOWER_LABEL_VALUE))]
    assert running(pods)["resyncAfterSeconds"] == 90


def test_a_members_ready_turning_restarts_the_shards_grace() -> None:
    """The old primary's Ready turned False a moment ago (its Patroni lost the lock): Patroni gets the grace."""
    pods = without("demo-db-1-0")
    demoted = member_pod(1, 0, None)
    demoted["status"]["conditions"] = [{"type": "Ready", "status": "False", "lastTransitionTime": JUST_NOW}]
    assert condition(running([*pods, demoted]), "Degraded")["status"] == "False"


# --- no synchronous standby ---------------------------------------------------------------------------


def test_a_synchronous_shard_without_its_sync_standby_past_the_grace_is_degraded_no_sync_standby() -> None:
    pods = [*without("demo-db-1-1"), member_pod(1, 1, FOLLOWER_LABEL_VALUE, streaming=False)]
    degraded = condition(running(pods), "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", health.NO_SYNC_STANDBY)
    assert "acknowledged by the primary alone" in degraded["message"]


def test_a_shard_that_lost_its_sync_standby_still_serves() -> None:
    """Patroni's synchronous mode is not strict: the primary goes on alone, so the ShardDB stays Available."""
    body = running(without("demo-db-1-1"))
    assert condition(body, "Available")["status"] == "True"
    assert body["status"]["replication"]["shards"][1]["reason"] == health.NO_SYNC_STANDBY


def test_a_standby_cloned_within_the_grace_is_progressing() -> None:
    pods = [*without("demo-db-1-1"), moved_recently(member_pod(1, 1, FOLLOWER_LABEL_VALUE, streaming=False))]
    body = running(pods)
    assert condition(body, "Degraded")["status"] == "False"
    assert "demo-db-1 waiting for a synchronous standby" in condition(body, "Progressing")["message"]


# --- a standby that does not stream ------------------------------------------------------------------


def stalled(shard: int, member: int, state: str = "starting") -> Obj:
    """A member pod Patroni runs but that does not stream: unlabelled (Patroni labels running standbys only)."""
    pod = member_pod(shard, member, None)
    status = patroni_status(f"10.0.{shard}.{10 + member}", "replica", state=state, xlog_location=None, timeline=None)
    pod["metadata"]["annotations"][names.STATUS_ANNOTATION] = status
    return pod


def three_members(pods: list[Obj]) -> Obj:
    """A ShardDB with three members per shard, its shards made: led by member 0, member 1 its sync standby."""
    made = applied(answer(request(parent(members_count=3)))["children"])
    marks = [*pods, sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    return answer(request(parent(members_count=3), made, marks))


def third(shard: int) -> Obj:
    return member_pod(shard, 2, FOLLOWER_LABEL_VALUE)


def test_a_standby_that_does_not_stream_past_the_grace_is_degraded_standby_not_streaming() -> None:
    degraded = condition(three_members([*healthy(), third(0), stalled(1, 2)]), "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", health.STANDBY_NOT_STREAMING)


def test_a_standby_that_does_not_stream_is_named_with_patronis_state() -> None:
    degraded = condition(three_members([*healthy(), third(0), stalled(1, 2, "creating replica")]), "Degraded")
    assert (
        "standby demo-db-1-2 does not stream from primary demo-db-1-0 (Patroni: creating replica)"
        in (degraded["message"])
    )
    assert "patronictl reinit" in degraded["message"]


def test_a_standby_that_does_not_stream_within_the_grace_is_progressing() -> None:
    body = three_members([*healthy(), third(0), moved_recently(stalled(1, 2))])
    assert condition(body, "Degraded")["status"] == "False"
    assert "demo-db-1 waiting for its standbys to stream" in condition(body, "Progressing")["message"]


def test_a_standby_that_does_not_stream_asks_to_be_called_when_its_grace_runs_out() -> None:
    assert three_members([*healthy(), third(0), moved_recently(stalled(1, 2))])["resyncAfterSeconds"] == 90


def test_a_shard_waiting_for_its_sync_standby_says_so_once_not_twice() -> None:
    pods = [*without("demo-db-1-1"), moved_recently(member_pod(1, 1, FOLLOWER_LABEL_VALUE, streaming=False))]
    assert "waiting for its standbys to stream" not in condition(running(pods), "Progressing")["message"]


def test_a_sync_standby_that_does_not_stream_is_no_sync_standby_first_then_named() -> None:
    degraded = condition(running([*without("demo-db-1-1"), stalled(1, 1)]), "Degraded")
    assert degraded["reason"] == health.NO_SYNC_STANDBY
    assert "standby demo-db-1-1 does not stream" in degraded["message"]


def test_a_standby_is_not_named_while_its_shard_has_no_primary() -> None:
    degraded = condition(running([*without("demo-db-1-0", "demo-db-1-1"), stalled(1, 1)]), "Degraded")
    assert degraded["reason"] == health.NO_PRIMARY
    assert "does not stream" not in degraded["message"]


def test_a_standby_that_streams_however_far_behind_is_not_degraded() -> None:
    lagging = member_pod(1, 1, FOLLOWER_LABEL_VALUE, behind=HEAD_LSN // 2)
    assert condition(running([*without("demo-db-1-1"), lagging]), "Degraded")["status"] == "False"


# --- two primaries -----------------------------------------------------------------------------------


def test_two_pods_labelled_primary_are_degraded_at_once_first_of_all() -> None:
    pods = [*without("demo-db-1-1"), moved_recently(member_pod(1, 1, LEADER_LABEL_VALUE))]
    degraded = condition(running(pods), "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", health.TWO_PRIMARIES)
    assert "demo-db-1-0 and demo-db-1-1" in degraded["message"]
    assert "patronictl list" in degraded["message"]


def on_timeline(pod: Obj, timeline: int) -> Obj:
    """``pod`` with Patroni's status annotation saying it runs on ``timeline``."""
    annotations = pod["metadata"]["annotations"]
    annotations[names.STATUS_ANNOTATION] = json.dumps(
        {**json.loads(annotations[names.STATUS_ANNOTATION]), "timeline": timeline}
    )
    return pod


def test_a_primary_label_left_behind_a_failover_is_not_two_primaries() -> None:
    """The old primary's node is gone with its label; the member Patroni promoted runs on the next timeline."""
    stale = on_timeline(member_pod(1, 0, LEADER_LABEL_VALUE), 1)
    promoted = on_timeline(moved_recently(member_pod(1, 1, LEADER_LABEL_VALUE)), 2)
    degraded = condition(running([*without("demo-db-1-0", "demo-db-1-1"), stale, promoted]), "Degraded")
    assert degraded["reason"] != health.TWO_PRIMARIES


# --- member pods that cannot be created or cannot start ---------------------------------------------


def test_a_member_pod_its_shards_statefulset_cannot_create_is_shard_pods_missing() -> None:
    degraded = condition(running(without("demo-db-1-1"), observed_replicas={1: 1}), "Degraded")
    assert degraded["reason"] == "ShardPodsMissing"
    assert "demo-db-1-1 does not exist" in degraded["message"]
    assert "kubectl describe statefulset demo-db-1`" in degraded["message"]


def test_a_crash_looping_member_is_shard_pods_failing_before_what_it_causes() -> None:
    degraded = condition(running([*without("demo-db-1-1"), crash_looping(1, 1)]), "Degraded")
    assert degraded["reason"] == "ShardPodsFailing"
    assert "demo-db-1-1: CrashLoopBackOff" in degraded["message"]
    assert health.NO_SYNC_STANDBY not in degraded["reason"]


# --- what stays as it was ----------------------------------------------------------------------------


def test_a_healthy_sharddb_with_members_is_not_degraded() -> None:
    assert condition(STAGES["running"], "Degraded")["status"] == "False"


def test_role_trouble_is_a_fixed_point_fed_back() -> None:
    first = running(without("demo-db-1-0"))
    children = applied(STAGES["running"]["children"])
    marks = [*without("demo-db-1-0"), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    again = answer(request(parent(status=first["status"]), children, marks))
    assert again["status"] == first["status"]


def test_a_teardown_reports_no_role_trouble() -> None:
    children = applied(STAGES["running"]["children"])
    body = answer(request(parent(), children, without("demo-db-1-0"), finalizing=True), finalize=True)
    assert condition(body, "Degraded")["reason"] == "Deleting"


def test_the_replication_status_is_unchanged_by_the_conditions() -> None:
    body = running(without("demo-db-1-0"))
    assert json.dumps(body["status"]["replication"]["shards"][0]) == json.dumps(
        STAGES["running"]["status"]["replication"]["shards"][0]
    )
