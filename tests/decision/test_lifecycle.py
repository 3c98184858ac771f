"""The lifecycle decision, gate by gate and rule by rule, without HTTP."""

from __future__ import annotations

from dataclasses import replace

from hooks import pod_templates
from hooks.lifecycle import Phase, decide
from hooks.trouble.stuck import StuckPod
from hooks.workloads import Rollout, SeedJobView, StatefulSetView

from ..support.snapshots import available, cache, condition, rolling, snapshot, spec, sts

# --- provisioning -------------------------------------------------------------


def test_fresh_sharddb_asks_for_the_shards_and_nothing_else() -> None:
    decision = decide(snapshot())
    assert decision.phase == Phase.PROVISIONING
    assert decision.shards == 3
    assert decision.seed_jobs == ()
    assert decision.cache_replicas is None


def test_no_seed_job_while_any_shard_is_unready() -> None:
    decision = decide(snapshot(statefulset=sts(ready=2)))
    assert decision.seed_jobs == ()
    assert decision.phase == Phase.PROVISIONING


def test_progressing_reports_ready_count_while_provisioning() -> None:
    decision = decide(snapshot(statefulset=sts(ready=1)))
    assert condition(decision, "Progressing") == (True, "Provisioning")
    assert "1/3 shards ready" in next(c.message for c in decision.conditions if c.type == "Progressing")


# --- seeding ------------------------------------------------------------------


def test_seed_job_starts_once_every_shard_is_ready() -> None:
    decision = decide(snapshot(statefulset=sts(ready=3)))
    assert decision.seed_jobs == (3,)
    assert decision.phase == Phase.SEEDING
    assert decision.cache_replicas is None


def test_running_seed_job_is_kept_and_cache_waits() -> None:
    decision = decide(snapshot(statefulset=sts(), seed_jobs=(SeedJobView(3, succeeded=False, failed=False),)))
    assert decision.seed_jobs == (3,)
    assert decision.cache_replicas is None
    assert decision.phase == Phase.SEEDING


def test_finished_seed_job_is_kept_as_a_child() -> None:
    decision = decide(snapshot(statefulset=sts(), seed_jobs=(SeedJobView(3, succeeded=True, failed=False),)))
    assert decision.seed_jobs == (3,)
    assert decision.seeded_shards == 3


def test_seed_job_deleted_after_success_is_not_recreated() -> None:
    decision = decide(snapshot(statefulset=sts(seeded=3), prior_seeded=3))
    assert decision.seed_jobs == ()
    assert decision.seeded_shards == 3


def test_stale_parent_status_does_not_rerun_seed_remembered_on_statefulset() -> None:
    decision = decide(snapshot(statefulset=sts(seeded=3), prior_seeded=0))
    assert decision.seed_jobs == ()
    assert decision.seeded_shards == 3


def test_failed_seed_surfaces_as_degraded_and_blocks_the_cache() -> None:
    decision = decide(
        snapshot(
            statefulset=sts(),
            seed_jobs=(SeedJobView(3, succeeded=False, failed=True),),
            registered=frozenset({0, 1, 2}),
        )
    )
    assert condition(decision, "Degraded") == (True, "SeedFailed")
    assert condition(decision, "Progressing") == (False, "SeedFailed")
    assert decision.cache_replicas is None
    assert decision.seed_jobs == (3,)  # kept for its logs; deleting it retries


# --- registering --------------------------------------------------------------


def test_cache_waits_until_every_shard_is_registered_in_discovery() -> None:
    decision = decide(snapshot(statefulset=sts(seeded=3), registered=frozenset({0, 2})))
    assert decision.phase == Phase.REGISTERING
    assert decision.cache_replicas is None
    assert decision.registered_shards == 2


def test_endpoints_of_other_ordinals_do_not_count_as_registration() -> None:
    decision = decide(snapshot(statefulset=sts(seeded=3), registered=frozenset({0, 1, 7})))
    assert decision.cache_replicas is None
    assert decision.registered_shards == 2


