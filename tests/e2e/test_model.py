"""``testbed/models/metacontroller.py`` held to the real Metacontroller, on answers a real Metacontroller once got.

The cluster tier's fast fixed-point checks ask the model whether Metacontroller
would update a child. Here the real binary gets recorded answers (and the same
answers with one field spelled as the API server does not store it), and every
child it updates in place after creating it must be exactly a child the model
says it would update, and no other.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hooks import kinds
from testbed.models.metacontroller import desired_as_sent, difference, needs_update
from testbed.stack import Stack, StackOptions

from ..support.kube import Kube
from ..support.recorded import folder
from ..support.sharddbs import ShardDBs, wait_until
from .conftest import RESYNC_SECONDS, new_namespace, start_stack

Obj = dict[str, Any]
IN_PLACE = frozenset(kind.kind for kind in kinds.CHILDREN if kind.update == "InPlace")


def _recorded(name: str) -> Obj:
    exchange: Obj = json.loads((folder() / f"{name}.json").read_text())
    return exchange


def _as_recorded(answer: Obj) -> Obj:
    return answer


def _memory_spelled_in_mebibytes(answer: Obj) -> Obj:
    cache = next(child for child in answer["children"] if child["kind"] == "Deployment")
    cache["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"memory": "1024Mi"}}
    return answer


def _no_false_flag_on_the_service(answer: Obj) -> Obj:
    for child in answer["children"]:
        if child["kind"] == "Service":
            child["spec"].pop("publishNotReadyAddresses", None)
    return answer


VARIANTS: dict[str, Callable[[Obj], Obj]] = {
    "as-recorded": _as_recorded,
    "memory-as-1024Mi": _memory_spelled_in_mebibytes,
    "service-without-false-flag": _no_false_flag_on_the_service,
}


@pytest.fixture(scope="module")
def canned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Path]]:
    answers = tmp_path_factory.mktemp("canned")
    (answers / "customize.json").write_text(json.dumps(_recorded("customize")["response"]))
    options = StackOptions(
        hook_module="testbed.standins.canned",
        hook_env={"SHARDDB_CANNED_DIR": str(answers)},
        resync_seconds=RESYNC_SECONDS,
    )
    running = start_stack(options)
    try:
        yield running, answers
    finally:
        running.stop()


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_model_updates_exactly_the_children_the_real_metacontroller_updates(
    canned: tuple[Stack, Path], variant: str, request: pytest.FixtureRequest
) -> None:
    stack, answers = canned
    recorded = _recorded("sync-04-available-3-shards")
    answer = VARIANTS[variant](copy.deepcopy(recorded["response"]))
    (answers / "sync.json").write_text(json.dumps(answer))
    plane = stack.control_plane
    kube = Kube(plane.url, plane.token, plane.ca_file, plane.kubeconfig)
    try:
        sharddbs = ShardDBs(kube, new_namespace(kube, request))
        parent = sharddbs.create("demo", recorded["request"]["parent"]["spec"])
        desired = [child for child in answer["children"] if child["kind"] in IN_PLACE]
        wait_until("every child created", lambda: all(_stored(sharddbs, c) for c in desired), timeout=30)
        time.sleep(1)
        mark = stack.audit.mark()
        time.sleep(2 * RESYNC_SECONDS + 2)
        attempted = {
            (w.resource, w.name)
            for w in stack.audit.since(mark, namespace=sharddbs.namespace, ok=False)
            if w.user.startswith("sharddb-metacontroller") and w.verb in ("update", "patch") and w.subresource == ""
        }
        for child in desired:
            stored = _stored(sharddbs, child)
            assert stored is not None
            sent = desired_as_sent(child, sharddbs.namespace, parent["metadata"]["uid"])
            predicted = needs_update(stored, sent)
            real = (kinds.BY_KIND[child["kind"]].plural, child["metadata"]["name"]) in attempted
            assert predicted == real, (
                f"{child['kind']}/{child['metadata']['name']}: model says update={predicted}, "
                f"Metacontroller {'updated' if real else 'did not update'} it; model's difference: "
                f"{difference(stored, sent)}"
            )
    finally:
        kube.close()


def _stored(sharddbs: ShardDBs, child: Obj) -> Obj | None:
    if not sharddbs.exists(child["kind"], child["metadata"]["name"]):
        return None
    return sharddbs.child(child["kind"], child["metadata"]["name"])
