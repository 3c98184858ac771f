"""Hibernation and wake under a writer: the teardown's order, no failover while stopping, the data and roles kept.

Before it sleeps, the ShardDB gets a ``drainCommand`` that takes 20 s on a standby and nothing on the primary (it
rolls the members): without the stop order, the primary would stop first and its standby, still draining, would
be promoted while its shard stops.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest

from testbed.real.audit import Write

from ...support.sharddbs import wait_until
from ..installs import Install, cache_gone_before_shards
from ..invariants import Kept, Record, Report, Seen
from ..writers import Target, Writers
from .disturbances import whole
from .shard import (
    NAME,
    NAMESPACE,
    PRIMARY_SERVICE,
    BroughtUp,
    leader_changes,
    members,
    primary_and_replica,
    running_primary,
    streaming_standby,
)

Obj = dict[str, Any]
STANDBY_DRAIN_SECONDS = 20
# A drain that a standby takes longer over than its primary: Patroni writes standby.signal in a standby's data folder.
SLOWER_ON_STANDBYS = [
    "sh",
    "-c",
    f"if [ -f /var/lib/postgresql/data/pgdata/standby.signal ]; then sleep {STANDBY_DRAIN_SECONDS}; fi",
]


def pre_stop(pod: Obj) -> list[str]:
    db: Obj = pod["spec"]["containers"][0]
    command: list[str] = db.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    return command


def slower_on_standbys(install: Install) -> None:
    """The drain set, and the members rolled onto it: a primary and a streaming standby, Available, no Job left."""
    patch = json.dumps({"spec": {"drainCommand": SLOWER_ON_STANDBYS}})
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", patch)

    def rolled() -> bool:
        now = members(install)
        roles = sorted("primary" if running_primary(p) else "standby" if streaming_standby(p) else "?" for p in now)
        jobs = [j for j in install.get("jobs", "-n", NAMESPACE)["items"] if "-rollout-" in j["metadata"]["name"]]
        drains = [pre_stop(pod)[-len(SLOWER_ON_STANDBYS) :] for pod in now]
        return roles == ["primary", "standby"] and drains == [SLOWER_ON_STANDBYS] * 2 and not jobs

    wait_until("both members rolled onto the drain slower on standbys", rolled, 400, every=1)
    wait_until(f"{NAME} Available", lambda: install.available(NAMESPACE, NAME), 120, every=1)
    # From a whole shard, where Patroni would promote the standby if the primary stopped first: right after
    # the roll, a standby named synchronous a moment ago was found "not the healthiest node" and never promoted.
    wait_until("a primary and its synchronous standby, both Ready", lambda: whole(install), 120, every=0.5)


def gone_in_order(writes: list[Write]) -> list[str]:
    """The member pods in the order their kubelets removed them (the final delete, from the node)."""
    by_nodes = [w for w in writes if w.user.startswith("system:node:") and w.verb == "delete"]
    return [w.name for w in by_nodes if w.name.startswith(f"{NAME}-db-")]


@dataclass(frozen=True)
class Slept:
    """The ShardDB hibernated under a writer, then woken."""

    cache_gone: list[float]
    members_stopped: list[float]
    changes_while_stopping: int  # primary changes Patroni's history gained while the members stopped
    left_running: list[str]  # member pods once Hibernated (none)
    primary: str  # the member that led when the ShardDB began to sleep
    gone: list[str]  # the member pods in the order their kubelets removed them
    seconds_to_sleep: float
    seconds_to_wake: float
    seen: Seen  # the writer's commits, read on the woken primary (no other client, no poller)
    role_kept: str  # what the woken primary says of the role made before the sleep


def phase(install: Install) -> str:
    return str(install.get("sharddb", "-n", NAMESPACE, NAME).get("status", {}).get("phase", ""))


def psql_on(install: Install, pod: str, statement: str) -> str:
    """``psql`` as the superuser on the member's own socket (trust there, as the rendered pg_hba says)."""
    return install.kubectl(
        "exec", "-n", NAMESPACE, pod, "-c", "db", "--", "psql", "-XqAt", "-U", "postgres", "-c", statement
    ).strip()


@pytest.fixture(scope="module")
def slept(install: Install, brought_up: BroughtUp) -> Slept:
    _ = brought_up
    slower_on_standbys(install)
    primary, _standby = primary_and_replica(members(install))
    assert primary, [pod["metadata"]["name"] for pod in members(install)]
    psql_on(install, primary, "CREATE ROLE sleeper LOGIN")
    writers = Writers(install, NAMESPACE, f"{NAME}-sleep", (Target(PRIMARY_SERVICE, primary),), table="acked_sleep")
    writers.start()
    changes = leader_changes(install)
    mark = install.stack.audit.mark()
    began = time.monotonic()
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", '{"spec":{"hibernated":true}}')
    wait_until(f"{NAME} Hibernated", lambda: phase(install) == "Hibernated", 300, every=1)
    to_sleep = time.monotonic() - began
    changes_while_stopping = leader_changes(install) - changes
    left = [pod["metadata"]["name"] for pod in members(install)]
    writes = install.stack.audit.since(mark, namespace=NAMESPACE)
    cache_gone, stopped = cache_gone_before_shards(writes, NAME)
    gone = gone_in_order(writes)
    began = time.monotonic()
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", '{"spec":{"hibernated":false}}')
    wait_until(f"{NAME} Available again", lambda: install.available(NAMESPACE, NAME), 300, every=1)

    def serving() -> bool:
        roles = sorted(
            "primary" if running_primary(p) else "standby" if streaming_standby(p) else "?" for p in members(install)
        )
        return roles == ["primary", "standby"]

    wait_until("a running primary and a streaming standby after the wake", serving, 300, every=1)
    to_wake = time.monotonic() - began
    writers.wait_acknowledged()
    woken, _ = primary_and_replica(members(install))
    writers.targets = (Target(PRIMARY_SERVICE, woken),)
    seen = Seen(Kept.read(writers), None, (), [])
    writers.stop()
    role = psql_on(install, woken, "SELECT rolname FROM pg_roles WHERE rolname = 'sleeper'")
    return Slept(cache_gone, stopped, changes_while_stopping, left, primary, gone, to_sleep, to_wake, seen, role)


def test_hibernating_removes_the_cache_before_any_member_stops(slept: Slept, report: Report) -> None:
    report(f"hibernated in {slept.seconds_to_sleep:.1f} s, woken in {slept.seconds_to_wake:.1f} s")
    assert slept.cache_gone, "no cache pod was removed by a kubelet"
    assert slept.members_stopped, "no member pod was stopped"
    assert max(slept.cache_gone) < min(slept.members_stopped)


def test_hibernating_stops_every_member_with_no_failover_though_the_standby_drains_longer(slept: Slept) -> None:
    assert slept.left_running == []
    assert slept.changes_while_stopping == 0


def test_hibernating_stops_the_primary_last(slept: Slept) -> None:
    assert len(slept.gone) == 2, slept.gone
    assert slept.gone[-1] == slept.primary


def test_a_woken_shard_has_every_acknowledged_commit(slept: Slept, outages: Record) -> None:
    slept.seen.no_acknowledged_commit_lost(outages)  # the step adds no row to the outage table


def test_a_woken_shard_keeps_its_database_roles(slept: Slept) -> None:
    assert slept.role_kept == "sleeper"
