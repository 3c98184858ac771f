"""Requests the hooks cannot act on get a 4xx that names the problem, never a 5xx."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from hooks.service.app import create_app
from hooks.service.settings import Settings
from testbed.models.world import Obj, World, bring_up, sharddb

pytestmark = pytest.mark.http


def valid() -> Obj:
    from ..support.hook import direct

    world = World(sharddb())
    bring_up(world, direct)
    return world.request()


def mutate(change: Callable[[Obj], Any]) -> bytes:
    request = valid()
    change(request)
    return json.dumps(request).encode()


def spec_field(key: str, value: Any) -> Callable[[Obj], Any]:
    return lambda r: r["parent"]["spec"].__setitem__(key, value)


def drop_spec_field(key: str) -> Callable[[Obj], Any]:
    return lambda r: r["parent"]["spec"].pop(key)


def first_sts(r: Obj) -> Obj:
    return next(iter(r["children"]["StatefulSet.apps/v1"].values()))


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"next": value}
    return value


def paused_with(change: Callable[[Obj], Any]) -> Callable[[Obj], Any]:
    """A paused ShardDB, whose observed StatefulSet goes back out as it is, changed by ``change``."""

    def apply(request: Obj) -> None:
        request["parent"]["spec"]["paused"] = True
        change(first_sts(request))

    return apply


CASES: dict[str, tuple[bytes, int, str]] = {
    "not JSON": (b"{parent: nope", 400, "not valid JSON"),
    "empty body": (b"", 400, "not valid JSON"),
    "invalid UTF-8": (
        mutate(lambda r: r["parent"].__setitem__("apiVersion", "@")).replace(b'"@"', b'"\xff\xfe"'),
        400,
        "not valid JSON",
    ),
    "nested too deeply": (
        mutate(spec_field("extra", "@")).replace(b'"@"', b"[" * 100_000 + b"]" * 100_000),
        400,
        "nested too deeply",
    ),
    "JSON array": (b"[]", 422, "body"),
    "missing parent": (json.dumps({"children": {}}).encode(), 422, "parent: Field required"),
    "parent not an object": (json.dumps({"parent": 7}).encode(), 422, "parent"),
    "wrong parent kind": (mutate(lambda r: r["parent"].__setitem__("kind", "Deployment")), 422, "parent.kind"),
    "wrong parent group": (
        mutate(lambda r: r["parent"].__setitem__("apiVersion", "apps/v1")),
        422,
        "parent.apiVersion",
    ),
    "shards as a string": (mutate(spec_field("shards", "3")), 422, "parent.spec.shards"),
    "shards zero": (mutate(spec_field("shards", 0)), 422, "parent.spec.shards"),
    "shards negative": (mutate(spec_field("shards", -2)), 422, "parent.spec.shards"),
    "shards huge": (mutate(spec_field("shards", 10**30)), 422, "parent.spec.shards"),
    "shards boolean": (mutate(spec_field("shards", True)), 422, "parent.spec.shards"),
    "missing dbImage": (mutate(drop_spec_field("dbImage")), 422, "parent.spec.dbImage"),
    "empty dbImage": (mutate(spec_field("dbImage", "")), 422, "parent.spec.dbImage"),
    "missing cache": (mutate(drop_spec_field("cache")), 422, "parent.spec.cache"),
    "negative cache replicas": (
        mutate(spec_field("cache", {"image": "redis:7", "replicas": -1})),
        422,
        "parent.spec.cache.replicas",
    ),
    "empty seed command": (mutate(spec_field("seedCommand", [])), 422, "parent.spec.seedCommand"),
    "storage size no quantity": (mutate(spec_field("storage", {"size": "lots"})), 422, "parent.spec.storage.size"),
    "paused not a boolean": (mutate(spec_field("paused", "yes")), 422, "parent.spec.paused"),
    "a pod field with an integer beyond 64 bits": (
        mutate(spec_field("db", {"podSecurityContext": {"supplementalGroups": [10**28]}})),
        422,
        "parent.spec.db.podSecurityContext.supplementalGroups.0",
    ),
    "cpu limit not a quantity": (
        mutate(spec_field("db", {"resources": {"limits": {"cpu": "lots"}}})),
        422,
        "parent.spec.db.resources.limits.cpu: 'lots' is not a quantity such as 500m, 2 or 1Gi",
    ),
    "toleration operator Maybe": (
        mutate(spec_field("db", {"tolerations": [{"key": "dedicated", "operator": "Maybe"}]})),
        422,
        "parent.spec.db.tolerations.0.operator: 'Maybe' is not one of ['Equal', 'Exists']",
    ),
    "unknown field inside affinity": (
        mutate(spec_field("db", {"affinity": {"nodeAffinity": {"preferred": []}}})),
        422,
        "parent.spec.db.affinity.nodeAffinity.preferred: unknown field",
    ),
    "env var without a name": (
        mutate(lambda r: r["parent"]["spec"]["cache"].__setitem__("env", [{"value": "x"}])),
        422,
        "parent.spec.cache.env.0.name: Field required",
    ),
    "pod label that is a selector label": (
        mutate(spec_field("db", {"podMetadata": {"labels": {"app.kubernetes.io/component": "web"}}})),
        422,
        "parent.spec.db.podMetadata.labels: may not set app.kubernetes.io/name, app.kubernetes.io/instance or "
        "app.kubernetes.io/component: ShardDB selects its pods by them",
    ),
    "cache port out of range": (
        mutate(lambda r: r["parent"]["spec"]["cache"].__setitem__("port", 70000)),
        422,
        "parent.spec.cache.port",
    ),
    "relative data path": (mutate(spec_field("db", {"dataPath": "data"})), 422, "parent.spec.db.dataPath"),
    "child replicas wrong type": (
        mutate(lambda r: first_sts(r)["spec"].__setitem__("replicas", "three")),
        422,
        "children.StatefulSet.apps/v1",
    ),
    "child of the wrong kind in a group": (
        mutate(lambda r: first_sts(r).__setitem__("kind", "Deployment")),
        422,
        "kind",
    ),
    "child without a name": (
        mutate(lambda r: first_sts(r)["metadata"].pop("name")),
        422,
        "metadata.name",
    ),
    "finalizing not a boolean": (mutate(lambda r: r.__setitem__("finalizing", "maybe")), 422, "finalizing"),
    "NaN, which JSON does not have": (
        mutate(spec_field("shards", 3)).replace(b'"shards": 3', b'"shards": NaN'),
        400,
        "not valid JSON",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("hook", ["/sync", "/finalize"])
def test_bad_request_is_refused_with_a_message_naming_the_problem(client: httpx.Client, hook: str, name: str) -> None:
    body, status, needle = CASES[name]
    response = client.post(hook, content=body, headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    assert needle in response.json()["detail"]


# A paused sync answers with the observed children themselves, so they must be fit to go back out.
PAUSED_CASES: dict[str, tuple[bytes, int, str]] = {
    "paused, echoing a child nested too deeply": (
        mutate(paused_with(lambda sts: sts["spec"].__setitem__("extra", nested(100)))),
        422,
        "nested deeper than 64 levels",
    ),
    "paused, echoing a child with an integer beyond 64 bits": (
        mutate(paused_with(lambda sts: sts["spec"].__setitem__("extra", 10**30))),
        422,
        "an integer beyond 64 bits",
    ),
}


@pytest.mark.parametrize("name", list(PAUSED_CASES))
def test_paused_sync_refuses_children_it_could_not_echo(client: httpx.Client, name: str) -> None:
    body, status, needle = PAUSED_CASES[name]
    response = client.post("/sync", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    assert needle in response.json()["detail"]


def test_customize_refuses_a_missing_parent(client: httpx.Client) -> None:
    response = client.post("/customize", json={})
    assert response.status_code == 422
    assert "parent" in response.json()["detail"]


def test_oversized_body_is_refused_with_413(client: httpx.Client) -> None:
    response = client.post("/sync", content=b" " * (Settings().max_body_bytes + 1))
    assert response.status_code == 413
    assert "exceeds" in response.json()["detail"]


def test_oversized_body_without_content_length_is_refused_with_413() -> None:
    with TestClient(create_app(Settings(max_body_bytes=1000))) as local:
        chunks = (b"x" * 100 for _ in range(50))
        response = local.post("/sync", content=chunks)
    assert response.status_code == 413


def test_wrong_method_is_a_4xx(client: httpx.Client) -> None:
    assert client.get("/sync").status_code == 405


# Patroni's marks are read, not validated: whatever a member or Patroni's ConfigMap holds, the answer is given.
MALFORMED_MARKS = {
    "status annotation not JSON": ("status", "{not json"),
    "WAL position beyond 64 bits": ("status", '{"state":"running","role":"primary","xlog_location":' + "9" * 30 + "}"),
    "history not JSON": ("history", "[[1,"),
    "history line of the wrong types": ("history", '[["1","0/3000060",null,7,false]]'),
}


@pytest.mark.parametrize("name", list(MALFORMED_MARKS))
def test_patronis_malformed_marks_are_answered_leaving_out_what_they_would_say(client: httpx.Client, name: str) -> None:
    from ..support.replication import answer, applied, healthy, parent, primary_slice, request, stages, sync_record

    annotation, written = MALFORMED_MARKS[name]
    pods = healthy()
    config: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "demo-db-0-config", "annotations": {}}}
    if annotation == "status":
        pods[0]["metadata"]["annotations"]["status"] = written
    else:
        config["metadata"]["annotations"]["history"] = written
    running = stages()["running"]
    related = [*pods, config, sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    body = request(parent(), applied(running["children"]), related)
    response = client.post("/sync", json=body)
    assert response.status_code == 200, response.text
    shard = response.json()["status"]["replication"]["shards"][0]
    said = shard["members"][1] if annotation == "status" else shard  # the standby's lag, or the last failover
    assert not {"receiveLagMiB", "lastFailover"} & set(said)
    assert answer(body)["status"]["replication"] == response.json()["status"]["replication"]
