"""Upgrading the hooks restarts no pod: a running child keeps its template until its user asks for the newer one.

An older version of the hooks is played by editing what it left in the world: a
template that differs from today's rendering (an extra env variable, as a changed
default would be), recorded as last applied, with or without the annotations
saying what it was made from. Each answer is fed back, as Metacontroller would.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from hooks import names, pod_templates, template_choice
from hooks.last_applied import LAST_APPLIED
from hooks.snapshot import Snapshot
from hooks.spec import ShardDBSpec
from hooks.workloads import TemplateRecord
from testbed.models.world import Hook, Obj, World, bring_up, sharddb, step

from ..support.hook import direct
from ..support.snapshots import sts

BASE: dict[str, Any] = {"shards": 3, "dbImage": "postgres:16", "cache": {"image": "redis:7", "replicas": 2}}
OLD_DEFAULT = {"name": "SHARDDB_OLD_DEFAULT", "value": "1"}


def spec(**changes: Any) -> ShardDBSpec:
    raw = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = raw
        for part in parents:
            target = target.setdefault(part, {})
        target[leaf] = value
    return ShardDBSpec.model_validate(raw)


# --- what shapes each template, held to pod_templates.py's templates ---------------------------

DB_SHAPING = {
    "dbImage": "postgres:17",
    "db__port": 6543,
    "db__env": [{"name": "A", "value": "1"}],
    "db__resources": {"limits": {"memory": "1Gi"}},
    "db__podMetadata": {"labels": {"team": "a"}},
    "drainCommand": ["sh", "-c", "sleep 1"],
    "drainGracePeriodSeconds": 90,
    "serviceAccountName": "db-runner",
    "imagePullSecrets": [{"name": "pull"}],
}
CACHE_SHAPING = {
    "cache__image": "redis:8",
    "cache__port": 6380,
    "cache__flushCommand": ["sh", "-c", "true"],
    "cache__flushGracePeriodSeconds": 45,
    "cache__env": [{"name": "B", "value": "2"}],
    "db__port": 6543,
    "serviceAccountName": "db-runner",
    "imagePullSecrets": [{"name": "pull"}],
}
NEITHER = {
    "shards": 5,
    "cache__replicas": 4,
    "podStartGraceSeconds": 10,
    "seedTimeoutSeconds": 60,
    "seedCommand": ["sh", "-c", "true"],
    "paused": True,
    "hibernated": True,
    "storage__size": "2Gi",
}


def render(component: str, shape: ShardDBSpec) -> Obj:
    return (
        pod_templates.db_template("shop", shape) if component == "db" else pod_templates.cache_template("shop", shape)
    )


@pytest.mark.parametrize(
    ("component", "field", "value"),
    [("db", f, v) for f, v in DB_SHAPING.items()] + [("cache", f, v) for f, v in CACHE_SHAPING.items()],
)
def test_a_field_that_shapes_a_template_changes_its_inputs(component: str, field: str, value: Any) -> None:
    changed = spec(**{field: value})
    assert render(component, changed) != render(component, spec()), "the field does not shape the template"
    assert template_choice.inputs(changed, component) != template_choice.inputs(spec(), component)


@pytest.mark.parametrize(
    ("component", "field", "value"),
    [("db", f, v) for f, v in {**NEITHER, **{k: v for k, v in CACHE_SHAPING.items() if k not in DB_SHAPING}}.items()]
    + [
        ("cache", f, v)
        for f, v in {**NEITHER, **{k: v for k, v in DB_SHAPING.items() if k not in CACHE_SHAPING}}.items()
    ],
)
def test_a_field_that_does_not_shape_a_template_leaves_its_inputs(component: str, field: str, value: Any) -> None:
    changed = spec(**{field: value})
    assert render(component, changed) == render(component, spec()), "the field shapes the template after all"
    assert template_choice.inputs(changed, component) == template_choice.inputs(spec(), component)


@pytest.mark.parametrize("component", ["db", "cache"])
def test_a_value_spelled_as_its_default_changes_no_inputs(component: str) -> None:
    defaults = spec(db__port=5432, drainGracePeriodSeconds=60, cache__port=6379, cache__flushGracePeriodSeconds=30)
    assert template_choice.inputs(defaults, component) == template_choice.inputs(spec(), component)


# --- the choice -------------------------------------------------------------------------------------

RENDERED: Obj = {
    "spec": {"containers": [{"name": "db", "image": "postgres:16", "env": [{"name": "NEW", "value": "1"}]}]}
}
RUNNING: Obj = {"spec": {"containers": [{"name": "db", "image": "postgres:16", "env": [OLD_DEFAULT]}]}}


def recorded(inputs: str | None = "abc", epoch: int | None = 1, applied: str | None = None) -> template_choice.Recorded:
    return template_choice.Recorded(RUNNING, RUNNING, True, inputs, epoch, applied)


def test_a_key_the_rendering_dropped_is_a_change_though_the_running_template_has_the_rest() -> None:
    """Metacontroller removes from the running template what its last answer had and this one lacks."""
    running = template_choice.Recorded(RUNNING, RUNNING, True, "abc", 1, None)
    lacking = {"spec": {"containers": [{"name": "db", "image": "postgres:16"}]}}
    assert template_choice.choose(running, lacking, "abc", None, may_lag=False) == template_choice.Choice(
        RUNNING, waiting=True
    )
    unrecorded = template_choice.Recorded(RUNNING, RUNNING, False, "abc", 1, None)
    assert template_choice.choose(unrecorded, lacking, "abc", None, may_lag=False) == template_choice.Choice(
        lacking, waiting=False
    )


def test_a_new_child_gets_the_rendered_template() -> None:
    assert template_choice.choose(None, RENDERED, "abc", None, may_lag=False) == template_choice.Choice(
        RENDERED, waiting=False
    )


def test_a_child_already_on_the_rendered_template_keeps_it_without_waiting() -> None:
    same = template_choice.Recorded(RENDERED, RENDERED, True, None, None, None)
    assert template_choice.choose(same, RENDERED, "abc", None, may_lag=False) == template_choice.Choice(
        RENDERED, waiting=False
    )


def test_an_unchanged_spec_keeps_the_running_template_and_says_a_newer_one_waits() -> None:
    assert template_choice.choose(recorded(), RENDERED, "abc", None, may_lag=False) == template_choice.Choice(
        RUNNING, waiting=True
    )


def test_a_spec_change_that_shapes_the_pods_applies_the_rendered_template() -> None:
    assert template_choice.choose(recorded(), RENDERED, "def", None, may_lag=False).template == RENDERED


def test_a_child_made_before_inputs_were_recorded_counts_as_made_from_an_unedited_spec() -> None:
    assert template_choice.choose(recorded(inputs=None), RENDERED, "abc", None, may_lag=False).waiting


def test_a_child_made_before_inputs_were_recorded_rolls_an_edit_made_since_the_last_answer() -> None:
    assert template_choice.choose(recorded(inputs=None), RENDERED, "abc", None, may_lag=True) == template_choice.Choice(
        RENDERED, waiting=False
    )


def test_a_recorded_child_trusts_its_record_over_the_generation() -> None:
    """An edit that shapes no pod of a recorded child (a scale) leaves its template as it runs."""
    assert template_choice.choose(recorded(), RENDERED, "abc", None, may_lag=True).waiting


def _seen(generation: int, answered: int | None, *, unrecorded: bool = False) -> Snapshot:
    """A ShardDB at ``generation`` whose last answer saw ``answered``; its StatefulSet without a record if asked."""
    statefulset = sts() if unrecorded else replace(sts(), made=TemplateRecord("abc", template_choice.EPOCH))
    return Snapshot("demo", "default", generation, spec(), statefulset=statefulset, answered_generation=answered)


def test_the_spec_is_edited_when_the_parent_is_newer_than_the_last_answer_saw() -> None:
    assert _seen(5, answered=4).edited
    assert not _seen(4, answered=4).edited


def test_without_a_status_only_a_never_edited_sharddb_counts_as_unedited() -> None:
    assert not _seen(1, answered=None).edited
    assert _seen(2, answered=None).edited


def test_the_status_remembers_what_a_child_without_a_record_lags_until_nothing_lags() -> None:
    assert _seen(5, answered=4, unrecorded=True).unrecorded_generation == 4
    assert _seen(5, answered=None, unrecorded=True).unrecorded_generation == 1
    assert _seen(4, answered=4, unrecorded=True).unrecorded_generation is None
    assert _seen(5, answered=4, unrecorded=False).unrecorded_generation is None


def test_a_new_apply_templates_value_applies_the_rendered_template_once() -> None:
    assert template_choice.choose(recorded(applied=None), RENDERED, "abc", "monday", may_lag=False).template == RENDERED
    assert template_choice.choose(recorded(applied="monday"), RENDERED, "abc", "monday", may_lag=False).waiting


def test_a_release_whose_change_cannot_wait_rolls_what_an_older_epoch_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(template_choice, "EPOCH", 2)
    assert template_choice.choose(recorded(epoch=1), RENDERED, "abc", None, may_lag=False).template == RENDERED
    assert template_choice.choose(recorded(epoch=None), RENDERED, "abc", None, may_lag=False).template == RENDERED
    assert template_choice.choose(recorded(epoch=2), RENDERED, "abc", None, may_lag=False).waiting


# --- through the hook, answers fed back ---------------------------------------------------------------


@pytest.fixture
def hook() -> Hook:
    return direct


def made_by_an_older_version(obj: Obj, *, recorded: bool) -> None:
    """What an older version of the hooks left: another default in the template, as stored and as last applied."""
    for target in (obj, json.loads(obj["metadata"]["annotations"][LAST_APPLIED])):
        target["spec"]["template"]["spec"]["containers"][0]["env"].append(OLD_DEFAULT)
        annotations = target["metadata"].setdefault("annotations", {})
        if not recorded:
            for key in (names.TEMPLATE_INPUTS_ANNOTATION, names.TEMPLATE_EPOCH_ANNOTATION):
                annotations.pop(key, None)
        if target is not obj:
            obj["metadata"]["annotations"][LAST_APPLIED] = json.dumps(target)


def env(obj: Obj | None) -> list[Obj]:
    assert obj is not None
    found: list[Obj] = obj["spec"]["template"]["spec"]["containers"][0]["env"]
    return found


@pytest.fixture
def upgraded(hook: Hook) -> World:
    """An Available ShardDB whose shards and cache an older version of the hooks made."""
    world = World(sharddb("shop", shards=3))
    bring_up(world, hook)
    for obj in (world.statefulset(), world.cache()):
        assert obj is not None
        made_by_an_older_version(obj, recorded=False)
    return world


def test_upgraded_hooks_write_no_pod_template_while_the_spec_is_unchanged(upgraded: World, hook: Hook) -> None:
    before = [copy.deepcopy(upgraded.statefulset()), copy.deepcopy(upgraded.cache())]
    for _ in range(3):
        answer = step(upgraded, hook)
    for old, new in zip(before, (upgraded.statefulset(), upgraded.cache()), strict=True):
        assert old is not None
        assert new is not None
        assert new["spec"]["template"] == old["spec"]["template"]
        assert new["metadata"]["generation"] == old["metadata"]["generation"], "a template write rolls every pod"
    assert answer["status"]["newerTemplates"] == "shards, cache"
    progressing = next(c for c in answer["status"]["conditions"] if c["type"] == "Progressing")
    assert progressing["status"] == "False"
    assert names.APPLY_TEMPLATES_ANNOTATION in progressing["message"]


def test_apply_templates_rolls_shards_then_cache_once(upgraded: World, hook: Hook) -> None:
    step(upgraded, hook)
    upgraded.parent["metadata"].setdefault("annotations", {})[names.APPLY_TEMPLATES_ANNOTATION] = "now"
    answer = step(upgraded, hook)
    assert OLD_DEFAULT not in env(upgraded.statefulset())
    assert OLD_DEFAULT in env(upgraded.cache()), "the cache rolls after the shards"
    upgraded.run_statefulset()
    step(upgraded, hook)
    assert OLD_DEFAULT not in env(upgraded.cache())
    upgraded.run_cache()
    generations = [upgraded.statefulset()["metadata"]["generation"], upgraded.cache()["metadata"]["generation"]]  # type: ignore[index]
    for _ in range(3):
        answer = step(upgraded, hook)
    assert answer["status"]["newerTemplates"] == "none"
    assert generations == [upgraded.statefulset()["metadata"]["generation"], upgraded.cache()["metadata"]["generation"]]  # type: ignore[index]


def test_a_spec_change_rolls_with_the_newer_template(upgraded: World, hook: Hook) -> None:
    step(upgraded, hook)
    upgraded.edit_spec(db={"env": [{"name": "TZ", "value": "UTC"}]})
    answer = step(upgraded, hook)
    assert OLD_DEFAULT not in env(upgraded.statefulset())
    assert {"name": "TZ", "value": "UTC"} in env(upgraded.statefulset())
    assert answer["status"]["newerTemplates"] == "cache", "the cache's spec is unchanged: it keeps waiting"


def test_a_recorded_child_keeps_its_template_through_a_later_upgrade(hook: Hook) -> None:
    world = World(sharddb("shop", shards=3))
    bring_up(world, hook)
    sts = world.statefulset()
    assert sts is not None
    assert sts["metadata"]["annotations"][names.TEMPLATE_INPUTS_ANNOTATION]
    made_by_an_older_version(sts, recorded=True)
    world.edit_spec(podStartGraceSeconds=30)  # an edit that shapes no pod
    generation = sts["metadata"]["generation"]
    answer = step(world, hook)
    assert world.statefulset()["metadata"]["generation"] == generation  # type: ignore[index]
    assert answer["status"]["newerTemplates"] == "shards"


# --- an edit made after an upgrade, before the first answer ---------------------------------------


def image(obj: Obj | None) -> str:
    assert obj is not None
    found: str = obj["spec"]["template"]["spec"]["containers"][0]["image"]
    return found


def test_an_edit_before_the_first_answer_after_an_upgrade_rolls_the_shards(upgraded: World, hook: Hook) -> None:
    upgraded.edit_spec(dbImage="postgres:17")
    answer = step(upgraded, hook)
    assert image(upgraded.statefulset()) == "postgres:17"
    assert OLD_DEFAULT not in env(upgraded.statefulset()), "it rolls with today's template"
    assert answer["status"]["newerTemplates"] == "none"


def test_an_edit_before_the_first_answer_after_an_upgrade_reaches_the_cache_after_the_shards(
    upgraded: World, hook: Hook
) -> None:
    upgraded.edit_spec(cache={"image": "redis:8", "replicas": 2})
    step(upgraded, hook)
    assert image(upgraded.cache()) == "redis:7", "the cache rolls after the shards"
    upgraded.run_statefulset()
    step(upgraded, hook)
    assert image(upgraded.cache()) == "redis:8"


def test_an_edit_that_shapes_no_pod_still_rolls_a_child_without_a_record(upgraded: World, hook: Hook) -> None:
    """Nothing says what the edit changed: an unasked roll is the price of never losing an edit."""
    upgraded.edit_spec(podStartGraceSeconds=30)
    step(upgraded, hook)
    assert OLD_DEFAULT not in env(upgraded.statefulset())


def test_a_stale_parent_records_the_spec_it_shows_and_the_newer_spec_rolls_next(upgraded: World, hook: Hook) -> None:
    stale = copy.deepcopy(upgraded.parent)
    upgraded.edit_spec(dbImage="postgres:17")
    fresh, upgraded.parent = upgraded.parent, stale
    step(upgraded, hook)
    assert image(upgraded.statefulset()) == "postgres:16", "the stale parent shows no edit"
    fresh["status"], upgraded.parent = upgraded.parent["status"], fresh  # its status, written over the fresh one
    step(upgraded, hook)
    assert image(upgraded.statefulset()) == "postgres:17"


def test_an_edit_still_rolls_after_the_child_write_failed(upgraded: World, hook: Hook) -> None:
    """Metacontroller writes the status even where the children's writes fail."""
    upgraded.edit_spec(dbImage="postgres:17")
    answer = hook(upgraded.request(), upgraded.finalizing)
    upgraded.parent["status"] = {**answer["status"], "observedGeneration": upgraded.parent["metadata"]["generation"]}
    assert image(upgraded.statefulset()) == "postgres:16"
    step(upgraded, hook)
    assert image(upgraded.statefulset()) == "postgres:17"


