"""A drain of the primary's node right after the standby was restarted: the standby streams a few seconds before
Patroni names it synchronous, and the primary is evicted only once it is, so the standby takes over.

Before members were Ready only as the primary or its synchronous standby, the budget counted the streaming
standby and the drain evicted the primary at once: the standby, not synchronous, was never promoted, and the
shard had no primary until the node was uncordoned.
"""

from __future__ import annotations

import json
import time

import pytest

from ...support.sharddbs import wait_until
from ..installs import Install, Obj
from ..invariants import Record, Report
from .disturbances import HandOver, drain_node, report_hand_over, stop_primary
from .shard import NAMESPACE, SHARD, members, primary_and_replica, streaming_standby


def sync_standby(install: Install) -> str:
    """The member Patroni's ``-sync`` ConfigMap names synchronous standby, or "" for none."""
    found = install.get("configmap", "-n", NAMESPACE, f"{SHARD}-sync")
    value = found["metadata"].get("annotations", {}).get("sync_standby") or ""
    return value if not value.startswith("[") else ",".join(json.loads(value))


def restart_standby_then_drain(install: Install, primary: Obj) -> str:
    """Delete the standby's pod, and drain the primary's node as soon as the standby's new pod streams."""
    pods = members(install)
    _, standby = primary_and_replica(pods)
    old_uid = next(pod["metadata"]["uid"] for pod in pods if pod["metadata"]["name"] == standby)
    began = time.monotonic()
    install.kubectl("delete", "pod", "-n", NAMESPACE, standby, "--wait=false")

    def streams_anew() -> bool:
        pod = next((pod for pod in members(install) if pod["metadata"]["name"] == standby), None)
        return pod is not None and pod["metadata"]["uid"] != old_uid and streaming_standby(pod)

    wait_until(f"{standby} made anew and streaming", streams_anew, 180, every=0.2)
    streaming = time.monotonic() - began
    named = sync_standby(install) or "no member"
    done = drain_node(install, primary)
    return f"{standby} streamed anew after {streaming:.1f} s, -sync then named {named}; {done}"


@pytest.fixture(scope="module")
def drained(install: Install) -> HandOver:
    return stop_primary(
        install,
        "drain of the primary's node right after the standby's restart, 2 members",
        "restartdrain",
        lambda pod: restart_standby_then_drain(install, pod),
    )


pytestmark = pytest.mark.usefixtures("brought_up")


def test_the_restarted_standby_takes_over_from_the_drained_primary(drained: HandOver, report: Report) -> None:
    report_hand_over(report, "drain after a standby restart", drained)
    assert drained.new != drained.old


def test_no_acknowledged_commit_is_lost_when_the_drain_follows_a_standby_restart(
    drained: HandOver, outages: Record
) -> None:
    drained.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_when_the_drain_follows_a_standby_restart(drained: HandOver) -> None:
    drained.seen.never_two_primaries(handed_to=drained.new)
