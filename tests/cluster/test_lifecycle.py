"""Every child the hooks return, at every lifecycle stage, is accepted by a real API server.

Created children get Metacontroller's namespace, owner reference and
last-applied annotation; existing ones are updated in place by merging the
desired object over the stored one and PUTting it, as Metacontroller's InPlace
strategy does. A Forbidden or immutable-field error would fail the round.
"""

from __future__ import annotations

from typing import Any

import pytest

from testbed.models.metacontroller import LAST_APPLIED, SELECTOR_LABEL

from ..support.kube import Kube
from ..support.samples import SPEC
from .loop import Loop

Obj = dict[str, Any]

KIND_NAMES = {
    ("Service", "demo-db"),
    ("StatefulSet", "demo-db"),
    ("PodDisruptionBudget", "demo-db"),
}
CACHE = {("Deployment", "demo-cache"), ("Service", "demo-cache"), ("PodDisruptionBudget", "demo-cache")}


@pytest.fixture
def loop(kube: Kube, namespace: str) -> Loop:
    driver = Loop(kube, namespace)
    driver.create(SPEC)
    return driver


def _children(answer: Obj) -> set[tuple[str, str]]:
    return {(child["kind"], child["metadata"]["name"]) for child in answer["children"]}


def test_fresh_sharddb_gets_its_shards_owned_by_it(loop: Loop) -> None:
    answer = loop.round()
    assert _children(answer) == KIND_NAMES
    uid = loop.parent_stored["metadata"]["uid"]
    for kind, name in KIND_NAMES:
        meta = loop.kube.get(kind, name, loop.namespace)["metadata"]
        assert meta["ownerReferences"][0]["uid"] == uid
        assert meta["labels"][SELECTOR_LABEL] == uid
        assert LAST_APPLIED in meta["annotations"]


def test_ready_shards_get_the_seed_job_created(loop: Loop) -> None:
    answer = loop.until("Seeding")
    assert ("Job", "demo-seed-3") in _children(answer)
    job = loop.kube.get("Job", "demo-seed-3", loop.namespace)
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "postgres:16"


def test_available_sharddb_has_every_child_stored(loop: Loop) -> None:
    answer = loop.until("Available")
    expected = KIND_NAMES | CACHE | {("Job", "demo-seed-3")}
    assert _children(answer) == expected
    for kind, name in expected:
        assert loop.kube.exists(kind, name, loop.namespace), f"{kind}/{name} not stored"
    assert loop.parent_stored["status"]["phase"] == "Available"


def _image(loop: Loop, kind: str, name: str) -> str:
    image: str = loop.kube.get(kind, name, loop.namespace)["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


def test_image_bump_rolls_the_shards_in_place_then_the_cache(loop: Loop) -> None:
    loop.until("Available")
    before = loop.kube.get("StatefulSet", "demo-db", loop.namespace)
    loop.edit({"dbImage": "postgres:16.4", "cache": {"image": "redis:7.4"}})
    answer = loop.round()
    sts = loop.kube.get("StatefulSet", "demo-db", loop.namespace)
    assert _image(loop, "StatefulSet", "demo-db") == "postgres:16.4"
    assert _image(loop, "Deployment", "demo-cache") == "redis:7", "the cache moved before the shards rolled"
    assert sts["metadata"]["uid"] == before["metadata"]["uid"]  # updated, not replaced
    assert sts["metadata"]["generation"] > before["metadata"]["generation"]
    progressing = next(c for c in answer["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "RollingUpdate")

    loop.world.run_statefulset()  # every shard updated and ready: now the cache
    loop.round()
    assert _image(loop, "Deployment", "demo-cache") == "redis:7.4"
    loop.settle()
    assert loop.until("Available")["status"]["updatedShards"] == 3


def test_scale_up_grows_statefulset_in_place_and_seeds_the_new_count(loop: Loop) -> None:
    loop.until("Available")
    loop.edit({"shards": 5})
    loop.round()
    assert loop.kube.get("StatefulSet", "demo-db", loop.namespace)["spec"]["replicas"] == 5
    loop.settle()
    answer = loop.round()
    assert ("Job", "demo-seed-5") in _children(answer)
    assert loop.kube.exists("Job", "demo-seed-5", loop.namespace)
    assert loop.kube.exists("Job", "demo-seed-3", loop.namespace)  # a finished seed is kept
    assert loop.until("Available")["status"]["shards"] == 5


def test_cache_replicas_change_updates_the_deployment_in_place(loop: Loop) -> None:
    loop.until("Available")
    loop.edit({"cache": {"replicas": 4}})
    loop.round()
    assert loop.kube.get("Deployment", "demo-cache", loop.namespace)["spec"]["replicas"] == 4


def test_finalize_scales_cache_then_shards_to_zero_then_lets_go(loop: Loop) -> None:
    loop.until("Available")
    loop.delete()
    assert loop.round()["status"]["phase"] == "DrainingCache"
    for kind, name in (("PodDisruptionBudget", "demo-db"), ("PodDisruptionBudget", "demo-cache")):
        assert not loop.kube.exists(kind, name, loop.namespace), f"{kind}/{name} outlived the cache"
    assert loop.kube.get("Deployment", "demo-cache", loop.namespace)["spec"]["replicas"] == 0
    assert loop.kube.get("StatefulSet", "demo-db", loop.namespace)["spec"]["replicas"] == 3

    loop.world.run_cache()
    loop.world.remove_pods("cache")
    assert loop.round()["status"]["phase"] == "DrainingShards"
    assert loop.kube.get("StatefulSet", "demo-db", loop.namespace)["spec"]["replicas"] == 0

    loop.world.run_statefulset()
    loop.world.remove_pods("db")
    answer = loop.round()
    assert answer["finalized"] is True
    assert not loop.kube.exists("ShardDB", "demo", loop.namespace)
