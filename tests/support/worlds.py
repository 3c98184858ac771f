"""What Kubernetes 1.34 writes on the stand-in World's pods, at times counted from the World's creation.

A lost node's marks (``MarkPodsNotReady``) and the taint manager's eviction, shared by the honest
status's tests (``tests/decision/``) and its properties over generated worlds (``tests/generated/``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hooks.clock import rfc3339

from .hook import moment

Obj = dict[str, Any]
CREATED = "2026-01-01T00:00:00Z"  # when the World creates everything


def after(seconds: float) -> str:
    return rfc3339(moment(CREATED) + timedelta(seconds=seconds))


def mark_not_ready(pod: Obj, node: str, when: str) -> None:
    """``MarkPodsNotReady``: the node lifecycle controller flips Ready alone, keeping its reason and message."""
    pod["spec"]["nodeName"] = node
    for item in pod["status"]["conditions"]:
        if item["type"] == "Ready":
            item.update(status="False", lastTransitionTime=when)


def evict_by_taint(pod: Obj, when: str) -> None:
    """The taint manager, once the pod's toleration of ``unreachable`` (300 s) runs out."""
    pod["status"]["conditions"].append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "lastTransitionTime": when,
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
        }
    )
    pod["metadata"]["deletionTimestamp"] = when
    pod["metadata"]["deletionGracePeriodSeconds"] = 30