# --- cache ----------------------------------------------------------------------


def test_cache_starts_when_shards_are_ready_seeded_and_registered() -> None:
    decision = decide(snapshot(statefulset=sts(seeded=3), registered=frozenset({0, 1, 2})))
    assert decision.cache_replicas == 2
    assert decision.phase == Phase.STARTING_CACHE
    assert condition(decision, "Available") == (False, "StartingCache")


def test_cache_that_exists_but_is_not_ready_holds_availability() -> None:
    decision = decide(available(cache=cache(ready=1)))
    assert decision.phase == Phase.STARTING_CACHE
    assert condition(decision, "Available") == (False, "CacheNotReady")


def test_ready_cache_makes_the_sharddb_available() -> None:
    decision = decide(available())
    assert decision.phase == Phase.AVAILABLE
    assert decision.cache_ready
    assert condition(decision, "Available") == (True, "Ready")
    assert condition(decision, "Progressing") == (False, "Complete")
    assert condition(decision, "Degraded") == (False, "AsExpected")


def test_flapping_shard_keeps_the_cache_and_degrades() -> None:
    decision = decide(available(statefulset=sts(ready=2, seeded=3), registered=frozenset({0, 1})))
    assert decision.cache_replicas == 2
    assert condition(decision, "Degraded") == (True, "ShardsUnavailable")
    assert condition(decision, "Available") == (False, "ShardsUnavailable")


def test_cache_replica_change_flows_to_the_deployment() -> None:
    decision = decide(available(spec=spec(cache={"image": "redis:7", "replicas": 5})))
    assert decision.cache_replicas == 5
    assert decision.phase == Phase.STARTING_CACHE


def test_stuck_cache_rollout_degrades() -> None:
    decision = decide(available(cache=cache(ready=1, stuck=True)))
    assert condition(decision, "Degraded") == (True, "CacheRolloutStuck")


def test_cache_scaled_to_zero_by_spec_still_counts_as_ready() -> None:
    decision = decide(available(spec=spec(cache={"image": "redis:7", "replicas": 0}), cache=cache(0, 0)))
    assert decision.cache_replicas == 0
    assert decision.phase == Phase.AVAILABLE


# --- scaling ---------------------------------------------------------------------


def test_scale_up_grows_the_statefulset_and_keeps_the_cache() -> None:
    decision = decide(available(spec=spec(shards=5)))
    assert decision.shards == 5
    assert decision.cache_replicas == 2
    assert decision.seed_jobs == (3,)
    assert decision.phase == Phase.PROVISIONING
    assert condition(decision, "Available") == (True, "Ready")  # the 3 seeded shards still serve


def test_scale_up_runs_a_new_seed_job_for_the_new_count_once_new_shards_are_ready() -> None:
    decision = decide(available(spec=spec(shards=5), statefulset=sts(replicas=5, ready=5, seeded=3)))
    assert decision.seed_jobs == (3, 5)
    assert decision.phase == Phase.SEEDING


def test_scale_up_during_a_seed_waits_for_that_seed_to_end() -> None:
    running = snapshot(
        spec=spec(shards=5),
        statefulset=sts(replicas=5, ready=5),
        seed_jobs=(SeedJobView(3, succeeded=False, failed=False),),
    )
    assert decide(running).seed_jobs == (3,)
    finished = snapshot(
        spec=spec(shards=5),
        statefulset=sts(replicas=5, ready=5),
        seed_jobs=(SeedJobView(3, succeeded=True, failed=False),),
    )
    assert decide(finished).seed_jobs == (3, 5)


