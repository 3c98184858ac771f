"""HTTPS with a given certificate: what Metacontroller's ``caBundle`` verifies.

A throwaway CA and a server certificate for 127.0.0.1 are made for the test run;
the live server is started with SHARDDB_TLS_CERT_FILE / SHARDDB_TLS_KEY_FILE.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from testbed.models.world import World
from testbed.real.server import serve

pytestmark = pytest.mark.http


@dataclass(frozen=True)
class Pki:
    ca: Path
    cert: Path
    key: Path
    stranger_ca: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _ca(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(_name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def issue(folder: Path, ca_name: str) -> Pki:
    """A CA and a server certificate for 127.0.0.1 and the in-cluster name, written to ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca(ca_name)
    _, stranger = _ca("some other CA")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("sharddb-hooks.sharddb-system.svc"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("sharddb-hooks.sharddb-system.svc"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = Pki(folder / "ca.crt", folder / "tls.crt", folder / "tls.key", folder / "stranger.crt")
    paths.ca.write_bytes(_pem(ca_cert))
    paths.stranger_ca.write_bytes(_pem(stranger))
    paths.cert.write_bytes(_pem(server))
    paths.key.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


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
