"""The hooks against what a real Metacontroller v4.17.2 sent them (see ``tests/support/recorded.py``).

Every recorded request still decodes, today's answers walk the same phases the
recorded ones did, and no answer makes Metacontroller write a child that the
answer does not mean to change.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from hooks import handler, hook_request, names
from testbed.models.metacontroller import LAST_APPLIED, apply_update, desired_as_sent, difference, needs_update
from tests.support.recorded import GROUPS, Exchange, exchanges, stored

pytestmark = pytest.mark.recorded

Obj = dict[str, Any]

SYNCS = ("sync-01", "sync-02", "sync-03", "sync-04", "sync-05", "sync-06")
FINALIZES = ("finalize-01", "finalize-02", "finalize-03")
# What each answer is meant to change in a child that exists; anything else is a no-op write.
INTENDED = {
    "sync-03": {("StatefulSet", ".metadata.annotations.mygroup.example.com/seeded-shards")},
    "finalize-01": {("Deployment", ".spec.replicas")},
    "finalize-02": {("StatefulSet", ".spec.replicas")},
}


# Children the hooks gained after the recording: disruption budgets and the cache's Service.
ADDED_SINCE = {("PodDisruptionBudget", "demo-db"), ("PodDisruptionBudget", "demo-cache"), ("Service", "demo-cache")}


def _exchange(prefix: str) -> Exchange:
    return next(e for e in exchanges() if e.name.startswith(prefix))


def _answer(exchange: Exchange) -> Obj:
    return handler.sync(json.dumps(exchange.request).encode(), finalize=exchange.finalize).body


TEMPLATE = ".spec.template."


# What a pod template was made from, recorded on the StatefulSet and the cache Deployment by the first
# answer after an upgrade: a metadata write, which restarts no pod (``hooks/template_choice.py``).
RECORD = tuple(
    f".metadata.annotations.{key}" for key in (names.TEMPLATE_INPUTS_ANNOTATION, names.TEMPLATE_EPOCH_ANNOTATION)
)


def _without_last_applied(lines: list[str]) -> list[str]:
    """The fields an update would change, leaving out the last-applied record and the templates' record."""
    return [line for line in lines if LAST_APPLIED not in line and not line.startswith(RECORD)]


def _changes(exchange: Exchange, answer: Obj) -> list[tuple[str, str, str]]:
    """(kind, path, line) for every field an in-place update would change, the annotation aside."""
    parent = exchange.request["parent"]["metadata"]
    out = []
    for child in answer["children"]:
        observed = exchange.observed(child["kind"], child["metadata"]["name"])
        if observed is None or child["kind"] == "Job":  # new, or OnDelete: never updated
            continue
        desired = desired_as_sent(child, parent["namespace"], parent["uid"])
        for line in _without_last_applied(difference(observed, desired)):
            out.append((child["kind"], line.split(":", 1)[0], line))
    return out


@pytest.mark.parametrize("prefix", ["customize", *SYNCS, *FINALIZES])
def test_recorded_request_decodes(prefix: str) -> None:
    exchange = _exchange(prefix)
    body = json.dumps(exchange.request).encode()
    if exchange.path == "/customize":
        assert hook_request.decode_customize(body).parent.metadata.name == "demo"
    else:
        request = hook_request.decode_sync(body)
        assert request.parent.metadata.name == "demo"
        assert request.finalizing == exchange.finalize


def test_customize_answer_is_the_recorded_one() -> None:
    exchange = _exchange("customize")
    assert handler.customize(json.dumps(exchange.request).encode()) == exchange.response


@pytest.mark.parametrize("prefix", [*SYNCS, *FINALIZES])
def test_answer_reaches_the_recorded_phase(prefix: str) -> None:
    exchange = _exchange(prefix)
    recorded = exchange.response or _exchange(SYNCS[SYNCS.index(prefix) - 1]).response  # a 304 reused the last
    assert recorded is not None
    assert _answer(exchange)["status"]["phase"] == recorded["status"]["phase"]


@pytest.mark.parametrize("prefix", [*SYNCS, *FINALIZES])
def test_answer_returns_the_recorded_children(prefix: str) -> None:
    exchange = _exchange(prefix)
    recorded = exchange.response or _exchange(SYNCS[SYNCS.index(prefix) - 1]).response
    assert recorded is not None
    names = {(c["kind"], c["metadata"]["name"]) for c in _answer(exchange)["children"]}
    before = {(c["kind"], c["metadata"]["name"]) for c in recorded["children"]}
    assert before <= names  # nothing then answered would now be deleted
    assert names - before <= ADDED_SINCE  # only the kinds added since the recording


def test_finalize_says_done_only_when_the_last_shard_is_gone() -> None:
    assert [_answer(_exchange(prefix))["finalized"] for prefix in FINALIZES] == [False, False, True]


