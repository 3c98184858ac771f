"""DESIGN.md's rules, checked on every generated observed world (no HTTP: the pure handler).

Each world is any mix of present, absent and half-ready children, related pods
Terminating or not, stale or unreadable parent status, hook v1 or v2 keys,
finalizing or not (see ``strategies.py``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from hooks import handler

from . import kube_schema
from .strategies import Observed, observed_worlds

Obj = dict[str, Any]
NOW = "2026-01-01T00:00:00Z"
LATER = "2031-07-07T07:07:07Z"


def worlds(count: int) -> settings:
    """``count`` generated worlds per test; a few milliseconds each, most of it generation."""
    return settings(max_examples=count, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(request: Obj, finalize: bool, now: str = NOW) -> Obj:
    return handler.sync(json.dumps(request).encode(), finalize=finalize, now=lambda: now).body


def desired(body: Obj, kind: str) -> list[Obj]:
    return [c for c in body["children"] if c["kind"] == kind]


def one(body: Obj, kind: str, name: str | None = None) -> Obj | None:
    found = [c for c in desired(body, kind) if name is None or c["metadata"]["name"] == name]
    assert len(found) <= 1, f"{len(found)} {kind}s desired"
    return found[0] if found else None


def seed_counts(body: Obj, name: str) -> set[int]:
    prefix = f"{name}-seed-"
    return {int(job["metadata"]["name"].removeprefix(prefix)) for job in desired(body, "Job")}


pytestmark = pytest.mark.slow


@worlds(2500)
@given(observed_worlds())
def test_every_generated_world_obeys_the_design_rules(world: Observed) -> None:
    truth = world.truth
    body = run(world.request, world.finalize)
    finalized = body.get("finalized", False)
    sts = one(body, "StatefulSet")
    cache = one(body, "Deployment")

    # StatefulSet and Service are always returned until finalized.
    if not finalized:
        assert sts is not None
        assert one(body, "Service", f"{truth.name}-db") is not None
    replicas = sts["spec"]["replicas"] if sts else 0

    # A seed Job that is observed is never dropped (it is the memory of a finished seed).
    assert truth.jobs <= seed_counts(body, truth.name)
    new_jobs = seed_counts(body, truth.name) - truth.jobs
    if truth.finalizing:
        # Teardown creates nothing and never grows the shards.
        assert not new_jobs
        assert cache is None or cache["spec"]["replicas"] == 0
        assert replicas <= (truth.sts_replicas or 0)
        if truth.cache_observed and not finalized:
            assert cache is not None, "finalize dropped the cache before it drained"
        # Never lower the StatefulSet while any cache pod exists.
        if truth.cache_pods:
            assert replicas == (truth.sts_replicas or 0)
        # Never finalized while any shard or cache pod exists.
        if truth.cache_pods or truth.shard_pods:
            assert not finalized
    else:
        assert "finalized" not in body
        # Shards never shrink.
        assert replicas >= max(truth.spec_shards, truth.sts_replicas or 0)
        # No seed re-run: a new seed Job only for a count nobody remembers seeding.
        assert all(count > truth.seeded for count in new_jobs), (new_jobs, truth.seeded)
        # The cache, once observed, is always returned.
        if truth.cache_observed:
            assert cache is not None
        # Never before its gates: every shard ready, seeded, and registered in discovery.
        if cache is not None and not truth.cache_observed:
            assert truth.sts_replicas is not None
            assert truth.sts_ready >= replicas
            assert truth.seeded >= replicas
            assert set(range(replicas)) <= truth.registered
            assert cache["spec"]["replicas"] == truth.cache_replicas


@worlds(800)
@given(observed_worlds())
def test_the_same_request_gets_the_same_bytes(world: Observed) -> None:
    encoded = json.dumps(world.request).encode()
    first = handler.sync(encoded, finalize=world.finalize, now=lambda: NOW).body
    second = handler.sync(encoded, finalize=world.finalize, now=lambda: NOW).body
    assert json.dumps(first, sort_keys=False) == json.dumps(second, sort_keys=False)


@worlds(1200)
@given(observed_worlds())
def test_the_status_is_a_fixed_point_and_the_clock_is_not_read_again(world: Observed) -> None:
    body = run(world.request, world.finalize)
    again = copy.deepcopy(world.request)
    again["parent"]["status"] = {**body["status"], "observedGeneration": again["parent"]["metadata"]["generation"]}
    assert run(again, world.finalize, now=LATER)["status"] == body["status"]


@worlds(800)
@given(observed_worlds())
def test_every_child_passes_the_kubernetes_schema_of_its_kind(world: Observed) -> None:
    body = run(world.request, world.finalize)
    for child in body["children"]:
        assert not kube_schema.problems(child), (child["kind"], kube_schema.problems(child))
        # Apply-style: never a copy of an observed object.
        assert set(child) <= {"apiVersion", "kind", "metadata", "spec"}
        assert not {"uid", "resourceVersion", "managedFields", "ownerReferences"} & set(child["metadata"])


@worlds(1200)
@given(observed_worlds())
def test_finalize_completes_exactly_when_cache_and_shards_are_gone(world: Observed) -> None:
    """Safety (never early) and liveness (never stuck once nothing is left) of teardown."""
    truth = world.truth
    gone = (
        not truth.cache_pods
        and not truth.shard_pods
        and truth.cache_at_zero in (None, True)
        and truth.sts_at_zero in (None, True)
    )
    assert run(world.request, finalize=True)["finalized"] == gone
