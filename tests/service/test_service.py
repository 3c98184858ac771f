"""The service around the hooks: health, metrics, ETags and the per-call log line."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hooks.service.etags import code_fingerprint, digest
from hooks.service.logs import LOGGER_NAME, JSONFormatter
from testbed.models.world import World, sharddb

pytestmark = pytest.mark.http


def request_body() -> bytes:
    return json.dumps(World(sharddb("shop")).request()).encode()


def test_health_endpoints_answer_ok(http: httpx.Client) -> None:
    assert http.get("/healthz").json() == {"status": "ok"}
    assert http.get("/readyz").status_code == 200


def test_answer_carries_an_etag(http: httpx.Client) -> None:
    response = http.post("/sync", content=request_body())
    assert response.status_code == 200
    assert response.headers["etag"].startswith('"')


def test_matching_if_none_match_gets_304_without_a_body(http: httpx.Client) -> None:
    body = request_body()
    tag = http.post("/sync", content=body).headers["etag"]
    response = http.post("/sync", content=body, headers={"If-None-Match": tag})
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == tag


def test_etag_differs_between_hooks_and_requests(http: httpx.Client) -> None:
    body = request_body()
    tags = {
        http.post("/sync", content=body).headers["etag"],
        http.post("/finalize", content=body).headers["etag"],
        http.post("/sync", content=body.replace(b'"shards": 3', b'"shards": 4')).headers["etag"],
    }
    assert len(tags) == 3


def test_etag_changes_when_the_hook_code_changes(tmp_path: Path) -> None:
    (tmp_path / "lifecycle.py").write_text("rule = 1\n")
    before = code_fingerprint(tmp_path)
    (tmp_path / "lifecycle.py").write_text("rule = 2\n")
    assert code_fingerprint(tmp_path) != before


def test_etag_changes_when_the_schemas_the_hook_checks_with_change(tmp_path: Path) -> None:
    (tmp_path / "corev1.json").write_text('{"kubernetesVersion": "1.34"}\n')
    before = code_fingerprint(tmp_path)
    (tmp_path / "corev1.json").write_text('{"kubernetesVersion": "1.35"}\n')
    assert code_fingerprint(tmp_path) != before


def test_stale_if_none_match_gets_a_full_answer(http: httpx.Client) -> None:
    response = http.post("/sync", content=request_body(), headers={"If-None-Match": '"stale"'})
    assert response.status_code == 200
    assert response.json()["children"]


def test_a_wildcard_if_none_match_gets_a_full_answer(http: httpx.Client) -> None:
    """Only a tag of ours says which answer the client holds, and whether it still holds."""
    response = http.post("/sync", content=request_body(), headers={"If-None-Match": "*"})
    assert response.status_code == 200


def test_a_weak_tag_among_others_still_matches(http: httpx.Client) -> None:
    body = request_body()
    tag = http.post("/sync", content=body).headers["etag"]
    response = http.post("/sync", content=body, headers={"If-None-Match": f'"other", W/{tag}'})
    assert response.status_code == 304


def test_a_tag_of_this_request_with_an_unreadable_time_gets_a_full_answer(http: httpx.Client) -> None:
    body = request_body()
    response = http.post("/sync", content=body, headers={"If-None-Match": f'"{digest("/sync", body)}-soon"'})
    assert response.status_code == 200


def test_metrics_count_calls_by_hook_and_outcome(asgi: TestClient) -> None:
    asgi.post("/sync", content=request_body())
    asgi.post("/sync", content=b"nope")
    text = asgi.get("/metrics").text
    assert 'sharddb_hook_calls_total{hook="sync",outcome="ok"} 1.0' in text
    assert 'sharddb_hook_calls_total{hook="sync",outcome="client_error"} 1.0' in text
    assert 'sharddb_decisions_total{phase="Provisioning"} 1.0' in text
    assert 'sharddb_hook_duration_seconds_count{hook="sync"} 2.0' in text


def test_one_json_log_line_per_hook_call_names_parent_phase_and_changes(asgi: TestClient) -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(handler)
    try:
        asgi.post("/sync", content=request_body())
    finally:
        logger.removeHandler(handler)
    assert len(records) == 1
    line = json.loads(JSONFormatter().format(records[0]))
    assert line["hook"] == "sync"
    assert line["parent"] == "default/shop"
    assert line["phase"] == "Provisioning"
    assert line["changes"] == [
        "create Service/shop-db",
        "create StatefulSet/shop-db replicas=3",
        "create PodDisruptionBudget/shop-db",
    ]
    assert line["status"] == 200


def test_openapi_schema_lists_the_hooks(asgi: TestClient) -> None:
    paths = asgi.get("/openapi.json").json()["paths"]
    assert {"/sync", "/finalize", "/customize", "/healthz", "/readyz", "/metrics"} <= set(paths)


def test_etag_changes_when_a_module_of_a_subpackage_changes(tmp_path: Path) -> None:
    (tmp_path / "service").mkdir()
    (tmp_path / "service" / "app.py").write_text("route = 1\n")
    before = code_fingerprint(tmp_path)
    (tmp_path / "service" / "app.py").write_text("route = 2\n")
    assert code_fingerprint(tmp_path) != before
