"""A real node restored counts as back only once its new kubelet reports it Ready, never on its old kubelet's word.

Until the node controller marks a lost node (its grace period), the Ready condition the old kubelet last
wrote still says True; a kubelet started on a machine that is still cleaning up may exit before it writes
anything. Only a heartbeat from after the restart is the new kubelet's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from testbed.real.realnode import reports_ready

Obj = dict[str, Any]
RESTARTED = datetime(2026, 12, 7, 2, 20, 0, tzinfo=UTC)


def node(status: str, heartbeat: str) -> Obj:
    ready = {"type": "Ready", "status": status, "lastHeartbeatTime": heartbeat}
    return {"status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, ready]}}


def test_a_ready_condition_from_before_the_restart_is_not_the_new_kubelets_word() -> None:
    assert not reports_ready(node("True", "2026-12-07T02:19:51Z"), RESTARTED)


def test_a_ready_heartbeat_from_after_the_restart_counts() -> None:
    assert reports_ready(node("True", "2026-12-07T02:20:04Z"), RESTARTED)


def test_a_fresh_heartbeat_that_is_not_ready_does_not_count() -> None:
    assert not reports_ready(node("False", "2026-12-07T02:20:04Z"), RESTARTED)


def test_without_a_restart_any_ready_condition_counts() -> None:
    assert reports_ready(node("True", "2026-12-07T02:19:51Z"))
