"""Bring-up through the real Metacontroller: shards together, then the seed, then the cache; then silence."""

from __future__ import annotations

import time

from testbed.real.audit import Write, tally
from testbed.stack import CONTROLLER_MANAGER, NODE, Stack

from ..support.sharddbs import ShardDBs, is_true
from .conftest import Report

NAME = "shop"


def _first(writes: list[Write], what: str, **match: str) -> Write:
    found = [w for w in writes if all(getattr(w, key) == value for key, value in match.items())]
    assert found, f"no {what} in the audit log"
    return found[0]


def test_bring_up_starts_the_shards_together_then_seeds_then_starts_the_cache(
    stack: Stack, sharddbs: ShardDBs, report: Report
) -> None:
    mark = stack.audit.mark()
    with sharddbs.history(NAME) as seen:
        start = time.monotonic()
        sharddbs.create(NAME)
        sharddbs.available(NAME)
        seconds = time.monotonic() - start
    assert not any(is_true(version, "Degraded") for version in seen), "Degraded during a healthy bring-up"

    log = stack.audit.since(mark, namespace=sharddbs.namespace)
    shard_pods = [w for w in log if w.user == CONTROLLER_MANAGER and w.resource == "pods" and w.verb == "create"]
    assert sorted(w.name for w in shard_pods if w.name.startswith(f"{NAME}-db-")) == [
        f"{NAME}-db-{i}" for i in range(3)
    ]
    created = [w.at for w in shard_pods if w.name.startswith(f"{NAME}-db-")]
    assert (max(created) - min(created)).total_seconds() < 1.0, "shard pods were not created together"

    ready = [w for w in log if w.user == NODE and w.subresource == "status" and w.name.startswith(f"{NAME}-db-")]
    seed = _first(log, "seed Job create", resource="jobs", verb="create", name=f"{NAME}-seed-3")
    assert seed.user.startswith("sharddb-metacontroller")
    assert {w.name for w in ready if w.at < seed.at} == {f"{NAME}-db-{i}" for i in range(3)}, (
        "seed before every shard ran"
    )

    cache = _first(log, "cache Deployment create", resource="deployments", verb="create", name=f"{NAME}-cache")
    seed_done = [
        w for w in log if w.user == NODE and w.subresource == "status" and w.name.startswith(f"{NAME}-seed-3-")
    ]
    registered = [w for w in log if w.user == CONTROLLER_MANAGER and w.resource == "endpointslices"]
    assert seed_done, "the seed pod never finished"
    assert max(w.at for w in seed_done) < cache.at, "cache before the seed finished"
    assert registered, "the shards were never registered in discovery"
    assert min(w.at for w in registered) < cache.at, "cache before the shards were in discovery"

    parent = sharddbs.get(NAME)
    assert parent["status"]["readyShards"] == 3
    assert parent["status"]["cacheReady"] is True
    assert not is_true(parent, "Degraded")
    mine = [w for w in log if w.user.startswith("sharddb-metacontroller")]
    report(f"Available in {seconds:.1f} s, {len(mine)} Metacontroller writes {dict(tally(mine))}")


def test_an_available_sharddb_costs_no_writes_while_idle(stack: Stack, sharddbs: ShardDBs) -> None:
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    time.sleep(3)  # the last status and seed-memory writes of the bring-up settle
    mark, calls = stack.audit.mark(), stack.hook_calls()
    time.sleep(12)  # more than two resyncs
    assert stack.hook_calls() > calls, "no hook call in the idle window: nothing was checked"
    assert [str(w) for w in stack.metacontroller_writes(mark, namespace=sharddbs.namespace, ok=False)] == []


def test_a_node_agent_started_again_moves_no_running_pod_and_costs_no_write(stack: Stack, sharddbs: ShardDBs) -> None:
    """A kubelet that restarts finds its pods' sandboxes as they were: no address or readiness moves, so no
    EndpointSlice and no ShardDB status follows (a fault campaign once saw every address change, and its idle
    window the status writes that came of it)."""
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    time.sleep(3)  # the last status and seed-memory writes of the bring-up settle
    addresses = {p["metadata"]["name"]: p["status"]["podIP"] for p in sharddbs.items("Pod") if p["status"].get("podIP")}
    mark = stack.audit.mark()
    stack.restart_node_agent()
    time.sleep(6)  # the new agent has listed its pods and acted on each (its start action is due at once)
    after = {p["metadata"]["name"]: p["status"].get("podIP") for p in sharddbs.items("Pod")}
    assert {name: after.get(name) for name in addresses} == addresses
    moved = [w for w in stack.audit.since(mark, namespace=sharddbs.namespace, ok=False) if w.resource == "pods"]
    assert [str(w) for w in moved] == []
    assert [str(w) for w in stack.metacontroller_writes(mark, namespace=sharddbs.namespace, ok=False)] == []
