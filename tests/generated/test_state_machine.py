"""Random event orders against the stand-in cluster: the ShardDB always ends Available or finalized.

Hypothesis interleaves hook rounds with cluster events (shards flapping, seed
Jobs failing or vanishing, pods terminating or stuck, registration lagging, spec
edits, stale parent status, deletion at any moment) and time passing. Every
answer is checked against the rules as it is applied; at the end a fair
scheduler lets every controller do its job and the ShardDB must converge.
"""

from __future__ import annotations

import copy
import json
import math
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from hooks import handler
from hooks.clock import rfc3339
from testbed.models.world import FAILURES, GROUP_KEYS, Obj, World, sharddb

from ..support.hook import ManualClock

pytestmark = pytest.mark.slow

MAX_SHARDS = 6
CONVERGENCE_ROUNDS = 40
# Troubles that may pass by themselves (docs/api/status.md, Pods that wait to start): they wait for the grace.
PASSING = frozenset({"Unschedulable", "CreateContainerConfigError"})
LEADS = {"db": "shard pods cannot start: ", "cache": "cache pods cannot start: "}


class ShardDBLifecycle(RuleBasedStateMachine):
    world: World

    def __init__(self) -> None:
        super().__init__()
        # Shard counts the hook has seen seeded (a Complete Job in a request it answered). A Job
        # deleted before any hook call saw it finish leaves no trace anywhere, so only these count.
        self.seeded: set[int] = set()
        self.statuses: list[Obj] = []  # every status written, for stale reads
        self.rounds = 0
        self.delete_after = 0
        self.clock = ManualClock()
        self.grace = 0
        # Pods made stuck, by name: the trouble, since when, and the resourceVersion that says it still holds.
        self.troubles: dict[str, tuple[str, datetime, str]] = {}

    @initialize(
        shards=st.integers(1, 4),
        cache_replicas=st.integers(0, 3),
        hook_version=st.sampled_from(["v1", "v2"]),
        delete_after=st.integers(0, 12),
        grace=st.sampled_from([0, 5, 120, 120]),
    )
    def create(self, shards: int, cache_replicas: int, hook_version: str, delete_after: int, grace: int) -> None:
        self.delete_after = delete_after  # hook rounds before deletion may arrive: early, mid-seed, or late
        self.grace = grace
        cache = {"image": "redis:7", "replicas": cache_replicas}
        parent = sharddb(shards=shards, cache=cache, podStartGraceSeconds=grace)
        self.world = World(parent, hook_version=hook_version)

    def _hook(self, request: Obj, finalizing: bool) -> Obj:
        body = json.dumps(request).encode()
        return handler.sync(body, finalize=finalizing, now=self.clock).body

    # --- Metacontroller ------------------------------------------------------------

    @precondition(lambda self: not self.world.finalized)  # after that the ShardDB is gone
    @rule()
    def sync(self) -> None:
        self._round()

    @precondition(lambda self: not self.world.finalized)
    @rule()
    def everything_catches_up(self) -> None:
        """One fair round, so walks reach the later phases before the next surprise."""
        self._round()
        self._controllers()

    @precondition(lambda self: len(self.statuses) > 1 and not self.world.finalized)
    @rule(data=st.data())
    def stale_parent_status(self, data: st.DataObject) -> None:
        """Metacontroller's informer may hand the hook an older parent, status included."""
        self.world.parent["status"] = copy.deepcopy(data.draw(st.sampled_from(self.statuses[:-1])))

    # --- cluster controllers and people ----------------------------------------------

    @rule(ready=st.one_of(st.none(), st.integers(0, MAX_SHARDS)))
    def statefulset_controller(self, ready: int | None) -> None:
        self.world.run_statefulset(ready)

    @rule(only=st.sets(st.integers(0, MAX_SHARDS - 1)))
    def registration_lags(self, only: set[int]) -> None:
        self.world.publish_endpoints(only=only)

    @precondition(lambda self: any(not job["status"].get("conditions") for job in self.world.jobs()))
    @rule(data=st.data(), succeeded=st.booleans())
    def seed_job_finishes(self, data: st.DataObject, succeeded: bool) -> None:
        running = [job for job in self.world.jobs() if not job["status"].get("conditions")]
        shards = _shards(data.draw(st.sampled_from(running)))
        self.world.finish_job(shards, succeeded=succeeded)

    @precondition(lambda self: bool(self.world.jobs()))
    @rule(data=st.data())
    def seed_job_deleted(self, data: st.DataObject) -> None:
        """A person retrying a failed seed, or a TTL controller cleaning up a finished one."""
        job = data.draw(st.sampled_from(self.world.jobs()))
        del self.world.children[GROUP_KEYS["Job"]][self.world._key(job["metadata"]["name"])]

    @rule(ready=st.one_of(st.none(), st.integers(0, 3)))
    def deployment_controller(self, ready: int | None) -> None:
        self.world.run_cache(ready)

    @precondition(lambda self: _scaled_to_zero_with_pods(self.world))
    @rule()
    def cache_scaled_to_zero_while_pods_flush(self) -> None:
        """The Deployment already reports no replicas; its pods are still Terminating (flushing)."""
        deployment = self.world.cache()
        assert deployment is not None
        self.world.terminate_pods("cache")
        deployment["status"] = {"observedGeneration": deployment["metadata"]["generation"], "replicas": 0}

    @rule(seconds=st.sampled_from([1, 4, 5, 60, 119, 120, 600]))
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @precondition(lambda self: bool(_startable(self.world)))
    @rule(data=st.data(), failure=st.one_of(st.sampled_from(FAILURES), st.sampled_from(sorted(PASSING))))
    def a_new_pod_cannot_start(self, data: st.DataObject, failure: str) -> None:
        """A pod the controller has just made waits for a node or a Secret, or fails outright."""
        name = data.draw(st.sampled_from(_startable(self.world)))
        self.world.fail_pod(name, failure, since=rfc3339(self.clock()))
        self.troubles[name] = (failure, self.clock(), self.world.pods[name]["metadata"]["resourceVersion"])

    @rule(component=st.sampled_from(["db", "cache"]))
    def pods_terminate(self, component: str) -> None:
        self.world.terminate_pods(component)

    @rule(component=st.sampled_from(["db", "cache"]))
    def pods_vanish(self, component: str) -> None:
        self.world.remove_pods(component)

    @precondition(lambda self: not self.world.finalizing)
    @rule(more=st.integers(1, 2))
    def scale_up(self, more: int) -> None:
        self.world.edit_spec(shards=min(MAX_SHARDS, self.world.parent["spec"]["shards"] + more))

    @precondition(lambda self: not self.world.finalizing)
    @rule(image=st.sampled_from(["postgres:16.1", "postgres:17"]))
    def image_bump(self, image: str) -> None:
        self.world.edit_spec(dbImage=image)

    @precondition(lambda self: not self.world.finalizing and self.rounds >= self.delete_after)
    @rule()
    def delete(self) -> None:
        self.world.delete()

    # --- rules checked on every answer -------------------------------------------------

    def _round(self) -> Obj:
        world = self.world
        before = _observed(world)
        live = _live_pods(world)
        request = world.request()
        answer = self._hook(request, world.finalizing)
        self._check_fixed_point(request, answer)
        if not world.finalizing:
            self._check_troubles(answer)
        kinds = {c["kind"] for c in answer["children"]}
        sts = next(c for c in answer["children"] if c["kind"] == "StatefulSet")
        new_jobs = {_shards(c) for c in answer["children"] if c["kind"] == "Job"} - before["jobs"]
        assert not new_jobs & self.seeded, f"seed re-run for {new_jobs & self.seeded} shards"
        assert {"Service", "StatefulSet"} <= kinds
        if world.finalizing:
            assert not new_jobs
            if live["cache"]:
                assert sts["spec"]["replicas"] == before["replicas"], "shards lowered while cache pods exist"
            if answer.get("finalized"):
                assert live == {"db": 0, "cache": 0}, "finalized with pods left"
        else:
            assert sts["spec"]["replicas"] >= before["replicas"], "shards shrank"
            if before["cache"]:
                assert "Deployment" in kinds, "the cache was dropped"
        self.seeded |= before["complete"]
        world.apply(answer)
        self.statuses.append(copy.deepcopy(answer["status"]))
        self.rounds += 1
        return answer

    def _check_fixed_point(self, request: Obj, answer: Obj) -> None:
        """Fed its own status at the same moment, the hook says the same: no condition's time moves."""
        again = copy.deepcopy(request)
        again["parent"]["status"] = {
            **answer["status"],
            "observedGeneration": request["parent"]["metadata"]["generation"],
        }
        assert self._hook(again, request["finalizing"])["status"] == answer["status"]

    def _check_troubles(self, answer: Obj) -> None:
        """A trouble within its grace is never Degraded and is asked about again; one that counts is named."""
        degraded = next(c for c in answer["status"]["conditions"] if c["type"] == "Degraded")
        lefts = []
        for name, (failure, since, _) in self._current_troubles().items():
            component = self.world.pods[name]["metadata"]["labels"]["app.kubernetes.io/component"]
            left = self.grace - (self.clock() - since).total_seconds()
            if failure in PASSING and left > 0:
                event("a pod waits within its grace")
                assert f"{name}: " not in degraded["message"], (name, degraded)
                lefts.append(left)
            else:
                event("a stuck pod counts")
                assert degraded["status"] == "True", (name, failure, degraded)
                assert LEADS[component] in degraded["message"], (name, failure, degraded)
        if lefts:
            assert answer["resyncAfterSeconds"] == max(1, math.ceil(min(lefts))), (lefts, answer)
        else:
            assert "resyncAfterSeconds" not in answer

    def _current_troubles(self) -> dict[str, tuple[str, datetime, str]]:
        """The troubles still on their pods: not replaced by a controller, not Terminating."""
        current = {}
        for name, trouble in self.troubles.items():
            pod = self.world.pods.get(name)
            if pod is None or pod["metadata"]["resourceVersion"] != trouble[2]:
                continue
            if pod["metadata"].get("deletionTimestamp") or pod["status"]["phase"] in ("Succeeded", "Failed"):
                continue
            current[name] = trouble
        return current

    @invariant()
    def finalized_only_while_deleting(self) -> None:
        assert not self.world.finalized or self.world.finalizing

    def _controllers(self) -> None:
        """Every controller does its job once; a failed seed is retried the documented way."""
        world = self.world
        world.run_statefulset()
        for job in world.jobs():
            outcome = {c["type"]: c["status"] for c in job["status"].get("conditions", [])}
            if outcome.get("Failed") == "True":  # inspect, then delete the failed Job to retry
                del world.children[GROUP_KEYS["Job"]][world._key(job["metadata"]["name"])]
            elif not outcome:
                world.finish_job(_shards(job))
        world.run_cache()

    # --- the end: a fair scheduler must converge ------------------------------------------

    def teardown(self) -> None:
        if not hasattr(self, "world"):
            return
        world = self.world
        for _ in range(CONVERGENCE_ROUNDS):
            if world.finalized:
                return
            answer = self._round()
            if not world.finalizing and _available(answer):
                return
            self._controllers()
        status = world.parent.get("status", {})
        raise AssertionError(f"no convergence after {CONVERGENCE_ROUNDS} fair rounds: {status}")


