"""Metacontroller's CRDs are found the way a user's machine can, and nothing unverified is used.

A small HTTP server on 127.0.0.1 stands in for the release address
(``SHARDDB_METACONTROLLER_CRDS_URL``); it serves the real release file, got the
way the cluster tier gets it. Each test has its own cache folder and a
repository root with nothing beside it, so the user's cache is never touched.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .metacontroller_crds import (
    CACHE_VARIABLE,
    FILE_NAME,
    PATH_VARIABLE,
    PINNED,
    URL_VARIABLE,
    CrdsNotFoundError,
    resolve,
    sha256_of,
    shared_file,
)


class Mirror:
    """Serves one body at ``/<FILE_NAME>`` on loopback and counts the requests."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.requests = 0
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                mirror.requests += 1
                found = self.path == f"/{FILE_NAME}"
                payload = mirror.body if found else b"not found"
                self.send_response(200 if found else 404)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: pytest shows failures, not every request

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/{FILE_NAME}"

    def stop(self) -> None:
        if self.thread.is_alive():
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(timeout=5)


@pytest.fixture
def release_bytes(metacontroller_crds: Path) -> bytes:
    """The release file as the cluster tier finds it (CI: shared/ beside the repository)."""
    return metacontroller_crds.read_bytes()


@pytest.fixture
def mirror(release_bytes: bytes) -> Iterator[Mirror]:
    served = Mirror(release_bytes)
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
def bare_root(tmp_path: Path) -> Path:
    """A repository root with no ``shared/`` beside it: a fresh clone."""
    root = tmp_path / "clone" / "sharddb"
    root.mkdir(parents=True)
    return root


def unreachable_url() -> str:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/{FILE_NAME}"


def files_in(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file()) if folder.exists() else []


def test_the_pinned_release_is_the_file_the_cluster_tier_uses(release_bytes: bytes) -> None:
    assert sha256_of(release_bytes) == PINNED.sha256


def test_a_named_file_comes_first(tmp_path: Path, bare_root: Path) -> None:
    named = tmp_path / "elsewhere.yaml"
    named.write_text("kind: CustomResourceDefinition\n")
    shared = shared_file(bare_root)
    shared.parent.mkdir(parents=True)
    shared.write_text("kind: CustomResourceDefinition\n")
    env = {PATH_VARIABLE: str(named), URL_VARIABLE: unreachable_url(), CACHE_VARIABLE: str(tmp_path / "cache")}
    assert resolve(env, root=bare_root) == named


def test_a_named_file_that_is_missing_fails_rather_than_falling_back(tmp_path: Path, bare_root: Path) -> None:
    shared = shared_file(bare_root)
    shared.parent.mkdir(parents=True)
    shared.write_text("kind: CustomResourceDefinition\n")
    env = {PATH_VARIABLE: str(tmp_path / "missing.yaml"), CACHE_VARIABLE: str(tmp_path / "cache")}
    with pytest.raises(CrdsNotFoundError, match=r"SHARDDB_METACONTROLLER_CRDS=.*missing\.yaml is not a file"):
        resolve(env, root=bare_root)


def test_shared_beside_the_repository_comes_before_a_download(tmp_path: Path, bare_root: Path) -> None:
    shared = shared_file(bare_root)
    shared.parent.mkdir(parents=True)
    shared.write_text("kind: CustomResourceDefinition\n")
    env = {URL_VARIABLE: unreachable_url(), CACHE_VARIABLE: str(tmp_path / "cache")}
    assert resolve(env, root=bare_root) == shared
    assert not files_in(tmp_path / "cache")


def test_a_fresh_clone_downloads_verifies_and_caches_the_release(
    tmp_path: Path, bare_root: Path, mirror: Mirror, release_bytes: bytes
) -> None:
    cache = tmp_path / "cache"
    path = resolve({URL_VARIABLE: mirror.url, CACHE_VARIABLE: str(cache)}, root=bare_root)
    assert path == cache / PINNED.version / FILE_NAME
    assert path.read_bytes() == release_bytes
    assert files_in(cache) == [path], "only the verified file is left in the cache"
    assert mirror.requests == 1


def test_the_second_call_uses_the_cache_without_the_network(tmp_path: Path, bare_root: Path, mirror: Mirror) -> None:
    env = {URL_VARIABLE: mirror.url, CACHE_VARIABLE: str(tmp_path / "cache")}
    first = resolve(env, root=bare_root)
    mirror.stop()
    assert resolve(env, root=bare_root) == first
    assert mirror.requests == 1


def test_a_damaged_cache_is_downloaded_again(tmp_path: Path, bare_root: Path, mirror: Mirror) -> None:
    env = {URL_VARIABLE: mirror.url, CACHE_VARIABLE: str(tmp_path / "cache")}
    path = resolve(env, root=bare_root)
    path.write_bytes(path.read_bytes()[:100])
    assert resolve(env, root=bare_root) == path
    assert sha256_of(path.read_bytes()) == PINNED.sha256
    assert mirror.requests == 2


def test_a_download_with_the_wrong_sha256_is_refused_and_nothing_is_cached(
    tmp_path: Path, bare_root: Path, release_bytes: bytes
) -> None:
    tampered = Mirror(release_bytes + b"\n# one more line\n")
    cache = tmp_path / "cache"
    try:
        with pytest.raises(CrdsNotFoundError, match=f"refused: SHA-256 [0-9a-f]{{64}}, expected {PINNED.sha256}"):
            resolve({URL_VARIABLE: tampered.url, CACHE_VARIABLE: str(cache)}, root=bare_root)
    finally:
        tampered.stop()
    assert tampered.requests == 1
    assert not files_in(cache)


def test_nothing_reachable_fails_naming_the_three_ways(tmp_path: Path, bare_root: Path) -> None:
    url = unreachable_url()
    cache = tmp_path / "cache"
    with pytest.raises(CrdsNotFoundError) as failure:
        resolve({URL_VARIABLE: url, CACHE_VARIABLE: str(cache)}, root=bare_root)
    message = str(failure.value)
    assert message.startswith(f"Metacontroller's CRDs not found: download of {url} failed")
    assert f"1. set {PATH_VARIABLE} to its path" in message
    assert f"2. place it at {shared_file(bare_root)}" in message
    assert f"3. let the tests download it once from {url}\n     (SHA-256 {PINNED.sha256})" in message
    assert not files_in(cache)