def test_scale_up_seeded_but_unregistered_shards_hold_the_phase() -> None:
    decision = decide(
        available(
            spec=spec(shards=5),
            statefulset=sts(replicas=5, ready=5, seeded=5),
            seed_jobs=(SeedJobView(3, True, False), SeedJobView(5, True, False)),
        )
    )
    assert decision.phase == Phase.REGISTERING
    assert condition(decision, "Degraded") == (False, "AsExpected")
    assert condition(decision, "Available") == (True, "Ready")


def test_shrink_is_refused_and_explained() -> None:
    decision = decide(available(spec=spec(shards=2)))
    assert decision.shards == 3
    status, reason = condition(decision, "Degraded")
    assert (status, reason) == (True, "ShrinkRefused")
    message = next(c.message for c in decision.conditions if c.type == "Degraded")
    assert "spec.shards=2" in message


def test_storage_change_keeps_the_observed_volume_claims() -> None:
    decision = decide(available(spec=spec(storage={"size": "50Gi"})))
    assert decision.storage_size == "1Gi"
    assert condition(decision, "Degraded") == (True, "StorageImmutable")


def test_storage_comes_from_spec_before_the_statefulset_exists() -> None:
    decision = decide(snapshot(spec=spec(storage={"size": "20Gi", "storageClassName": "fast"})))
    assert (decision.storage_size, decision.storage_class) == ("20Gi", "fast")


# --- finalize --------------------------------------------------------------------


def test_finalize_scales_the_cache_to_zero_first_and_leaves_shards_alone() -> None:
    decision = decide(available(finalizing=True))
    assert decision.cache_replicas == 0
    assert decision.shards == 3
    assert decision.phase == Phase.DRAINING_CACHE
    assert not decision.finalized


def test_finalize_waits_for_terminating_cache_pods() -> None:
    decision = decide(available(finalizing=True, cache=cache(replicas=0, ready=0, status_replicas=0), cache_pods=1))
    assert decision.shards == 3
    assert decision.phase == Phase.DRAINING_CACHE


def test_finalize_waits_while_the_deployment_reports_replicas() -> None:
    decision = decide(available(finalizing=True, cache=cache(replicas=0, ready=0, status_replicas=1), cache_pods=0))
    assert decision.shards == 3


def test_finalize_scales_shards_to_zero_once_the_cache_is_gone() -> None:
    decision = decide(available(finalizing=True, cache=cache(0, 0, 0), cache_pods=0))
    assert decision.shards == 0
    assert decision.phase == Phase.DRAINING_SHARDS
    assert not decision.finalized


def test_finalize_completes_only_when_no_shard_pod_remains() -> None:
    waiting = decide(
        available(finalizing=True, cache=cache(0, 0, 0), cache_pods=0, statefulset=sts(0, 0, 3, 0), shard_pods=1)
    )
    done = decide(
        available(finalizing=True, cache=cache(0, 0, 0), cache_pods=0, statefulset=sts(0, 0, 3, 0), shard_pods=0)
    )
    assert not waiting.finalized
    assert done.finalized
    assert done.phase == Phase.FINALIZED


def test_finalize_never_grows_the_statefulset() -> None:
    decision = decide(available(finalizing=True, spec=spec(shards=9)))
    assert decision.shards == 3


def test_finalize_never_creates_the_cache_or_a_seed_job() -> None:
    decision = decide(snapshot(finalizing=True, statefulset=sts(), shard_pods=3))
    assert decision.cache_replicas is None
    assert decision.seed_jobs == ()
    assert decision.shards == 0


def test_finalize_reports_not_available() -> None:
    decision = decide(available(finalizing=True))
    assert condition(decision, "Available") == (False, "Deleting")
    assert condition(decision, "Progressing") == (True, "DrainingCache")


# --- rollouts -----------------------------------------------------------------


def stuck_pod(name: str = "demo-db-2", component: str = "db", reason: str = "CrashLoopBackOff") -> StuckPod:
    return StuckPod(name, component, reason, "container db exited 1")