def test_the_memory_of_a_lagging_edit_goes_once_the_children_record_their_templates(
    upgraded: World, hook: Hook
) -> None:
    upgraded.edit_spec(dbImage="postgres:17")
    assert step(upgraded, hook)["status"][template_choice.UNRECORDED_GENERATION] == 1
    assert template_choice.UNRECORDED_GENERATION not in step(upgraded, hook)["status"]


def test_an_unedited_sharddb_writes_no_memory_of_a_lagging_edit(upgraded: World, hook: Hook) -> None:
    assert template_choice.UNRECORDED_GENERATION not in step(upgraded, hook)["status"]


def test_the_answer_to_an_edit_is_a_fixed_point_while_its_child_write_fails(upgraded: World, hook: Hook) -> None:
    upgraded.edit_spec(dbImage="postgres:17")
    first = hook(upgraded.request(), upgraded.finalizing)
    upgraded.parent["status"] = {**first["status"], "observedGeneration": upgraded.parent["metadata"]["generation"]}
    assert hook(upgraded.request(), upgraded.finalizing) == first


def test_a_cache_change_an_older_version_held_for_the_shards_rolls_after_them(hook: Hook) -> None:
    """Upgraded mid-rollout: the older version had rolled the shards and held the cache, unrecorded."""
    world = World(sharddb("shop", shards=3))
    bring_up(world, hook)
    world.edit_spec(dbImage="postgres:17", cache={"image": "redis:8", "replicas": 2})
    step(world, hook)  # the shards roll first; the cache keeps redis:7
    for obj in (world.statefulset(), world.cache()):
        assert obj is not None
        made_by_an_older_version(obj, recorded=False)
    step(world, hook)
    assert image(world.cache()) == "redis:7", "still after the shards"
    world.run_statefulset()
    step(world, hook)
    assert image(world.cache()) == "redis:8"


def test_a_cache_without_a_record_keeps_its_template_when_the_last_answer_rolled_nothing(
    upgraded: World, hook: Hook
) -> None:
    """Only a rollout says a cache change may have waited; other progress (a pod starting) restarts no cache."""
    progressing = next(c for c in upgraded.parent["status"]["conditions"] if c["type"] == "Progressing")
    progressing.update(status="True", reason="PodsStarting")
    cache = copy.deepcopy(upgraded.cache())
    step(upgraded, hook)
    assert cache is not None
    assert upgraded.cache()["spec"] == cache["spec"]  # type: ignore[index]


def test_a_cache_without_a_record_rolls_when_the_last_answer_said_a_rollout_ran(upgraded: World, hook: Hook) -> None:
    """The shards rolled to the end while no hooks answered: the cache change they held back may still wait."""
    progressing = next(c for c in upgraded.parent["status"]["conditions"] if c["type"] == "Progressing")
    progressing.update(status="True", reason="RollingUpdate")
    step(upgraded, hook)
    assert OLD_DEFAULT not in env(upgraded.cache())
    assert OLD_DEFAULT in env(upgraded.statefulset()), "the shards' template is the one their last answer asked for"
