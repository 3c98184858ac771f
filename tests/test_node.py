"""The stand-in node agent acts on the very pod it queued an action for, as a kubelet does.

A kubelet finalizes only a pod whose own ``deletionTimestamp`` is set; a removal queued
for a pod that has since gone, and whose name a new pod took, is dropped.
"""

from __future__ import annotations

from typing import Any

from testbed.node import acted_on

Obj = dict[str, Any]


def pod(uid: str, deleting: bool = False) -> Obj:
    meta: Obj = {"name": "db-db-3", "namespace": "fleet", "uid": uid}
    if deleting:
        meta.update(deletionTimestamp="2026-12-01T23:51:46Z", deletionGracePeriodSeconds=30)
    return {"metadata": meta}


def test_a_removal_goes_ahead_for_the_marked_pod_it_was_queued_for() -> None:
    marked = pod("uid-1", deleting=True)
    assert acted_on(marked, "uid-1", "remove") is marked


def test_a_removal_queued_for_a_pod_whose_name_a_replacement_took_is_dropped() -> None:
    assert acted_on(pod("uid-2"), "uid-1", "remove") is None


def test_a_removal_of_a_pod_nobody_marked_for_deletion_is_dropped() -> None:
    assert acted_on(pod("uid-1"), "uid-1", "remove") is None


def test_a_start_queued_for_a_pod_that_was_replaced_is_dropped() -> None:
    assert acted_on(pod("uid-2"), "uid-1", "start") is None


def test_a_start_goes_ahead_for_its_own_pod() -> None:
    own = pod("uid-1")
    assert acted_on(own, "uid-1", "start") is own


def test_nothing_is_done_for_a_pod_already_gone() -> None:
    assert acted_on(None, "uid-1", "remove") is None