def _shards(job: Obj) -> int:
    return int(job["metadata"]["name"].rsplit("-", 1)[1])


def _observed(world: World) -> dict[str, Any]:
    sts = world.statefulset()
    return {
        "replicas": sts["spec"]["replicas"] if sts else 0,
        "cache": world.cache() is not None,
        "jobs": {_shards(job) for job in world.jobs()},
        "complete": {
            _shards(job)
            for job in world.jobs()
            if any(c["type"] == "Complete" and c["status"] == "True" for c in job["status"].get("conditions", []))
        },
    }


def _scaled_to_zero_with_pods(world: World) -> bool:
    deployment = world.cache()
    return deployment is not None and deployment["spec"]["replicas"] == 0 and bool(world._pods_of("cache"))


def _startable(world: World) -> list[str]:
    """Shard and cache pods that exist, are not Terminating, and so could be stuck starting."""
    return sorted(
        name
        for name, pod in world.pods.items()
        if not pod["metadata"].get("deletionTimestamp")
        and pod["metadata"]["labels"]["app.kubernetes.io/component"] in ("db", "cache")
    )


def _live_pods(world: World) -> dict[str, int]:
    counts = {"db": 0, "cache": 0}
    for pod in world.pods.values():
        if pod["status"]["phase"] not in ("Succeeded", "Failed") or pod["metadata"].get("deletionTimestamp"):
            counts[pod["metadata"]["labels"]["app.kubernetes.io/component"]] += 1
    return counts


def _available(answer: Obj) -> bool:
    available = next(c for c in answer["status"]["conditions"] if c["type"] == "Available")
    return bool(answer["status"]["phase"] == "Available" and available["status"] == "True")


ShardDBLifecycle.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestShardDBLifecycle = ShardDBLifecycle.TestCase
