"""HTTPS with a given certificate: what Metacontroller's ``caBundle`` verifies.

A throwaway CA and a server certificate for 127.0.0.1 are made for the test run;
the live server is started with SHARDDB_TLS_CERT_FILE / SHARDDB_TLS_KEY_FILE.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from testbed.models.world import World
from testbed.real.server import serve

from ..support.pki import Pki, issue

pytestmark = pytest.mark.http


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return issue(tmp_path_factory.mktemp("pki"), "sharddb-hooks test CA")


@pytest.fixture(scope="module")
def https_url(pki: Pki) -> Iterator[str]:
    env = {"SHARDDB_TLS_CERT_FILE": str(pki.cert), "SHARDDB_TLS_KEY_FILE": str(pki.key)}
    with serve(env, scheme="https") as base:
        yield base


def test_a_client_trusting_the_ca_gets_answers_over_https(https_url: str, pki: Pki) -> None:
    with httpx.Client(base_url=https_url, verify=ssl.create_default_context(cafile=pki.ca), timeout=10.0) as client:
        response = client.post("/sync", content=json.dumps(World().request()))
    assert response.status_code == 200
    assert response.json()["status"]["phase"] == "Provisioning"


def test_a_client_trusting_another_ca_refuses_the_server(https_url: str, pki: Pki) -> None:
    context = ssl.create_default_context(cafile=pki.stranger_ca)
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{https_url}/healthz", verify=context, timeout=10.0)


def test_plain_http_to_the_https_port_gets_no_answer(https_url: str) -> None:
    plain = https_url.replace("https://", "http://")
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(f"{plain}/healthz", timeout=5.0)


def test_only_one_of_certificate_and_key_stops_the_service(pki: Pki) -> None:
    with pytest.raises(RuntimeError, match="must be set together"), serve({"SHARDDB_TLS_CERT_FILE": str(pki.cert)}):
        pass


def _trusted_by(url: str, ca: Path) -> bool:
    try:
        httpx.get(f"{url}/healthz", verify=ssl.create_default_context(cafile=ca), timeout=5.0)
    except httpx.ConnectError:
        return False
    return True


def test_a_renewed_certificate_is_served_without_a_restart(tmp_path: Path) -> None:
    old, new = issue(tmp_path / "old", "first CA"), issue(tmp_path / "new", "renewed CA")
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    for source, name in ((old.cert, "tls.crt"), (old.key, "tls.key")):
        (mounted / name).write_bytes(source.read_bytes())
    env = {"SHARDDB_TLS_CERT_FILE": str(mounted / "tls.crt"), "SHARDDB_TLS_KEY_FILE": str(mounted / "tls.key")}
    with serve(env, scheme="https") as base:
        assert _trusted_by(base, old.ca)
        for source, name in ((new.key, "tls.key"), (new.cert, "tls.crt")):
            staged = mounted / f".{name}"
            staged.write_bytes(source.read_bytes())
            staged.replace(mounted / name)  # atomic, as a Secret volume update is
        deadline = time.monotonic() + 10
        while not _trusted_by(base, new.ca):
            assert time.monotonic() < deadline, "renewed certificate not served within 10 s"
            time.sleep(0.2)
        assert not _trusted_by(base, old.ca)
