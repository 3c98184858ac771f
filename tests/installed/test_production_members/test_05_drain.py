"""A drain of the primary's node, as a person runs ``kubectl drain``: the standby takes over, the evicted member
comes back on its node once uncordoned (its volume is node-bound)."""

from __future__ import annotations

import time

import pytest

from ..installs import Install, Obj
from ..invariants import Record, Report
from ..poller import LABEL as POLLER_LABEL
from ..writers import LABEL
from .disturbances import HandOver, report_hand_over, stop_primary
from .shard import BroughtUp


def disruptions(install: Install, mark: int, since: float) -> str:
    """Every pod evicted or deleted anywhere from ``mark`` on, and its answer, in seconds from ``since``."""
    writes = install.stack.audit.since(mark, ok=False)
    picked = [
        f"{w.at.timestamp() - since:+.1f} {w.verb}{'/' + w.subresource if w.subresource else ''} "
        f"{w.namespace}/{w.name} {w.code}"
        for w in writes
        if w.resource == "pods" and (w.subresource == "eviction" or w.verb == "delete")
    ]
    return "; ".join(picked[:20])


def drain_node(install: Install, pod: Obj) -> str:
    """``kubectl drain`` of the primary's node as a person runs it (the writers and poller left out), then
    uncordon: the evicted member's volume is on that node (node-bound), so it returns only there. Says how long
    it took and every pod evicted or deleted meanwhile."""
    node = pod["spec"]["nodeName"]
    mark = install.stack.audit.mark()
    since = time.time()
    began = time.monotonic()
    command = [
        "drain",
        node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        f"--pod-selector=!{LABEL},!{POLLER_LABEL}",
    ]
    try:
        result = install.stack.control_plane.kubectl().run(*command, "--timeout=300s", timeout=330)
        assert result.returncode == 0, f"kubectl drain {node} failed: {result.stderr.strip()}"
    finally:
        install.kubectl("uncordon", node)
    drained = f"{node} drained in {time.monotonic() - began:.1f} s; "
    return f"{drained}pods evicted or deleted (s from the drain's start): {disruptions(install, mark, since)}; "


@pytest.fixture(scope="module")
def drained(install: Install, brought_up: BroughtUp) -> HandOver:
    _ = brought_up
    return stop_primary(
        install,
        "drain of the primary's node, 2 members (node-bound volumes)",
        "drain",
        lambda pod: drain_node(install, pod),
    )


def test_draining_the_primarys_node_makes_the_standby_primary(drained: HandOver, report: Report) -> None:
    report_hand_over(report, "drain", drained)
    assert drained.new != drained.old


def test_no_acknowledged_commit_is_lost_when_the_primarys_node_is_drained(drained: HandOver, outages: Record) -> None:
    drained.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_during_a_drain(drained: HandOver) -> None:
    drained.seen.never_two_primaries(handed_to=drained.new)
