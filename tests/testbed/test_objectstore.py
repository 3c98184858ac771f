"""The object store the backup tests archive to: a real versitygw over TLS, talked to with boto3 as barman-cloud does.

versitygw is built from the Go module proxy into the cache (``testbed.real.objectstore``); a machine
that cannot build it fails these tests saying how to get it, never skips them.
"""

from __future__ import annotations

import io
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from boto3.s3.transfer import TransferConfig  # type: ignore[import-untyped]
from botocore.exceptions import ClientError, SSLError  # type: ignore[import-untyped]
from cryptography import x509

from testbed.real import objectstore

from ..support.prerequisites import Prerequisite

VERSITYGW = Prerequisite("versitygw", objectstore.build, objectstore.ObjectStoreError)
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[objectstore.ObjectStore]:
    VERSITYGW.get()
    with objectstore.running(tmp_path_factory.mktemp("objectstore") / "data") as running:
        yield running


@pytest.fixture
def bucket(store: objectstore.ObjectStore) -> str:
    name = f"backups-{secrets.token_hex(4)}"
    store.create_bucket(name)
    return name


def test_an_object_is_put_listed_read_back_and_deleted_over_verified_https(
    store: objectstore.ObjectStore, bucket: str
) -> None:
    s3 = store.client()
    payload = secrets.token_bytes(64 * 1024)
    s3.put_object(Bucket=bucket, Key="wals/000000010000000000000001", Body=payload)
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="wals/")["Contents"]
    assert [(item["Key"], item["Size"]) for item in listed] == [("wals/000000010000000000000001", len(payload))]
    assert s3.get_object(Bucket=bucket, Key="wals/000000010000000000000001")["Body"].read() == payload
    s3.delete_object(Bucket=bucket, Key="wals/000000010000000000000001")
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0


def test_a_multipart_upload_is_read_back_whole(store: objectstore.ObjectStore, bucket: str) -> None:
    s3 = store.client()
    payload = secrets.token_bytes(11 * MIB)
    parts = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB)
    s3.upload_fileobj(io.BytesIO(payload), bucket, "base/data.tar", Config=parts)
    assert s3.head_object(Bucket=bucket, Key="base/data.tar")["ETag"].endswith('-3"')  # three parts, S3's ETag
    assert s3.get_object(Bucket=bucket, Key="base/data.tar")["Body"].read() == payload


def test_an_object_is_a_plain_file_in_the_bucket_folder(store: objectstore.ObjectStore, bucket: str) -> None:
    store.client().put_object(Bucket=bucket, Key="wals/history", Body=b"1\t0/3000000\tno recovery target\n")
    assert (store.data / bucket / "wals" / "history").read_bytes() == b"1\t0/3000000\tno recovery target\n"


def test_a_request_signed_with_a_wrong_secret_is_refused(store: objectstore.ObjectStore, bucket: str) -> None:
    with pytest.raises(ClientError) as refused:
        store.client(secret_key=store.secret_key[::-1]).list_objects_v2(Bucket=bucket)
    error = refused.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert error["Error"]["Code"] in {"SignatureDoesNotMatch", "AccessDenied"}


def test_a_client_that_does_not_trust_the_ca_fails_verification(store: objectstore.ObjectStore) -> None:
    with pytest.raises(SSLError, match="CERTIFICATE_VERIFY_FAILED"):
        store.client(verify=True).list_buckets()  # the default trust store, without the test CA


def test_plain_http_gets_no_answer(store: objectstore.ObjectStore, bucket: str) -> None:
    with pytest.raises(httpx.TransportError):  # the TLS listener hangs up on a plain request
        httpx.get(f"http://{store.host}:{store.port}/{bucket}", timeout=5.0)


def test_the_server_certificate_names_its_address_and_localhost(tmp_path: Path) -> None:
    tls = objectstore.write_tls(tmp_path, ("127.0.0.2",))
    names = x509.load_pem_x509_certificate(tls.cert.read_bytes()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert [str(ip) for ip in names.value.get_values_for_type(x509.IPAddress)] == ["127.0.0.2"]
    assert names.value.get_values_for_type(x509.DNSName) == ["localhost"]


def test_without_go_the_build_failure_says_how_to_get_versitygw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(objectstore.ObjectStoreError, match=r"go install github.com/versity/versitygw/cmd/versitygw@"):
        objectstore.build()
