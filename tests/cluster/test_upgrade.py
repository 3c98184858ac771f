"""Upgraded hooks over children an older version made, on the real API server: no pod template is written.

An older version is played by rewriting what it left: the StatefulSet's and the cache
Deployment's pod template (as stored and as last applied) with another default in it,
and without the record of what they were made from. Every answer then goes through
Metacontroller's write path for real (``loop.py``), so a write the upgrade did not
mean shows as an update here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hooks import names
from testbed.models.metacontroller import LAST_APPLIED

from ..support.kube import error_message, path
from .loop import Loop

Obj = dict[str, Any]
OLD_DEFAULT = {"name": "SHARDDB_OLD_DEFAULT", "value": "1"}
CHILDREN = (("StatefulSet", "demo-db"), ("Deployment", "demo-cache"))
RECORD = tuple(
    f".metadata.annotations.{k}" for k in (names.TEMPLATE_INPUTS_ANNOTATION, names.TEMPLATE_EPOCH_ANNOTATION)
)


def made_by_an_older_version(loop: Loop) -> None:
    for kind, name in CHILDREN:
        stored = loop.kube.get(kind, name, loop.namespace)
        last = json.loads(stored["metadata"]["annotations"][LAST_APPLIED])
        for target in (stored, last):
            target["spec"]["template"]["spec"]["containers"][0]["env"].append(OLD_DEFAULT)
            for key in (names.TEMPLATE_INPUTS_ANNOTATION, names.TEMPLATE_EPOCH_ANNOTATION):
                target["metadata"].get("annotations", {}).pop(key, None)
        stored["metadata"]["annotations"][LAST_APPLIED] = json.dumps(last)
        response = loop.kube.http.put(path(kind, name, loop.namespace), json=stored)
        assert response.status_code == 200, error_message(response)
    loop.refresh()
    loop.settle()  # the controllers caught up with what the older version wrote: its pods run, nothing rolls


def templates(loop: Loop) -> list[Obj]:
    return [loop.kube.get(kind, name, loop.namespace)["spec"]["template"] for kind, name in CHILDREN]


@pytest.fixture
def upgraded(available: Loop) -> Loop:
    made_by_an_older_version(available)
    return available


def test_the_first_rounds_after_an_upgrade_record_the_templates_and_write_none(upgraded: Loop) -> None:
    before, updates = templates(upgraded), len(upgraded.updates)
    for _ in range(3):
        answer = upgraded.round()
    written = [(kind, line.split(":", 1)[0]) for kind, _, lines in upgraded.updates[updates:] for line in lines]
    assert [field for _, field in written if LAST_APPLIED not in field and not field.startswith(RECORD)] == []
    assert {kind for kind, _ in written} == {"StatefulSet", "Deployment"}, "each records what it was made from, once"
    assert len(upgraded.updates) - updates == 2
    assert templates(upgraded) == before
    assert answer["status"]["newerTemplates"] == "shards, cache"
    assert upgraded.parent_stored["status"]["newerTemplates"] == "shards, cache"


def test_apply_templates_writes_each_template_once(upgraded: Loop) -> None:
    upgraded.round()
    patch = {"metadata": {"annotations": {names.APPLY_TEMPLATES_ANNOTATION: "now"}}}
    response = upgraded.kube.merge_patch("ShardDB", upgraded.name, upgraded.namespace, patch)
    assert response.status_code == 200, error_message(response)
    upgraded.round()
    shards, cache = templates(upgraded)
    assert OLD_DEFAULT not in shards["spec"]["containers"][0]["env"]
    assert OLD_DEFAULT in cache["spec"]["containers"][0]["env"], "the cache rolls after the shards"
    upgraded.settle()
    upgraded.world.publish_endpoints()
    upgraded.round()
    upgraded.settle()
    answer = upgraded.round()
    assert OLD_DEFAULT not in templates(upgraded)[1]["spec"]["containers"][0]["env"]
    assert answer["status"]["newerTemplates"] == "none"
    updates, status_writes = len(upgraded.updates), upgraded.status_writes
    upgraded.round()
    assert upgraded.updates[updates:] == [], "the request was applied again"
    assert upgraded.status_writes == status_writes


def test_an_edit_made_at_once_after_an_upgrade_rolls_the_shards(upgraded: Loop) -> None:
    """Edited before today's hooks answer once: the edit is not taken as what the older version made."""
    upgraded.edit({"dbImage": "postgres:17"})
    answer = upgraded.round()
    shards = templates(upgraded)[0]["spec"]["containers"][0]
    assert shards["image"] == "postgres:17"
    assert OLD_DEFAULT not in shards["env"], "it rolls with today's template"
    assert OLD_DEFAULT in templates(upgraded)[1]["spec"]["containers"][0]["env"], "the cache rolls after the shards"
    assert answer["status"]["newerTemplates"] == "none", "nothing says what the edit shaped: the cache rolls too"
    # The real API server keeps the memory of the lagging edit (declared by the CRD), until the child records it.
    assert upgraded.parent_stored["status"]["unrecordedGeneration"] == 1
    assert "unrecordedGeneration" not in upgraded.round()["status"]
