"""A pod's passing trouble is progress until its grace runs out; the decision, without HTTP.

Times are whole seconds after ``T0``, the moment a pod was placed (or found no place).
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hooks.handler import MIN_RECHECK_SECONDS, recheck_after
from hooks.lifecycle import Decision, Phase, decide, grace
from hooks.lifecycle.wording.progressing import stuck_waiting
from hooks.spec import DEFAULT_POD_START_GRACE_SECONDS, MAX_POD_START_GRACE_SECONDS
from hooks.trouble.stuck import STUCK_ORDER, StuckPod
from hooks.workloads import SeedJobView

from ..support.hook import moment
from ..support.snapshots import available, condition, rolling, snapshot, spec, sts

STATUS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "api" / "status.md"
T0 = moment("2026-03-01T12:00:00Z")
SCHEDULER = "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."


def after(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def pod(
    name: str = "demo-db-2", reason: str = "Unschedulable", component: str = "db", since: datetime | None = T0
) -> StuckPod:
    ordinal = int(name.rsplit("-", 1)[1]) if component == "db" else -1
    return StuckPod(name, component, reason, SCHEDULER, ordinal, since)


def message(decision: Decision, kind: str) -> str:
    return next(c for c in decision.conditions if c.type == kind).message


def provisioning(*stuck: StuckPod, now: datetime, **spec_fields: object) -> Decision:
    """Three shards asked for, two ready, the third stuck as told."""
    return decide(snapshot(spec=spec(**spec_fields), statefulset=sts(ready=2), stuck_pods=stuck, now=now))


# --- which troubles wait ---------------------------------------------------------


def test_every_trouble_the_hooks_recognise_has_exactly_one_class() -> None:
    assert set(grace.WAITS_FOR) | grace.AT_ONCE == set(STUCK_ORDER)
    assert not set(grace.WAITS_FOR) & grace.AT_ONCE


def test_the_guide_says_which_troubles_wait_and_which_report_at_once() -> None:
    section = STATUS_PAGE.read_text().split("\n## Pods that wait to start", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)`[^|]*\| (waits for the grace|reported at once) \|", section, re.MULTILINE)
    assert {reason for reason, said in rows if said == "waits for the grace"} == set(grace.WAITS_FOR)
    assert {reason for reason, said in rows if said == "reported at once"} == grace.AT_ONCE


@pytest.mark.parametrize("reason", ["Unschedulable", "CreateContainerConfigError", "CreateContainerError"])
def test_a_trouble_that_can_pass_by_itself_waits_for_the_grace(reason: str) -> None:
    troubles = grace.triage((pod(reason=reason),), after(119), 120)
    assert troubles.waiting
    assert not troubles.failing


@pytest.mark.parametrize("reason", sorted(grace.AT_ONCE))
def test_a_trouble_already_retried_counts_at_once(reason: str) -> None:
    troubles = grace.triage((pod(reason=reason),), T0, 120)
    assert troubles.failing
    assert not troubles.waiting
    assert troubles.recheck_at is None


def test_a_trouble_counts_once_it_has_lasted_the_grace() -> None:
    assert grace.triage((pod(),), after(120), 120).failing
    assert not grace.triage((pod(),), after(119.9), 120).failing


def test_a_pod_without_a_readable_time_gets_no_grace() -> None:
    assert grace.triage((pod(since=None),), T0, 120).failing


def test_without_a_clock_reading_nothing_waits() -> None:
    assert grace.triage((pod(),), None, 120).failing


def test_a_grace_of_zero_reports_every_trouble_at_once() -> None:
    assert grace.triage((pod(),), T0, 0).failing


def test_a_time_at_the_end_of_the_calendar_gets_no_grace() -> None:
    assert grace.triage((pod(since=datetime.max.replace(tzinfo=T0.tzinfo)),), T0, 120).failing


def test_the_recheck_is_when_the_earliest_running_grace_runs_out() -> None:
    troubles = grace.triage((pod("demo-db-1", since=after(-100)), pod("demo-db-2", since=after(-10))), T0, 120)
    assert troubles.recheck_at == after(20)


# --- what the status says while a pod waits ----------------------------------------


def test_a_shard_pod_waiting_to_be_scheduled_is_progress_not_damage() -> None:
    decision = provisioning(pod(), now=after(5))
    assert condition(decision, "Degraded") == (False, "AsExpected")
    assert condition(decision, "Progressing") == (True, "Provisioning")
    assert message(decision, "Progressing") == "2/3 shards ready; 1 shard pod waiting to be scheduled: demo-db-2"


def test_the_grace_is_read_per_sharddb() -> None:
    assert condition(provisioning(pod(), now=after(5), podStartGraceSeconds=5), "Degraded")[0] is True
    assert condition(provisioning(pod(), now=after(5), podStartGraceSeconds=6), "Degraded")[0] is False


def test_the_default_grace_is_two_minutes_and_at_most_an_hour() -> None:
    assert spec().pod_start_grace_seconds == DEFAULT_POD_START_GRACE_SECONDS == 120
    assert MAX_POD_START_GRACE_SECONDS == 3600


def test_once_the_grace_runs_out_degraded_names_the_pod_and_the_schedulers_message() -> None:
    decision = provisioning(pod(), now=after(DEFAULT_POD_START_GRACE_SECONDS))
    assert condition(decision, "Degraded") == (True, "ShardPodsFailing")
    assert message(decision, "Degraded") == f"shard pods cannot start: demo-db-2: Unschedulable ({SCHEDULER})"
    assert message(decision, "Progressing") == "2/3 shards ready"
    assert decision.recheck_at is None


def test_a_waiting_pod_asks_to_be_checked_when_its_grace_runs_out() -> None:
    assert provisioning(pod(), now=after(5)).recheck_at == after(DEFAULT_POD_START_GRACE_SECONDS)


def test_within_the_grace_the_conditions_do_not_change_as_time_passes() -> None:
    early = provisioning(pod(), now=after(1)).conditions
    assert provisioning(pod(), now=after(DEFAULT_POD_START_GRACE_SECONDS - 1)).conditions == early


def test_a_pod_that_cannot_pull_its_image_is_damage_even_when_new() -> None:
    decision = provisioning(pod(reason="ImagePullBackOff"), now=T0)
    assert condition(decision, "Degraded") == (True, "ShardPodsFailing")
    assert "waiting" not in message(decision, "Progressing")


def test_waiting_and_failing_pods_are_told_apart() -> None:
    decision = provisioning(pod("demo-db-1", reason="CrashLoopBackOff"), pod("demo-db-2"), now=after(5))
    assert "demo-db-1: CrashLoopBackOff" in message(decision, "Degraded")
    assert "demo-db-2" not in message(decision, "Degraded")
    assert message(decision, "Progressing").endswith("1 shard pod waiting to be scheduled: demo-db-2")


def test_a_cache_pod_waiting_for_its_secret_keeps_an_otherwise_complete_sharddb_progressing() -> None:
    waiting = pod("demo-cache-7c9f-0", reason="CreateContainerConfigError", component="cache")
    decision = decide(available(stuck_pods=(waiting,), now=after(5)))
    assert condition(decision, "Progressing") == (True, "PodsStarting")
    assert message(decision, "Progressing") == "1 cache pod waiting for a Secret or ConfigMap: demo-cache-7c9f-0"
    assert condition(decision, "Degraded") == (False, "AsExpected")


def test_a_shard_replaced_by_a_rollout_may_wait_for_a_node_without_an_outage() -> None:
    decision = decide(available(statefulset=rolling(), registered=frozenset({0, 1}), stuck_pods=(pod(),), now=T0))
    assert condition(decision, "Available") == (True, "Ready")
    assert condition(decision, "Degraded") == (False, "AsExpected")
    assert condition(decision, "Progressing") == (True, "RollingUpdate")


def test_a_failed_seed_stays_a_stop_while_a_pod_waits() -> None:
    failed = snapshot(
        statefulset=sts(ready=2),
        seed_jobs=(SeedJobView(3, succeeded=False, failed=True),),
        stuck_pods=(pod(),),
        now=after(5),
    )
    assert condition(decide(failed), "Progressing") == (False, "SeedFailed")


def test_a_paused_sharddb_still_asks_to_be_checked_when_a_grace_runs_out() -> None:
    decision = decide(snapshot(spec=spec(paused=True), statefulset=sts(ready=2), stuck_pods=(pod(),), now=T0))
    assert condition(decision, "Progressing") == (False, "Paused")
    assert decision.recheck_at == after(DEFAULT_POD_START_GRACE_SECONDS)


def test_a_teardown_asks_no_recheck_for_waiting_pods() -> None:
    observed = snapshot(statefulset=sts(ready=2), stuck_pods=(pod(),), now=T0)
    assert decide(replace(observed, finalizing=True)).recheck_at is None
    assert decide(replace(observed, spec=spec(hibernated=True))).recheck_at is None
    assert decide(replace(observed, finalizing=True)).phase == Phase.DRAINING_SHARDS


# --- the Progressing message ---------------------------------------------------------


def test_the_waiting_message_counts_and_names_pods_per_component_and_trouble() -> None:
    waiting = (
        pod("demo-cache-7c9f-0", component="cache"),
        pod("demo-db-1"),
        pod("demo-db-2"),
        pod("demo-db-4", reason="CreateContainerConfigError"),
    )
    assert stuck_waiting(waiting) == (
        "2 shard pods waiting to be scheduled: demo-db-1, demo-db-2; "
        "1 shard pod waiting for a Secret or ConfigMap: demo-db-4; "
        "1 cache pod waiting to be scheduled: demo-cache-7c9f-0"
    )


def test_the_waiting_message_names_three_pods_and_counts_the_rest() -> None:
    waiting = tuple(pod(f"demo-db-{ordinal}") for ordinal in range(3, 16))
    assert stuck_waiting(waiting) == (
        "13 shard pods waiting to be scheduled: demo-db-3, demo-db-4, demo-db-5 and 10 more"
    )


# --- when to ask again ----------------------------------------------------------------


def test_the_recheck_comes_in_whole_seconds_at_or_after_the_grace() -> None:
    assert recheck_after(after(120), after(0.5)) == 120.0


def test_the_recheck_is_never_sooner_than_a_second() -> None:
    assert recheck_after(after(120), after(120)) == MIN_RECHECK_SECONDS == 1.0


def test_the_recheck_is_never_later_than_the_longest_grace() -> None:
    assert recheck_after(after(10**9), T0) == float(MAX_POD_START_GRACE_SECONDS)
