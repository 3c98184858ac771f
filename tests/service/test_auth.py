"""The optional bearer token: Metacontroller's webhook ``authorization`` against a mounted Secret."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from hooks.service.app import create_app
from hooks.service.settings import Settings, SettingsError
from testbed.models.world import World
from testbed.real.server import serve

TOKEN = "first-token-7f3a9c"
HOOKS = ["/sync", "/finalize", "/customize"]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def rotate(path: Path, token: str) -> None:
    """Write the way the kubelet updates a Secret volume: a new file swapped in atomically."""
    fresh = path.with_name(f".{path.name}.new")
    fresh.write_text(token)
    os.replace(fresh, path)


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")  # `kubectl create secret --from-file` often keeps the newline
    return path


@pytest.fixture
def client(token_file: Path) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(auth_token_file=str(token_file)))) as local:
        yield local


@pytest.fixture
def request_body() -> bytes:
    return json.dumps(World().request()).encode()


@pytest.mark.parametrize("path", HOOKS)
def test_a_hook_call_without_a_token_is_refused_with_a_bearer_challenge(
    client: TestClient, request_body: bytes, path: str
) -> None:
    response = client.post(path, content=request_body)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="sharddb-hooks"'


@pytest.mark.parametrize("path", HOOKS)
def test_a_hook_call_with_the_token_is_answered(client: TestClient, request_body: bytes, path: str) -> None:
    assert client.post(path, content=request_body, headers=bearer(TOKEN)).status_code == 200


@pytest.mark.parametrize(
    "header",
    [
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        "Bearer " + "A" * len(TOKEN),
        f"Basic {TOKEN}",
        f"Token {TOKEN}",
        "Bearer",
        "Bearer ",
        TOKEN,
    ],
)
def test_a_wrong_token_or_scheme_is_refused(client: TestClient, request_body: bytes, header: str) -> None:
    response = client.post("/sync", content=request_body, headers={"Authorization": header})
    assert response.status_code == 401


def test_a_wrong_token_is_named_invalid_in_the_challenge(client: TestClient, request_body: bytes) -> None:
    response = client.post("/sync", content=request_body, headers=bearer("guess"))
    assert response.headers["www-authenticate"] == 'Bearer realm="sharddb-hooks", error="invalid_token"'


def test_the_scheme_is_case_insensitive(client: TestClient, request_body: bytes) -> None:
    response = client.post("/sync", content=request_body, headers={"Authorization": f"bearer {TOKEN}"})
    assert response.status_code == 200


def test_two_authorization_headers_are_refused(client: TestClient, request_body: bytes) -> None:
    headers = [("Authorization", f"Bearer {TOKEN}"), ("Authorization", "Bearer other")]
    assert client.post("/sync", content=request_body, headers=headers).status_code == 401


def test_a_non_ascii_token_is_refused_not_an_error(client: TestClient, request_body: bytes) -> None:
    headers = [(b"Authorization", "Bearer tökén".encode("latin-1"))]
    assert client.post("/sync", content=request_body, headers=headers).status_code == 401


def test_the_token_is_checked_before_the_body_is_read(client: TestClient) -> None:
    """An anonymous caller cannot make the service buffer or parse anything: 401, not 413."""
    huge = {"Content-Length": str(Settings().max_body_bytes + 1)}
    assert client.post("/sync", content=b"{}", headers=huge).status_code == 401


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_health_endpoints_stay_open(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 200


def test_metrics_stay_open_by_default(client: TestClient) -> None:
    assert client.get("/metrics").status_code == 200


def test_metrics_need_the_token_when_asked(token_file: Path) -> None:
    settings = Settings(auth_token_file=str(token_file), metrics_auth=True)
    with TestClient(create_app(settings)) as local:
        assert local.get("/metrics").status_code == 401
        assert local.get("/metrics", headers=bearer(TOKEN)).status_code == 200
        assert local.get("/healthz").status_code == 200


def test_any_other_path_needs_the_token_too(client: TestClient) -> None:
    assert client.get("/openapi.json").status_code == 401
    assert client.get("/openapi.json", headers=bearer(TOKEN)).status_code == 200


def test_a_rotated_token_takes_effect_without_a_restart(
    client: TestClient, token_file: Path, request_body: bytes
) -> None:
    rotate(token_file, "second-token-1b2c")
    assert client.post("/sync", content=request_body, headers=bearer(TOKEN)).status_code == 401
    assert client.post("/sync", content=request_body, headers=bearer("second-token-1b2c")).status_code == 200


def test_a_token_rewritten_in_place_takes_effect(client: TestClient, token_file: Path, request_body: bytes) -> None:
    token_file.write_text("third-token-longer-than-before")
    response = client.post("/sync", content=request_body, headers=bearer("third-token-longer-than-before"))
    assert response.status_code == 200


def test_the_last_token_holds_while_the_file_is_briefly_missing(
    client: TestClient, token_file: Path, request_body: bytes
) -> None:
    token_file.unlink()
    assert client.post("/sync", content=request_body, headers=bearer(TOKEN)).status_code == 200


def test_an_emptied_token_file_refuses_every_call(client: TestClient, token_file: Path, request_body: bytes) -> None:
    rotate(token_file, "")
    assert client.post("/sync", content=request_body, headers=bearer(TOKEN)).status_code == 401
    assert client.post("/sync", content=request_body, headers={"Authorization": "Bearer "}).status_code == 401


def test_a_missing_token_file_stops_the_service_at_start(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="SHARDDB_AUTH_TOKEN_FILE"):
        create_app(Settings(auth_token_file=str(tmp_path / "absent")))


def test_an_empty_token_file_stops_the_service_at_start(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("\n")
    with pytest.raises(SettingsError, match="no token"):
        create_app(Settings(auth_token_file=str(tmp_path / "token")))


@pytest.mark.http
def test_the_live_server_reads_the_token_file_named_in_its_environment(token_file: Path, request_body: bytes) -> None:
    env = {"SHARDDB_AUTH_TOKEN_FILE": str(token_file), "SHARDDB_METRICS_AUTH": "true"}
    with serve(env) as base, httpx.Client(base_url=base, timeout=10.0) as http:
        assert http.post("/sync", content=request_body).status_code == 401
        assert http.post("/sync", content=request_body, headers=bearer(TOKEN)).status_code == 200
        assert http.get("/metrics").status_code == 401
        assert http.get("/readyz").status_code == 200


# --- a rotation: the previous token, accepted while its file exists ------------------------------------------------

OLD = "old-token-5d1e"


@pytest.fixture
def previous_file(tmp_path: Path) -> Path:
    return tmp_path / "previous-token"


@pytest.fixture
def rotating(token_file: Path, previous_file: Path) -> Iterator[TestClient]:
    settings = Settings(auth_token_file=str(token_file), auth_previous_token_file=str(previous_file))
    with TestClient(create_app(settings)) as local:
        yield local


def test_a_missing_previous_token_file_lets_in_only_the_current_token(
    rotating: TestClient, request_body: bytes
) -> None:
    assert rotating.post("/sync", content=request_body, headers=bearer(TOKEN)).status_code == 200
    assert rotating.post("/sync", content=request_body, headers=bearer(OLD)).status_code == 401


def test_the_previous_token_is_accepted_while_its_file_exists(
    rotating: TestClient, previous_file: Path, request_body: bytes
) -> None:
    rotate(previous_file, OLD + "\n")
    assert rotating.post("/sync", content=request_body, headers=bearer(OLD)).status_code == 200
    assert rotating.post("/sync", content=request_body, headers=bearer(TOKEN)).status_code == 200


def test_the_previous_token_is_refused_once_its_file_is_removed(
    rotating: TestClient, previous_file: Path, request_body: bytes
) -> None:
    rotate(previous_file, OLD)
    assert rotating.post("/sync", content=request_body, headers=bearer(OLD)).status_code == 200
    previous_file.unlink()
    assert rotating.post("/sync", content=request_body, headers=bearer(OLD)).status_code == 401


def test_an_empty_previous_token_file_lets_nothing_in(
    rotating: TestClient, previous_file: Path, request_body: bytes
) -> None:
    rotate(previous_file, "\n")
    assert rotating.post("/sync", content=request_body, headers={"Authorization": "Bearer "}).status_code == 401
    assert rotating.post("/sync", content=request_body, headers=bearer(OLD)).status_code == 401


def test_calls_let_in_by_the_previous_token_are_counted_by_hook(
    rotating: TestClient, previous_file: Path, request_body: bytes
) -> None:
    rotate(previous_file, OLD)
    rotating.post("/sync", content=request_body, headers=bearer(OLD))
    rotating.post("/sync", content=request_body, headers=bearer(TOKEN))
    metrics = rotating.get("/metrics").text
    assert 'sharddb_hook_previous_token_calls_total{hook="sync"} 1.0' in metrics


def test_a_previous_token_file_without_a_token_file_stops_the_service_at_start() -> None:
    with pytest.raises(SettingsError, match="SHARDDB_AUTH_PREVIOUS_TOKEN_FILE needs SHARDDB_AUTH_TOKEN_FILE"):
        Settings.from_env({"SHARDDB_AUTH_PREVIOUS_TOKEN_FILE": "/etc/sharddb/auth/previous-token"})


@pytest.mark.http
def test_the_live_server_accepts_both_tokens_during_a_rotation(
    token_file: Path, previous_file: Path, request_body: bytes
) -> None:
    env = {"SHARDDB_AUTH_TOKEN_FILE": str(token_file), "SHARDDB_AUTH_PREVIOUS_TOKEN_FILE": str(previous_file)}
    rotate(previous_file, OLD)
    with serve(env) as base, httpx.Client(base_url=base, timeout=10.0) as http:
        assert http.post("/sync", content=request_body, headers=bearer(OLD)).status_code == 200
        assert http.post("/sync", content=request_body, headers=bearer(TOKEN)).status_code == 200
        previous_file.unlink()
        assert http.post("/sync", content=request_body, headers=bearer(OLD)).status_code == 401
