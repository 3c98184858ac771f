"""No pod is deleted by a node unless someone else marked it for deletion first, judged over the audit log.

Logs are written write by write as the API server records them (``testbed.real.audit.Write``,
completion order), in the shapes a real stack logged; the rule runs over the end-to-end
tier's and the data tier's logs (their ``namespace`` fixtures) and the fault campaign's.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from testbed.faults.invariants import unmarked_deletions
from testbed.real.audit import Write

NS = "fleet"
CONTROLLERS = "system:kube-controller-manager"
SCHEDULER = "system:kube-scheduler"
NODE = "system:node:node-1"
POD = "db-007-db-3"


class Log:
    """An audit log being written: each write a second after the one before."""

    def __init__(self) -> None:
        self.writes: list[Write] = []
        self._clock = itertools.count()

    def add(
        self,
        user: str,
        verb: str,
        subresource: str = "",
        *,
        name: str = POD,
        uid: str = "",
        code: int = 200,
        took: float = 0.0,
    ) -> None:
        """A write answered now, which came in ``took`` seconds before."""
        at = datetime(2026, 12, 1, 23, 51, 46, tzinfo=UTC) + timedelta(seconds=next(self._clock))
        received = at - timedelta(seconds=took)
        self.writes.append(Write(at, user, verb, "pods", subresource, NS, name, code, uid, received))

    def made(self, name: str = POD) -> None:
        """The StatefulSet controller makes the pod, the scheduler binds it, the node says it runs."""
        self.add(CONTROLLERS, "create", name=name, code=201)
        self.add(SCHEDULER, "create", "binding", name=name, code=201)
        self.add(NODE, "update", "status", name=name)


def rules(log: Log) -> list[str]:
    return [violation.rule for violation in unmarked_deletions(log.writes)]


def test_the_recorded_loop_of_a_node_deleting_a_pod_nobody_marked_is_caught_every_time() -> None:
    # fleet/db-007-db-3 from 23:51 on: created, bound, one status update by the node, deleted by the node.
    log = Log()
    for _ in range(3):
        log.made()
        log.add(NODE, "delete")
    found = unmarked_deletions(log.writes)
    assert [v.rule for v in found] == ["nodes-delete-only-marked-pods"] * 3
    assert found[0].sharddb == f"{NS}/db-007"
    assert f"pod {POD} deleted by {NODE}" in found[0].detail
    assert f"{SCHEDULER} create pods/binding {NS}/{POD} -> 201" in found[0].detail  # what led up to it, quoted


def test_a_pod_deleted_by_its_controller_then_finalized_by_its_node_breaks_no_rule() -> None:
    log = Log()
    log.made()
    log.add(CONTROLLERS, "delete", uid="uid-1")
    log.add(NODE, "delete", uid="uid-1")
    log.made()
    assert rules(log) == []


def test_a_stale_removal_that_takes_the_replacement_is_caught_by_its_uid() -> None:
    log = Log()
    log.made()
    log.add(CONTROLLERS, "delete", uid="uid-1")
    log.add(NODE, "delete", uid="uid-1")
    log.made()
    log.add(NODE, "delete", uid="uid-2")
    assert rules(log) == ["nodes-delete-only-marked-pods"]


def test_a_replacement_logged_before_the_old_pods_last_delete_leaves_that_delete_marked() -> None:
    log = Log()
    log.made()
    log.add(CONTROLLERS, "delete", uid="uid-1")
    log.made()
    log.add(NODE, "delete", uid="uid-1")
    assert rules(log) == []


def test_a_pod_marked_by_an_eviction_may_be_finalized_by_its_node() -> None:
    log = Log()
    log.made()
    log.add("sharddb-admin", "create", "eviction", code=201)
    log.add(NODE, "delete", uid="uid-1")
    assert rules(log) == []


def test_a_pod_marked_by_its_namespaces_deletion_may_be_finalized_by_its_node() -> None:
    log = Log()
    log.made()
    log.add(CONTROLLERS, "deletecollection", name="")
    log.add(NODE, "delete", uid="uid-1")
    assert rules(log) == []


def test_a_refused_delete_by_a_node_is_no_deletion() -> None:
    log = Log()
    log.made()
    log.add(NODE, "delete", uid="uid-1", code=409)  # its uid precondition no longer held
    assert rules(log) == []


def test_a_delete_by_anyone_but_a_node_is_never_judged() -> None:
    log = Log()
    log.made()
    log.add("sharddb-admin", "delete", uid="uid-1")
    log.add(CONTROLLERS, "delete", name="db-007-cache-5d9f7c-x2x9q")
    assert rules(log) == []


def test_a_marking_answered_with_a_server_error_may_have_been_stored_and_counts() -> None:
    log = Log()
    log.made()
    log.add(CONTROLLERS, "delete", code=500)  # etcd went away after storing it, or before: the server cannot say
    log.add(NODE, "delete", uid="uid-1")
    assert rules(log) == []


def test_a_marking_refused_by_the_server_marks_nothing() -> None:
    log = Log()
    log.made()
    log.add(CONTROLLERS, "delete", code=409)
    log.add(NODE, "delete", uid="uid-1")
    assert rules(log) == ["nodes-delete-only-marked-pods"]


def test_a_marking_that_came_in_first_but_was_answered_after_the_nodes_deletion_counts() -> None:
    # Recorded: the garbage collector's DELETE stored the mark; the node saw it and finished the pod before that
    # DELETE's own answer went out, so the log holds the node's deletion first.
    log = Log()
    log.made()
    log.add(NODE, "delete", uid="uid-1")
    log.add(CONTROLLERS, "delete", uid="uid-1", took=2.0)
    assert rules(log) == []


def test_a_marking_that_came_in_after_the_nodes_deletion_was_answered_does_not_count() -> None:
    log = Log()
    log.made()
    log.add(NODE, "delete", uid="uid-1")
    log.add(CONTROLLERS, "delete", uid="uid-1", took=0.5)
    assert rules(log) == ["nodes-delete-only-marked-pods"]


def test_a_late_logged_marking_of_another_pod_of_that_name_does_not_count() -> None:
    log = Log()
    log.made()
    log.add(NODE, "delete", uid="uid-1")
    log.add(CONTROLLERS, "delete", uid="uid-2", took=2.0)
    assert rules(log) == ["nodes-delete-only-marked-pods"]