@pytest.mark.parametrize("prefix", [*SYNCS, *FINALIZES])
def test_answer_changes_nothing_it_does_not_mean_to(prefix: str) -> None:
    exchange = _exchange(prefix)
    changes = _changes(exchange, _answer(exchange))
    intended = INTENDED.get(prefix, set())
    assert [line for kind, path, line in changes if (kind, path) not in intended] == []
    assert {(kind, path) for kind, path, _ in changes} == intended


@pytest.mark.parametrize("prefix", [*SYNCS, *FINALIZES])
def test_after_one_update_every_child_is_a_fixed_point(prefix: str) -> None:
    """Children made by an older answer get their last-applied rewritten once, then never again."""
    exchange = _exchange(prefix)
    parent = exchange.request["parent"]["metadata"]
    for child in _answer(exchange)["children"]:
        observed = exchange.observed(child["kind"], child["metadata"]["name"])
        if observed is None:
            continue
        desired = desired_as_sent(child, parent["namespace"], parent["uid"])
        updated = apply_update(observed, desired)
        assert not needs_update(updated, desired), difference(updated, desired)


def _request_for_stored(children: list[Obj]) -> Obj:
    """A sync request for the stored children: the Available one, with their namespace, owner and images."""
    request = copy.deepcopy(_exchange("sync-04").request)
    owner = children[0]["metadata"]["ownerReferences"][0]
    namespace = children[0]["metadata"]["namespace"]
    parent = request["parent"]
    parent["metadata"].update(namespace=namespace, uid=owner["uid"])
    images = {
        c["kind"]: c["spec"]["template"]["spec"]["containers"][0]["image"] for c in children if "template" in c["spec"]
    }
    parent["spec"]["dbImage"] = images["StatefulSet"]
    parent["spec"]["cache"]["image"] = images["Deployment"]
    request["children"] = {
        group: {f"{namespace}/{c['metadata']['name']}": c for c in children if GROUPS[c["kind"]] == group}
        for group in GROUPS.values()
    }
    return request


def test_stored_children_are_fixed_points_once_their_last_applied_is_current() -> None:
    children = stored()
    assert {c["kind"] for c in children} == {"Service", "StatefulSet", "Deployment", "Job"}
    request = _request_for_stored(children)
    answer = handler.sync(json.dumps(request).encode(), finalize=False).body
    namespace, uid = request["parent"]["metadata"]["namespace"], request["parent"]["metadata"]["uid"]
    by_key = {(c["kind"], c["metadata"]["name"]): c for c in children}
    for child in answer["children"]:
        observed = by_key.get((child["kind"], child["metadata"]["name"]))
        if observed is None or child["kind"] == "Job":
            continue  # added since the recording; or OnDelete: a Job is never updated (this one ran an older image)
        desired = desired_as_sent(child, namespace, uid)
        assert _without_last_applied(difference(observed, desired)) == [], child["kind"]
        assert not needs_update(apply_update(observed, desired), desired), child["kind"]


def test_stored_statefulset_keeps_its_ordered_ready_policy() -> None:
    """The policy is immutable; an answer asking for Parallel would make every update fail."""
    children = stored()
    answer = handler.sync(json.dumps(_request_for_stored(children)).encode(), finalize=False).body
    (sts,) = [c for c in answer["children"] if c["kind"] == "StatefulSet"]
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"


def test_new_statefulset_starts_its_shards_in_parallel() -> None:
    answer = _answer(_exchange("sync-01"))
    (sts,) = [c for c in answer["children"] if c["kind"] == "StatefulSet"]
    assert sts["spec"]["podManagementPolicy"] == "Parallel"


@pytest.mark.parametrize("prefix", ["sync-04", "sync-05", "sync-06"])
def test_upgraded_hooks_keep_the_recorded_pod_templates_and_record_what_they_were_made_from(prefix: str) -> None:
    """These requests came from an older version of the hooks, whose templates differ from today's."""
    exchange = _exchange(prefix)
    answer = _answer(exchange)
    parent = exchange.request["parent"]["metadata"]
    for child in answer["children"]:
        observed = exchange.observed(child["kind"], child["metadata"]["name"])
        if observed is None or child["kind"] not in ("StatefulSet", "Deployment"):
            continue
        lines = difference(observed, desired_as_sent(child, parent["namespace"], parent["uid"]))
        assert [line for line in lines if line.startswith(TEMPLATE)] == [], f"{child['kind']}: a template write"
        assert {line.split(":", 1)[0] for line in lines if line.startswith(RECORD)} == set(RECORD), child["kind"]
    assert answer["status"]["newerTemplates"] == "shards, cache"