def test_shard_rollout_is_progress_not_damage() -> None:
    decision = decide(available(statefulset=rolling(), registered=frozenset({0, 1})))
    assert condition(decision, "Progressing") == (True, "RollingUpdate")
    assert condition(decision, "Degraded") == (False, "AsExpected")


def test_shard_rollout_keeps_the_sharddb_available_with_one_shard_restarting() -> None:
    decision = decide(available(statefulset=rolling(), registered=frozenset({0, 1})))
    assert decision.phase == Phase.AVAILABLE
    assert condition(decision, "Available") == (True, "Ready")


def test_shard_rollout_reports_how_many_shards_are_updated() -> None:
    decision = decide(available(statefulset=rolling(updated=2)))
    progressing = next(c for c in decision.conditions if c.type == "Progressing")
    assert progressing.message.startswith("2/3 shards updated")
    assert decision.updated_shards == 2
    assert decision.update_revision == "r2"


def unread(view: StatefulSetView) -> StatefulSetView:
    """A StatefulSet just written: its status is still the last generation's, every pod on its revision."""
    return replace(view, rollout=replace(view.rollout, generation=view.rollout.observed_generation + 1))


def test_a_template_its_controller_has_not_read_is_not_a_complete_rollout() -> None:
    decision = decide(available(statefulset=unread(sts(seeded=3))))
    assert condition(decision, "Progressing") == (True, "StatefulSetUpdated")
    progressing = next(c for c in decision.conditions if c.type == "Progressing")
    assert progressing.message == "the StatefulSet's controller has not yet observed its generation 2"


def test_a_template_its_controller_has_not_read_keeps_the_sharddb_available() -> None:
    decision = decide(available(statefulset=unread(sts(seeded=3))))
    assert decision.phase == Phase.AVAILABLE
    assert condition(decision, "Available") == (True, "Ready")
    assert condition(decision, "Degraded") == (False, "AsExpected")


def test_a_rollout_is_complete_once_its_controller_has_read_the_template_and_updated_every_shard() -> None:
    decision = decide(available())
    assert condition(decision, "Progressing") == (False, "Complete")


def test_two_shards_down_during_a_rollout_is_damage() -> None:
    decision = decide(available(statefulset=rolling(ready=1), registered=frozenset({0})))
    assert condition(decision, "Available")[0] is False
    assert condition(decision, "Degraded") == (True, "ShardsUnavailable")


def test_crash_looping_shard_during_a_rollout_is_damage() -> None:
    decision = decide(available(statefulset=rolling(), registered=frozenset({0, 1}), stuck_pods=(stuck_pod(),)))
    assert condition(decision, "Available")[0] is False
    status, reason = condition(decision, "Degraded")
    assert (status, reason) == (True, "ShardPodsFailing")
    assert "demo-db-2: CrashLoopBackOff" in next(c for c in decision.conditions if c.type == "Degraded").message


def test_pod_that_cannot_pull_its_image_degrades_with_its_reason() -> None:
    decision = decide(snapshot(statefulset=sts(ready=2), stuck_pods=(stuck_pod(reason="ImagePullBackOff"),)))
    assert condition(decision, "Degraded") == (True, "ShardPodsFailing")


def test_changed_db_image_starts_a_rollout_at_once() -> None:
    decision = decide(replace(available(), spec=spec(dbImage="postgres:17")))
    assert condition(decision, "Progressing") == (True, "RollingUpdate")
    assert condition(decision, "Available") == (True, "Ready")


def test_cache_waits_while_the_shards_roll() -> None:
    changed = spec(dbImage="postgres:17", cache={"image": "redis:8", "replicas": 2})
    observed = available()
    decision = decide(replace(observed, spec=changed))
    assert decision.cache_held
    progressing = next(c for c in decision.conditions if c.type == "Progressing")
    assert "the cache rolls after them" in progressing.message


