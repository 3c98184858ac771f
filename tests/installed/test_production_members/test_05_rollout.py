"""A rollout of ``dbImage``: the rollout Job evicts the standby first, then the primary; one hand-over. Then a
rollout to an image that cannot start: the Job replaces the standby, waits, and never evicts the primary, and
``docs/runbooks/member-rollout-waits.md``, run as written, finds the member and puts the image back."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest

from testbed.images import workloads

from ...support.sharddbs import wait_until
from ..installs import Install, Obj
from ..invariants import Record, Report, Seen
from ..steps import ROOT, runbook
from .disturbances import Disturbed, disturb, hand_over, start_clients, watched
from .shard import (
    NAME,
    NAMESPACE,
    RUNBOOK_SETTINGS,
    BroughtUp,
    leader_changes,
    members,
    patroni_says,
    primary_and_replica,
    running_primary,
    streaming_standby,
)


@dataclass(frozen=True)
class Rolled:
    """A rollout of ``dbImage`` under writers and the poller."""

    before: tuple[str, str]  # the primary and the standby before
    after: str  # the primary after
    evicted: list[str]  # the members the rollout Job evicted, in order
    changes: int  # primary changes Patroni's history gained
    images: list[str]
    seen: Seen
    moments: str
    seconds: float
    jobs_left: list[str]


@pytest.fixture(scope="module")
def rolled(install: Install, brought_up: BroughtUp) -> Rolled:
    _ = brought_up
    pods = members(install)
    primary, standby = primary_and_replica(pods)
    assert primary, [pod["metadata"]["name"] for pod in pods]
    assert standby, [pod["metadata"]["name"] for pod in pods]
    changes = leader_changes(install)
    clients = start_clients(install, "rollout", pods, cache=True)
    writers, poller = clients.writers, clients.pollers[0]
    mark = install.stack.audit.mark()
    since = time.time()
    began = time.monotonic()
    patch = json.dumps({"spec": {"dbImage": workloads.POSTGRES_PATRONI_ROLLOUT}})
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", patch)

    def rolled_out() -> bool:
        now = members(install)
        poller.watch(now)
        images = {pod["spec"]["containers"][0]["image"] for pod in now}
        roles = sorted(
            "primary" if running_primary(pod) else "standby" if streaming_standby(pod) else "?" for pod in now
        )
        return images == {workloads.POSTGRES_PATRONI_ROLLOUT} and roles == ["primary", "standby"]

    wait_until("both members on the new image, a primary and a streaming standby", rolled_out, 400, every=0.5)
    wait_until(f"{NAME} Available", lambda: install.available(NAMESPACE, NAME), 120, every=1)
    seconds = time.monotonic() - began

    def rollout_jobs() -> list[str]:
        return [
            j["metadata"]["name"]
            for j in install.get("jobs", "-n", NAMESPACE)["items"]
            if "-rollout-" in j["metadata"]["name"]
        ]

    wait_until("the rollout Job gone once every member rolled", lambda: not rollout_jobs(), 120, every=1)
    writers.wait_acknowledged()
    time.sleep(2)  # the poller asks every member once more after the writers are back
    writes = install.stack.audit.since(mark, namespace=NAMESPACE)
    evicted = [w.name for w in writes if w.resource == "pods" and w.subresource == "eviction" and w.code in (200, 201)]
    now = members(install)
    after, _ = primary_and_replica(now)
    moments = hand_over(writes, primary, since, writers.log(0))
    moments += f"; the new primary's Patroni, from the step's start: {patroni_says(install, after, since)}"
    seen = clients.seen("rollout of `dbImage`, 2 members (the standby first, one hand-over)", since, after)
    done = Rolled(
        (primary, standby),
        after,
        evicted,
        leader_changes(install) - changes,
        sorted(pod["spec"]["containers"][0]["image"] for pod in now),
        seen,
        moments,
        seconds,
        rollout_jobs(),
    )
    clients.stop()
    return done


def test_a_rollout_evicts_the_standby_first_and_the_primary_last(rolled: Rolled) -> None:
    assert rolled.evicted == [rolled.before[1], rolled.before[0]]


def test_a_rollout_moves_the_primary_once(rolled: Rolled, report: Report) -> None:
    report(
        f"rollout {rolled.before[0]} -> {rolled.after} in {rolled.seconds:.1f} s; {rolled.moments}; "
        f"polled {watched(rolled.seen.polled)}"
    )
    assert rolled.changes == 1
    assert rolled.after == rolled.before[1]


def test_a_rollout_runs_every_member_on_the_new_image(rolled: Rolled) -> None:
    assert rolled.images == [workloads.POSTGRES_PATRONI_ROLLOUT] * 2


def test_the_rollout_job_is_gone_once_every_member_rolled(rolled: Rolled) -> None:
    assert rolled.jobs_left == []


def test_no_acknowledged_commit_is_lost_in_a_rollout(rolled: Rolled, outages: Record) -> None:
    rolled.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_during_a_rollout(rolled: Rolled) -> None:
    rolled.seen.never_two_primaries(handed_to=rolled.after)


RUNBOOK = ROOT / "docs" / "runbooks" / "member-rollout-waits.md"
ROLLOUT_PODS = f"app.kubernetes.io/instance={NAME},app.kubernetes.io/component=rollout"


@pytest.fixture(scope="module")
def stuck_then_back(install: Install, rolled: Rolled) -> tuple[Disturbed, str]:
    """``dbImage`` changed to one that cannot be pulled; once the Job says it waits, the runbook's blocks as written
    (they find the member and put back the image the primary runs); what they printed."""
    _ = rolled  # after it: one step at a time
    said: list[str] = []

    def job_waits() -> bool:
        return " not Ready" in install.kubectl("-n", NAMESPACE, "logs", "--tail=1", "-l", ROLLOUT_PODS, check=False)

    def stuck(_: Obj, standby: Obj) -> None:
        patch = json.dumps({"spec": {"dbImage": f"{workloads.POSTGRES_PATRONI_ROLLOUT}-absent"}})
        install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", patch)
        wait_until(f"the rollout Job waiting for {standby['metadata']['name']}", job_waits, 180, every=1)
        blocks = ("rollout-set", "rollout-symptoms", "rollout-log", "rollout-member", "rollout-back")
        settings = {key: value for key, value in RUNBOOK_SETTINGS.items() if key != "SHARD"}
        said.append(install.run(runbook(RUNBOOK, blocks, settings)))

    label = "rollout to an image that cannot start, put back by the runbook, 2 members (writes go on)"
    step = disturb(install, label, "stuck", stuck, "standby")
    wait_until(f"{NAME} Available", lambda: install.available(NAMESPACE, NAME), 180, every=1)
    return step, said[0]


def test_a_rollout_to_an_image_that_cannot_start_never_evicts_the_primary(
    stuck_then_back: tuple[Disturbed, str], report: Report
) -> None:
    step, _ = stuck_then_back
    report(f"a rollout stuck, then put back (runbook): whole again in {step.seconds:.1f} s")
    assert step.changes == 0


def test_the_runbook_names_the_member_that_never_started_and_puts_back_the_primarys_image(
    install: Install, stuck_then_back: tuple[Disturbed, str]
) -> None:
    _, said = stuck_then_back
    (named,) = [line for line in said.splitlines() if line.startswith("not Ready: ")]
    assert named.removeprefix("not Ready: ").startswith(f"{NAME}-db-0-"), said
    assert f"dbImage back to {workloads.POSTGRES_PATRONI_ROLLOUT}" in said, said
    images = {pod["spec"]["containers"][0]["image"] for pod in members(install)}
    assert images == {workloads.POSTGRES_PATRONI_ROLLOUT}


def test_no_acknowledged_commit_is_lost_in_a_rollout_that_cannot_start(
    stuck_then_back: tuple[Disturbed, str], outages: Record
) -> None:
    stuck_then_back[0].seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_in_a_rollout_that_cannot_start(
    stuck_then_back: tuple[Disturbed, str],
) -> None:
    stuck_then_back[0].seen.never_two_primaries()
