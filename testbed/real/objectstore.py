"""Real stack: the backup tests' S3 store, versitygw: a real S3 server over TLS, posix backend, one static binary.

Why versitygw: it is a real S3 server (its own SigV4 checks, buckets, ListObjectsV2, multipart
uploads), its ``posix`` backend keeps every bucket as a plain folder the test owns, and it is one
static Go binary built here from the Go module proxy. A mock of S3 in the test process is not
allowed: barman-cloud and boto3 must talk to a real server, over real TLS, with real signatures.

``build`` compiles it once with this machine's Go into the cache outside the repository
(``$XDG_CACHE_HOME/sharddb/objectstore/<version>/versitygw``); ``running`` starts it on a free
port of one address with a fresh CA, a server certificate for that address and a random root
key, and stops it after. The posix backend keeps object metadata in user extended attributes;
where the data folder's filesystem has none, a sidecar folder beside it holds them instead.

``python -m testbed.real.objectstore`` builds it and prints the binary's path.
"""

from __future__ import annotations

import datetime
import errno
import ipaddress
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import httpx
from botocore.config import Config  # type: ignore[import-untyped]
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .machine import cache_root
from .server import spawn, stop

MODULE = "github.com/versity/versitygw"
PACKAGE = f"{MODULE}/cmd/versitygw"
VERSION = "v1.8.0"
REGION = "us-east-1"
HOW = (
    f"versitygw is built from the Go module proxy with this machine's Go: `go install {PACKAGE}@{VERSION}` "
    "(CGO_ENABLED=0) must work, so install Go (see `python -m testbed.real.machine`) and reach the Go module "
    "proxy, or run `python -m testbed.real.objectstore` to see the build's own words"
)


class ObjectStoreError(RuntimeError):
    """versitygw could not be built, or did not start."""


def binary_path() -> Path:
    return cache_root() / "objectstore" / VERSION / "versitygw"


def build() -> Path:
    """The versitygw binary, built once into the cache (a no-op when it is there)."""
    target = binary_path()
    if target.is_file():
        return target
    go = shutil.which("go")
    if go is None:
        raise ObjectStoreError(f"no `go` on PATH; {HOW}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as scratch:
        environment = {
            **os.environ,
            "GOBIN": scratch,  # go install writes here only: no GOPATH/bin, no install into the repository
            "CGO_ENABLED": "0",  # one static binary
            "GOFLAGS": "-trimpath",
        }
        command = [go, "install", f"-ldflags=-X=main.Version={VERSION}", f"{PACKAGE}@{VERSION}"]
        try:
            done = subprocess.run(
                command, cwd=scratch, env=environment, capture_output=True, text=True, check=False, timeout=1800
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise ObjectStoreError(f"{' '.join(command)}: {error}; {HOW}") from None
        built = Path(scratch) / "versitygw"
        if done.returncode != 0 or not built.is_file():
            raise ObjectStoreError(f"{' '.join(command)} failed: {done.stderr.strip()[-1500:]}; {HOW}")
        built.replace(target)  # atomic: a concurrent run sees the whole binary or none
    return target


@dataclass(frozen=True)
class Tls:
    ca: Path
    cert: Path
    key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def write_tls(folder: Path, hosts: tuple[str, ...]) -> Tls:
    """A throwaway CA and a server certificate for ``hosts`` (IP addresses) and ``localhost``, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("sharddb test object store CA"))
        .issuer_name(_name("sharddb test object store CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(host)) for host in hosts]
    server = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([*names, x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    tls = Tls(folder / "ca.crt", folder / "tls.crt", folder / "tls.key")
    tls.ca.write_bytes(_pem(ca))
    tls.cert.write_bytes(_pem(server))
    tls.key.touch(mode=0o600)
    tls.key.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return tls


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def has_xattrs(folder: Path) -> bool:
    """Whether files in ``folder`` take user extended attributes, where the posix backend keeps metadata."""
    with tempfile.NamedTemporaryFile(dir=folder) as probe:
        try:
            os.setxattr(probe.name, "user.sharddb.probe", b"1")
        except OSError as error:
            if error.errno in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
                return False
            raise
    return True


@dataclass(frozen=True)
class ObjectStore:
    """A running versitygw: where to reach it, what to trust and who to sign as."""

    host: str
    port: int
    # The CA to trust: boto3's ``verify``, barman-cloud's AWS_CA_BUNDLE (``ca_file`` means the API server's here).
    ca_bundle: Path
    access_key: str
    secret_key: str
    region: str
    data: Path
    log: Path

    @property
    def endpoint(self) -> str:
        return f"https://{_hostport(self.host, self.port)}"

    def client(self, *, secret_key: str | None = None, verify: str | bool | None = None) -> Any:
        """A boto3 S3 client of this store (boto3 ships no types), signing as the root user by default."""
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key if secret_key is None else secret_key,
            verify=str(self.ca_bundle) if verify is None else verify,
            config=Config(retries={"max_attempts": 1}, connect_timeout=5, read_timeout=30),
        )

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def logs(self) -> str:
        return self.log.read_text(errors="replace") if self.log.is_file() else ""


def _answers(store: ObjectStore) -> bool:
    """Any HTTPS answer (an anonymous request is refused with 403) over a connection verified against the CA."""
    try:
        httpx.get(f"{store.endpoint}/", verify=ssl.create_default_context(cafile=store.ca_bundle), timeout=2.0)
    except httpx.HTTPError:
        return False
    return True


@contextmanager
def running(data: Path, host: str = "127.0.0.1", *, timeout: float = 30.0) -> Iterator[ObjectStore]:
    """versitygw serving the folder ``data`` (its buckets) over HTTPS on ``host``; stopped after the block.

    Its certificates and log go beside ``data`` (in its parent), named by the port.
    """
    binary = build()
    data.mkdir(parents=True, exist_ok=True)
    port = free_port(host)
    beside = data.parent / f"versitygw-{port}"
    tls = write_tls(beside / "tls", (host,))
    store = ObjectStore(
        host=host,
        port=port,
        ca_bundle=tls.ca,
        access_key=secrets.token_hex(10).upper(),
        secret_key=secrets.token_urlsafe(30),
        region=REGION,
        data=data,
        log=data.parent / f"versitygw-{port}.log",
    )
    backend = ["posix"]
    if not has_xattrs(data):
        sidecar = beside / "meta"
        sidecar.mkdir()
        backend.append(f"--sidecar={sidecar}")
    command = [
        str(binary),
        f"--port={_hostport(host, port)}",
        f"--cert={tls.cert}",
        f"--key={tls.key}",
        f"--region={store.region}",
        f"--access-log={beside / 'access.log'}",
        *backend,
        str(data),
    ]
    # The root key goes by environment, not argv; nothing else of this process's VGW_ settings leaks in.
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("VGW_", "ROOT_"))}
    environment |= {"ROOT_ACCESS_KEY_ID": store.access_key, "ROOT_SECRET_ACCESS_KEY": store.secret_key}
    with store.log.open("ab") as log:
        process = spawn(command, env=environment, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        while not _answers(store):
            if process.poll() is not None:
                raise ObjectStoreError(f"versitygw exited ({process.returncode}): {store.logs()[-2000:]}")
            if time.monotonic() > deadline:
                raise ObjectStoreError(f"versitygw did not answer HTTPS in {timeout:.0f}s: {store.logs()[-2000:]}")
            time.sleep(0.05)
        yield store
    finally:
        stop(process)


def main() -> int:
    try:
        print(build())
    except ObjectStoreError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