def test_cache_rolls_once_every_shard_is_updated_ready_and_registered() -> None:
    changed = spec(cache={"image": "redis:8", "replicas": 2})
    observed = available()
    sts_view = (
        replace(observed.statefulset, template=pod_templates.db_template("demo", changed))
        if observed.statefulset
        else None
    )
    decision = decide(replace(observed, spec=changed, statefulset=sts_view))
    assert not decision.cache_held
    assert condition(decision, "Progressing") == (True, "RollingUpdate")


def test_cache_only_change_is_not_held_by_a_shard_that_is_fine() -> None:
    decision = decide(replace(available(), spec=spec(cache={"image": "redis:8", "replicas": 2})))
    assert not decision.cache_held


def test_cache_rollout_in_progress_is_reported() -> None:
    observed = available(cache=replace(cache(), rollout=Rollout(generation=2, observed_generation=2, updated=1)))
    decision = decide(observed)
    assert condition(decision, "Progressing") == (True, "RollingUpdate")
    assert decision.cache_updated_replicas == 1


# --- pause ----------------------------------------------------------------------


def test_paused_sharddb_freezes_its_children() -> None:
    decision = decide(available(spec=spec(paused=True, shards=5)))
    assert decision.frozen
    assert condition(decision, "Progressing") == (False, "Paused")


def test_paused_sharddb_still_reports_availability() -> None:
    decision = decide(available(spec=spec(paused=True)))
    assert condition(decision, "Available") == (True, "Ready")


def test_paused_sharddb_still_tears_down_on_delete() -> None:
    decision = decide(available(spec=spec(paused=True), finalizing=True))
    assert not decision.frozen
    assert decision.phase == Phase.DRAINING_CACHE
    assert decision.cache_replicas == 0


# --- hibernation ----------------------------------------------------------------


def test_hibernation_scales_the_cache_down_first_and_keeps_the_shards() -> None:
    decision = decide(available(spec=spec(hibernated=True), budgets=frozenset({"db", "cache"})))
    assert decision.phase == Phase.HIBERNATING
    assert decision.cache_replicas == 0
    assert decision.shards == 3
    assert decision.budgets == frozenset()
    assert not decision.cache_service


def test_hibernation_lets_a_drained_cache_go() -> None:
    drained = cache(replicas=0, ready=0, status_replicas=0)
    decision = decide(available(spec=spec(hibernated=True), cache=drained, cache_pods=0))
    assert decision.cache_replicas is None
    assert decision.shards == 3


def test_hibernation_stops_the_shards_once_the_cache_is_gone() -> None:
    decision = decide(available(spec=spec(hibernated=True), cache=None, cache_pods=0))
    assert decision.shards == 0
    assert decision.phase == Phase.HIBERNATING


def test_hibernated_when_no_pod_remains_and_seed_memory_is_kept() -> None:
    asleep = sts(replicas=0, ready=0, seeded=3)
    decision = decide(available(spec=spec(hibernated=True), cache=None, cache_pods=0, shard_pods=0, statefulset=asleep))
    assert decision.phase == Phase.HIBERNATED
    assert decision.seeded_shards == 3
    assert decision.seed_jobs == (3,)
    assert condition(decision, "Progressing") == (False, "Hibernated")


def test_hibernation_waits_for_a_running_seed() -> None:
    running = (SeedJobView(3, succeeded=False, failed=False),)
    decision = decide(snapshot(spec=spec(hibernated=True), statefulset=sts(), seed_jobs=running, shard_pods=3))
    assert decision.shards == 3
    assert decision.seed_jobs == (3,)


def test_waking_brings_shards_back_without_a_new_seed() -> None:
    asleep = sts(replicas=0, ready=0, seeded=3)
    decision = decide(snapshot(statefulset=asleep, seed_jobs=(SeedJobView(3, succeeded=True, failed=False),)))
    assert decision.shards == 3
    assert decision.seed_jobs == (3,)
    assert decision.cache_replicas is None
    assert decision.phase == Phase.PROVISIONING
