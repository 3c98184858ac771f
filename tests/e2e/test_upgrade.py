"""Upgrading the hooks restarts no database: ShardDBs brought up by an older version, then the hooks replaced.

The older version is a revision of this repository whose shard and cache templates
differ from today's (its default drain ran ``pg_ctl stop``), run from ``git archive``
as the fleet benchmark runs its baseline, on a stack of its own. After the upgrade
(today's CRD, CompositeController and hooks on the same URLs) nothing that holds pods
is rewritten until a user asks: a spec change, or the apply-templates annotation. One
ShardDB is edited while no hooks answer, so today's hooks see the edit before any answer
of theirs recorded what its children were made from: the edit still rolls.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.source import extract
from hooks import names
from hooks.spec import DEFAULT_DRAIN_COMMAND
from testbed.real.server import ROOT
from testbed.stack import Stack, StackOptions

from ..support.kube import Kube
from ..support.sharddbs import ShardDBs, condition, is_true, wait_until
from .conftest import RESYNC_SECONDS, new_namespace, start_stack

# main before the drain stopped calling pg_ctl: its shard template differs from today's (its cache's does not).
OLDER = "8d05697"
NAMES = ("kept", "asked", "edited")
RUSHED = "rushed"  # edited between the older hooks' last answer and today's first one
RUSHED_IMAGE = "postgres:17"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def older() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="sharddb-older-") as directory:
        try:
            yield extract(OLDER, Path(directory)).directory
        except subprocess.CalledProcessError as error:
            pytest.fail(
                f"end-to-end tier: revision {OLDER} is not in this clone's history ({error.stderr!r}); "
                "clone the repository with its history (not --depth)",
                pytrace=False,
            )


@pytest.fixture(scope="module")
def upgraded(older: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Stack, ShardDBs, dict[str, Obj]]]:
    """Four ShardDBs Available under the older hooks; then today's hooks; what each held before.

    ``RUSHED`` is edited while neither version answers (a hooks rollout triggers no sync, so at
    the shipped resync an edit lands there for up to ten minutes): today's hooks answer it first.
    """
    stack = start_stack(StackOptions(checkout=older, isolated=True, resync_seconds=RESYNC_SECONDS))
    plane = stack.control_plane
    kube = Kube(plane.url, plane.token, plane.ca_file, plane.kubeconfig)
    try:
        sharddbs = ShardDBs(kube, new_namespace(kube, request))
        for name in (*NAMES, RUSHED):
            sharddbs.create(name)
        for name in (*NAMES, RUSHED):
            sharddbs.available(name, timeout=120)
        before = {name: _state(sharddbs, name) for name in (*NAMES, RUSHED)}
        stack.stop_hooks()
        response = sharddbs.patch(RUSHED, {"dbImage": RUSHED_IMAGE})
        assert response.status_code == 200, response.text
        stack.replace_hooks(ROOT)
        yield stack, sharddbs, before
    finally:
        kube.close()
        stack.stop()


def _state(sharddbs: ShardDBs, name: str) -> Obj:
    """Its pods, and its pod templates as stored (a Deployment's generation also counts annotation edits)."""
    return {
        "pods": sorted(p["metadata"]["uid"] for c in ("db", "cache") for p in sharddbs.pods(name, c)),
        "statefulset": sharddbs.child("StatefulSet", f"{name}-db")["spec"]["template"],
        "deployment": sharddbs.child("Deployment", f"{name}-cache")["spec"]["template"],
    }


def _newer(sharddbs: ShardDBs, name: str) -> str:
    return str(sharddbs.get(name).get("status", {}).get("newerTemplates", ""))


def _wait_newer(sharddbs: ShardDBs, name: str, expected: str) -> None:
    wait_until(f"{name}'s newer templates: {expected}", lambda: _newer(sharddbs, name) == expected, 120)


def _wait_complete(sharddbs: ShardDBs, name: str) -> None:
    """Available holds through a rollout: wait for its end (every shard updated, nothing progressing)."""

    def done() -> bool:
        found = sharddbs.get(name)
        progressing = condition(found, "Progressing")
        fresh = found.get("status", {}).get("observedGeneration") == found["metadata"]["generation"]
        return fresh and progressing.get("reason") == "Complete" and is_true(found, "Available")

    wait_until(f"{name}'s rollout to complete", done, 180)


def _shard_container(sharddbs: ShardDBs, name: str) -> Obj:
    found: Obj = sharddbs.child("StatefulSet", f"{name}-db")["spec"]["template"]["spec"]["containers"][0]
    return found


def _drain(sharddbs: ShardDBs, name: str) -> list[str]:
    found: list[str] = _shard_container(sharddbs, name)["lifecycle"]["preStop"]["exec"]["command"]
    return found


def test_upgraded_hooks_restart_no_pod_and_write_no_template(upgraded: tuple[Stack, ShardDBs, dict[str, Obj]]) -> None:
    stack, sharddbs, before = upgraded
    mark, calls = stack.audit.mark(), stack.hook_calls()
    time.sleep(3 * RESYNC_SECONDS)
    assert stack.hook_calls() >= calls + 2 * len(NAMES), "today's hooks were not called"
    for name in NAMES:
        assert _state(sharddbs, name) == before[name], f"{name}: a pod restarted or a template was written"
        assert _drain(sharddbs, name) != list(DEFAULT_DRAIN_COMMAND), "the older version's template is kept"
        assert is_true(sharddbs.get(name), "Available")
        _wait_newer(sharddbs, name, "shards")
    deleted = [
        w
        for w in stack.audit.since(mark, namespace=sharddbs.namespace)
        if w.resource == "pods" and w.verb == "delete" and not w.name.startswith(f"{RUSHED}-")  # it was edited
    ]
    assert deleted == []


def test_apply_templates_rolls_one_sharddb_once(upgraded: tuple[Stack, ShardDBs, dict[str, Obj]]) -> None:
    _, sharddbs, before = upgraded
    patch = {"metadata": {"annotations": {names.APPLY_TEMPLATES_ANNOTATION: "2026-12-01"}}}
    response = sharddbs.kube.merge_patch("ShardDB", "asked", sharddbs.namespace, patch)
    assert response.status_code == 200, response.text
    _wait_newer(sharddbs, "asked", "none")
    wait_until("asked's shards rolled", lambda: _drain(sharddbs, "asked") == list(DEFAULT_DRAIN_COMMAND), 120)
    _wait_complete(sharddbs, "asked")
    rolled = _state(sharddbs, "asked")
    assert rolled["statefulset"] != before["asked"]["statefulset"]
    assert rolled["deployment"] == before["asked"]["deployment"], "the cache's template had nothing newer"
    time.sleep(3 * RESYNC_SECONDS)
    assert _state(sharddbs, "asked") == rolled, "it kept rolling"
    assert _state(sharddbs, "kept") == before["kept"], "another ShardDB rolled with it"


def test_a_spec_change_rolls_with_todays_template(upgraded: tuple[Stack, ShardDBs, dict[str, Obj]]) -> None:
    _, sharddbs, before = upgraded
    response = sharddbs.patch("edited", {"db": {"env": [{"name": "TZ", "value": "UTC"}]}})
    assert response.status_code == 200, response.text
    wait_until("edited's shards rolled", lambda: _drain(sharddbs, "edited") == list(DEFAULT_DRAIN_COMMAND), 120)
    _wait_complete(sharddbs, "edited")
    assert _newer(sharddbs, "edited") == "none"
    assert _state(sharddbs, "edited")["deployment"] == before["edited"]["deployment"], "the cache's spec is unchanged"


def test_an_edit_before_the_first_answer_after_the_upgrade_rolls(
    upgraded: tuple[Stack, ShardDBs, dict[str, Obj]],
) -> None:
    _, sharddbs, before = upgraded
    wait_until(
        f"{RUSHED}'s shards rolled to {RUSHED_IMAGE}",
        lambda: _shard_container(sharddbs, RUSHED)["image"] == RUSHED_IMAGE,
        120,
    )
    assert _drain(sharddbs, RUSHED) == list(DEFAULT_DRAIN_COMMAND), "it rolls with today's template"
    _wait_complete(sharddbs, RUSHED)
    pods = {p["metadata"]["uid"] for p in sharddbs.pods(RUSHED, "db")}
    assert not pods & set(before[RUSHED]["pods"]), "every shard restarted onto the edit"
    assert all(p["spec"]["containers"][0]["image"] == RUSHED_IMAGE for p in sharddbs.pods(RUSHED, "db"))
    assert _newer(sharddbs, RUSHED) == "none"
    assert "unrecordedGeneration" not in sharddbs.get(RUSHED)["status"], "the children record what made them"
