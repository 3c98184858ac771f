"""The stop order (``hooks/replication/stop.py``), run as the kubelet runs a member's preStop hook: in the member's
container, as its ServiceAccount, against Patroni's real leader lock and the real API server.

A whole shard stops when its StatefulSet is at zero replicas: its primary then waits for every other member's pod
to be gone before it lets SIGTERM stop it, so no standby is promoted mid-teardown. Outside such a stop, and on a
standby, the hook ends as soon as the user's drain command has.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from hooks.replication import stop
from testbed.real.machine import podman_runtime

from .members import Member, Shard, wait_for


def statefulset(shard: Shard, replicas: int) -> dict[str, object]:
    """The shard's StatefulSet as the hooks name it; only ``spec.replicas`` matters to the stop order."""
    labels = {"app.kubernetes.io/name": "stop-order-test"}  # selects none of the members: nothing is adopted
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": shard.scope},
        "spec": {
            "replicas": replicas,
            "serviceName": shard.scope,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "db", "image": shard.image}]},
            },
        },
    }


def scaled_to(shard: Shard, replicas: int) -> Iterator[None]:
    response = shard.kube.create(statefulset(shard, replicas), shard.namespace)
    assert response.status_code == 201, response.text
    yield
    shard.kube.http.delete(f"/apis/apps/v1/namespaces/{shard.namespace}/statefulsets/{shard.scope}")


@pytest.fixture
def stopping_whole(shard: Shard) -> Iterator[None]:
    """The shard's StatefulSet at zero replicas: a deletion or a hibernation."""
    yield from scaled_to(shard, 0)


@pytest.fixture
def running(shard: Shard) -> Iterator[None]:
    """The shard's StatefulSet at its two members: one pod stops alone (an eviction, a rollout)."""
    yield from scaled_to(shard, 2)


def pre_stop(member: Member, drain: list[str] | None = None, grace: int | None = None) -> subprocess.Popen[str]:
    """The member's rendered preStop command, started in its container as the kubelet would exec it."""
    command: list[str] = stop.pre_stop(member.shard.parent, 0, drain)["preStop"]["exec"]["command"]
    env = ["--env", f"SHARDDB_DRAIN_SECONDS={grace}"] if grace is not None else []
    return subprocess.Popen(
        ["podman", "--runtime", podman_runtime(), "exec", *env, member.container, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def ended(hook: subprocess.Popen[str], within: float = 30.0) -> str:
    out, _ = hook.communicate(timeout=within)
    assert hook.returncode == 0, out
    return out


def lead(shard: Shard, leader: Member, standby: Member) -> None:
    wait_for(
        f"{standby.name} named in {shard.scope}-sync and in its leader's failsafe topology",
        lambda: shard.promotable(standby.name),
        [leader, standby],
    )


@pytest.mark.usefixtures("stopping_whole")
def test_a_standby_stops_at_once_after_the_users_drain(shard: Shard, leader: Member, standby: Member) -> None:
    lead(shard, leader, standby)
    hook = pre_stop(standby, ["sh", "-c", "echo drained > /tmp/drained"])
    ended(hook)
    assert shard.kube.exists("Pod", leader.name, shard.namespace), "it did not wait for the primary"
    assert (
        subprocess.run(
            ["podman", "--runtime", podman_runtime(), "exec", standby.container, "cat", "/tmp/drained"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        == "drained"
    )


@pytest.mark.usefixtures("stopping_whole")
def test_a_drain_command_that_cannot_run_still_leaves_the_primary_waiting(
    shard: Shard, leader: Member, standby: Member
) -> None:
    """A user's typo must not cost the order: the primary still waits for its standby (within a 4 s grace here)."""
    lead(shard, leader, standby)
    out = ended(pre_stop(leader, ["/no/such/drain"], grace=4))
    assert "the drain command ended with" in out
    assert f"{standby.name} still running; the primary stops now" in out


@pytest.mark.usefixtures("running")
def test_the_primary_of_a_shard_that_is_not_stopping_whole_stops_at_once(
    shard: Shard, leader: Member, standby: Member
) -> None:
    """An eviction, a deletion of the primary's pod or a rollout: Patroni's own hand-over must follow at once."""
    lead(shard, leader, standby)
    ended(pre_stop(leader))
    assert shard.kube.exists("Pod", standby.name, shard.namespace)


@pytest.mark.usefixtures("stopping_whole")
def test_the_primary_of_a_shard_stopping_whole_stops_anyway_when_its_grace_runs_out(
    shard: Shard, leader: Member, standby: Member
) -> None:
    """A standby that never goes (its node lost) must not cost the primary its clean stop: half a 4 s grace here."""
    lead(shard, leader, standby)
    out = ended(pre_stop(leader, grace=4))
    assert f"{standby.name} still running; the primary stops now" in out


@pytest.mark.usefixtures("stopping_whole")
def test_the_primary_of_a_shard_stopping_whole_waits_until_every_other_member_is_gone(
    shard: Shard, leader: Member, standby: Member
) -> None:
    """Last in the module: the standby's pod is deleted, as its kubelet would once the standby stopped."""
    lead(shard, leader, standby)
    hook = pre_stop(leader)
    time.sleep(5)
    assert hook.poll() is None, "the primary's hook ended while its standby's pod was still there"
    standby.remove()
    response = shard.kube.http.delete(f"/api/v1/namespaces/{shard.namespace}/pods/{standby.name}")
    assert response.status_code == 200, response.text
    out = ended(hook)
    assert "every other member has stopped; the primary stops last" in out
    assert shard.holder("leader") == leader.name, "nothing took the lock while the primary waited"
