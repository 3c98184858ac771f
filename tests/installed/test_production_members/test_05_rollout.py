"""A rollout of ``dbImage``: the rollout Job evicts the standby first, then the primary; one hand-over. Then a
rollout to an image no node can pull: the Job's own pod waits on it, no member is evicted, and
``docs/runbooks/member-rollout-waits.md``, run as written, shows that pod and puts the image back."""

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


def rollout_jobs(install: Install) -> list[str]:
    return [
        j["metadata"]["name"]
        for j in install.get("jobs", "-n", NAMESPACE)["items"]
        if "-rollout-" in j["metadata"]["name"]
    ]


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

    wait_until("the rollout Job gone once every member rolled", lambda: not rollout_jobs(install), 120, every=1)
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
        rollout_jobs(install),
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
ABSENT = f"{workloads.POSTGRES_PATRONI_ROLLOUT}-absent"
WAITING_ON_IMAGE = ("ErrImagePull", "ImagePullBackOff")


@dataclass(frozen=True)
class Unpullable:
    """A rollout to an image no node can pull, put back by the runbook's blocks as written."""

    step: Disturbed
    said: str  # what the runbook's blocks printed
    replaced: list[str]  # members whose pod is not the one from before
    images: set[str]
    jobs_left: list[str]


def rollout_pods(install: Install) -> list[Obj]:
    items: list[Obj] = install.get("pods", "-n", NAMESPACE, "-l", ROLLOUT_PODS)["items"]
    return items


def waiting_on_its_image(install: Install) -> bool:
    """The rollout Job's pod cannot pull its image (it runs the new ``dbImage`` itself)."""
    return any(
        ((status.get("state") or {}).get("waiting") or {}).get("reason") in WAITING_ON_IMAGE
        for pod in rollout_pods(install)
        for status in (pod.get("status") or {}).get("containerStatuses") or []
    )


@pytest.fixture(scope="module")
def unpullable(install: Install, rolled: Rolled) -> Unpullable:
    """``dbImage`` changed to one no node can pull; once the Job's pod waits on it, the runbook's blocks as
    written (they show the pod and put back the image the primary runs)."""
    _ = rolled  # after it: one step at a time
    # The last rollout's pod outlives its Job for a moment (background deletion): the runbook reads every one.
    wait_until("the last rollout's pods gone", lambda: not rollout_pods(install), 120, every=1)
    said: list[str] = []
    uids: dict[str, str] = {}

    def stuck(primary: Obj, standby: Obj) -> None:
        uids.update({pod["metadata"]["name"]: pod["metadata"]["uid"] for pod in (primary, standby)})
        patch = json.dumps({"spec": {"dbImage": ABSENT}})
        install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", patch)
        try:
            wait_until("the rollout Job's pod waiting on its image", lambda: waiting_on_its_image(install), 180)
            blocks = ("rollout-set", "rollout-symptoms", "rollout-log", "rollout-back")
            settings = {key: value for key, value in RUNBOOK_SETTINGS.items() if key != "SHARD"}
            said.append(install.run(runbook(RUNBOOK, blocks, settings)))
        finally:
            if not said:  # the later steps start from the image the members run, whatever failed here
                back = json.dumps({"spec": {"dbImage": workloads.POSTGRES_PATRONI_ROLLOUT}})
                install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", back)

    step = disturb(install, "rollout to an image no node can pull, put back (runbook)", "unpullable", stuck)
    wait_until(f"{NAME} Available", lambda: install.available(NAMESPACE, NAME), 180, every=1)
    wait_until("the rollout Job gone once the image is back", lambda: not rollout_jobs(install), 120, every=1)
    now = members(install)
    return Unpullable(
        step,
        said[0],
        sorted(
            name
            for name, uid in uids.items()
            if {p["metadata"]["name"]: p["metadata"]["uid"] for p in now}.get(name) != uid
        ),
        {pod["spec"]["containers"][0]["image"] for pod in now},
        rollout_jobs(install),
    )


def test_a_rollout_to_an_image_no_node_can_pull_evicts_no_member(unpullable: Unpullable, report: Report) -> None:
    report(f"a rollout to an image no node can pull, put back (runbook): whole in {unpullable.step.seconds:.1f} s")
    assert unpullable.replaced == []
    assert unpullable.step.changes == 0


def test_the_runbook_shows_the_jobs_pod_waiting_on_its_image_and_puts_back_the_primarys(
    unpullable: Unpullable,
) -> None:
    assert any(reason in unpullable.said for reason in WAITING_ON_IMAGE), unpullable.said
    assert f"dbImage back to {workloads.POSTGRES_PATRONI_ROLLOUT}" in unpullable.said, unpullable.said
    assert unpullable.images == {workloads.POSTGRES_PATRONI_ROLLOUT}


def test_the_rollout_job_of_an_image_put_back_is_gone(unpullable: Unpullable) -> None:
    assert unpullable.jobs_left == []


def test_no_acknowledged_commit_is_lost_in_a_rollout_to_an_image_no_node_can_pull(
    unpullable: Unpullable, outages: Record
) -> None:
    unpullable.step.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_in_a_rollout_to_an_image_no_node_can_pull(
    unpullable: Unpullable,
) -> None:
    unpullable.step.seen.never_two_primaries()
