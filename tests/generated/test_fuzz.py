"""Hostile input against the live server: never a 5xx, never a traceback, healthy afterwards.

Thousands of cases over keep-alive connections on loopback: realistic requests
mutated at random places (wrong types, huge numbers, deep nesting, missing and
unknown keys), then damaged as bytes (truncated, invalid UTF-8, NaN, duplicate
keys); random JSON; random bytes; and raw-socket requests no HTTP client sends.
"""

from __future__ import annotations

import contextlib
import copy
import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testbed.models.world import World, bring_up, sharddb, step
from testbed.real.server import HookProcess, launch

from ..support.hook import direct

pytestmark = [pytest.mark.slow, pytest.mark.http]

MAX_BODY = 1024 * 1024
HOOKS = ["/sync", "/finalize", "/customize"]
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def _bases() -> list[Any]:
    """Realistic requests from several moments of a ShardDB's life, both key styles."""
    requests = []
    for version in ("v1", "v2"):
        world = World(sharddb(shards=2), hook_version=version)
        requests.append(world.request())
        bring_up(world, direct)
        requests.append(world.request())
        world.delete()
        step(world, direct)
        requests.append(world.request())
    return requests


BASES = _bases()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HookProcess]:
    env = {
        "SHARDDB_MAX_BODY_BYTES": str(MAX_BODY),
        "SHARDDB_SHUTDOWN_DELAY_SECONDS": "0",
        "SHARDDB_LOG_LEVEL": "WARNING",
    }
    with launch(tmp_path_factory.mktemp("fuzz"), env) as running:
        yield running
        # Healthy afterwards, answering real work, and nothing crashed along the way.
        assert httpx.get(f"{running.base}/healthz", timeout=5).status_code == 200
        assert httpx.post(f"{running.base}/sync", json=BASES[1], timeout=5).status_code == 200
        assert running.process.poll() is None
        logs = running.logs()
        assert "Traceback" not in logs
        assert '"status":500' not in logs


@pytest.fixture(scope="module")
def client(server: HookProcess) -> Iterator[httpx.Client]:
    limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
    with httpx.Client(base_url=server.base, timeout=10, limits=limits) as http:
        yield http


def check(response: httpx.Response) -> None:
    """Every answer is a success with a body Metacontroller can use, or a 4xx that says why."""
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code == 200:
        body = response.json()
        assert isinstance(body.get("children", body.get("relatedResources")), list)
    elif response.status_code != 304 and response.headers.get("content-type") == "application/json":
        assert isinstance(response.json()["detail"], (str, list))


# --- values and mutations -------------------------------------------------------------

NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=20), st.just("\ud800"), st.just("x" * 5000))
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def deep(depth: int, kind: str) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


HOSTILE = st.one_of(
    JSON,
    st.builds(deep, st.integers(10, 600), st.sampled_from(["list", "dict"])),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, (*prefix, index))


PATHS = [list(_paths(base)) for base in BASES]


def _mutate(target: Any, path: tuple[Any, ...], operation: str, value: Any) -> Any:
    if not path:
        return value if operation == "replace" else target
    parent = target
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if operation == "replace":
        parent[last] = value
    elif operation == "delete":
        del parent[last]
    elif operation == "add" and isinstance(parent[last], dict):
        parent[last]["x-unknown"] = value
    return target


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    index = draw(st.integers(0, len(BASES) - 1))
    request = copy.deepcopy(BASES[index])
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS[index]))
        operation = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        value = draw(HOSTILE)
        with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier mutation removed this path
            request = _mutate(request, path, operation, value)
    return _damage(draw, json.dumps(request).encode("utf-8", "surrogatepass"))


def _damage(draw: st.DrawFn, body: bytes) -> bytes:
    """Mostly intact; otherwise broken at the byte level the way real garbage is."""
    how = draw(
        st.sampled_from(["intact"] * 4 + ["truncate", "utf8", "nan", "duplicate", "bom", "trailing", "number", "nest"])
    )
    at = draw(st.integers(0, max(0, len(body) - 1)))
    if how == "truncate":
        return body[:at]
    if how == "utf8":
        return (
            body[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])) + body[at:]
        )
    if how == "nan":
        return body.replace(b": 2", b": NaN", 1).replace(b": 1", b": -Infinity", 1)
    if how == "duplicate":
        return b'{"parent": {"kind": "ShardDB"}, ' + body[1:] if body.startswith(b"{") else body
    if how == "bom":
        return b"\xef\xbb\xbf" + body
    if how == "trailing":
        return body + b"} garbage"
    if how == "nest":  # far deeper than any parser's recursion limit
        depth = draw(st.integers(1000, 100_000))
        return b'{"parent": ' + b"[" * depth + b"]" * depth + b", " + body[1:]
    if how == "number":
        return body.replace(b'"shards": 2', b'"shards": 1' + b"0" * 400, 1).replace(b": 1", b": 1e999", 1)
    return body


def _run(case: Any, examples: int, sent: list[int]) -> None:
    settings(FUZZ, max_examples=examples)(case)()
    assert len(sent) >= examples * 0.9, f"only {len(sent)} cases ran"


def test_mutated_requests_never_get_a_5xx(client: httpx.Client) -> None:
    sent: list[int] = []

    @given(body=mutated(), path=st.sampled_from(HOOKS))
    def case(body: bytes, path: str) -> None:
        response = client.post(path, content=body, headers={"content-type": "application/json"})
        check(response)
        sent.append(response.status_code)

    _run(case, 2000, sent)
    assert {200, 400, 422} <= set(sent)  # the mutations reach every kind of answer


def test_random_json_bodies_never_get_a_5xx(client: httpx.Client) -> None:
    sent: list[int] = []

    @given(value=HOSTILE, path=st.sampled_from(HOOKS))
    def case(value: Any, path: str) -> None:
        body = json.dumps(value).encode("utf-8", "surrogatepass")
        response = client.post(path, content=body)
        check(response)
        sent.append(response.status_code)

    _run(case, 500, sent)


def test_random_bytes_never_get_a_5xx(client: httpx.Client) -> None:
    sent: list[int] = []

    @given(body=st.binary(max_size=2000), path=st.sampled_from(HOOKS))
    def case(body: bytes, path: str) -> None:
        response = client.post(path, content=body)
        check(response)
        sent.append(response.status_code)

    _run(case, 400, sent)


def test_hostile_headers_never_get_a_5xx(client: httpx.Client) -> None:
    sent: list[int] = []
    visible = st.characters(min_codepoint=0x21, max_codepoint=0xFF, exclude_characters="\x7f")
    header_values = st.text(visible, max_size=200)

    @given(
        path=st.sampled_from([*HOOKS, "/healthz", "/readyz", "/metrics", "/openapi.json", "/nope", "/sync/"]),
        method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]),
        etag=header_values,
        content_type=header_values,
        authorization=header_values,
    )
    def case(path: str, method: str, etag: str, content_type: str, authorization: str) -> None:
        headers = {
            b"if-none-match": etag.encode("latin-1"),
            b"content-type": content_type.encode("latin-1"),
            b"authorization": authorization.encode("latin-1"),
        }
        response = client.request(method, path, content=json.dumps(BASES[0]).encode(), headers=headers)
        assert response.status_code < 500, (response.status_code, response.text[:300])
        sent.append(response.status_code)

    _run(case, 300, sent)


def test_oversized_bodies_get_413(client: httpx.Client) -> None:
    padded = dict(BASES[0], padding="x" * MAX_BODY)
    response = client.post("/sync", json=padded)
    assert response.status_code == 413
    streamed = client.post("/sync", content=(b"x" * 65536 for _ in range(MAX_BODY // 65536 + 2)))
    assert streamed.status_code == 413


# --- raw sockets: what no HTTP client library will send -------------------------------------


def _body(text: str = "") -> bytes:
    return (text or json.dumps(BASES[0])).encode()


VALID = _body()


def raw(start: bytes, headers: bytes = b"", body: bytes = b"{}", length: bool = True) -> bytes:
    """A request as bytes on the wire; ``Content-Length`` matches ``body`` unless ``length`` is off."""
    declared = b"Content-Length: " + str(len(body)).encode() + b"\r\n" if length else b""
    return start + b"\r\nHost: h\r\n" + headers + declared + b"\r\n" + body


SYNC = b"POST /sync HTTP/1.1"
RAW_CASES: dict[str, bytes] = {
    "invalid UTF-8 in the body": raw(SYNC, body=b'{"parent": "\xff\xfe\xfd"}'),
    "invalid UTF-8 in the path": raw(b"POST /sy\xffnc HTTP/1.1"),
    "percent-encoded garbage in the path": raw(b"POST /%ff%00%2e%2e/sync HTTP/1.1"),
    "invalid UTF-8 in a header": raw(SYNC, b"If-None-Match: \xff\xfe\r\n"),
    "NUL in a header": raw(SYNC, b"X-A: a\x00b\r\n"),
    "non-numeric Content-Length": raw(SYNC, b"Content-Length: abc\r\n", length=False),
    "negative Content-Length": raw(SYNC, b"Content-Length: -1\r\n", length=False),
    "overflowing Content-Length": raw(SYNC, b"Content-Length: 99999999999999999999999\r\n", b"", length=False),
    "two different Content-Lengths": raw(SYNC, b"Content-Length: 2\r\nContent-Length: 3\r\n", length=False),
    "Content-Length and chunked": raw(
        SYNC, b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", b"0\r\n\r\n", False
    ),
    "bad chunk size": raw(SYNC, b"Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n", length=False),
    "unknown method": raw(b"BREW /sync HTTP/1.1", body=b"", length=False),
    "HTTP/0.9 style": b"GET /healthz\r\n\r\n",
    "HTTP/1.0 without Host": b"POST /sync HTTP/1.0\r\nContent-Length: "
    + str(len(VALID)).encode()
    + b"\r\n\r\n"
    + VALID,
    "asterisk target": raw(b"OPTIONS * HTTP/1.1", body=b"", length=False),
    "absolute target": raw(b"POST http://evil.example/sync HTTP/1.1"),
    "expect 100-continue": raw(SYNC, b"Expect: 100-continue\r\n", VALID),
    "pipelined pair": raw(SYNC, body=VALID) + raw(b"GET /healthz HTTP/1.1", body=b"", length=False),
    "websocket upgrade": raw(
        b"GET /sync HTTP/1.1",
        b"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
        b"",
        length=False,
    ),
    "h2c upgrade": raw(
        b"GET /healthz HTTP/1.1",
        b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n",
        b"",
        length=False,
    ),
    "HTTP/2 preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "TLS hello on the plain port": bytes.fromhex("160301002a0100002603035f") + b"\x00" * 40,
    "lone CRs": b"POST /sync HTTP/1.1\rHost: h\rContent-Length: 2\r\r{}",
    "NUL bytes in the body": raw(SYNC, body=b"{\x00\x00\x00\x00}"),
    "unclosed deep nesting": raw(SYNC, body=b"[" * 200_000),
    "closed deep nesting": raw(SYNC, body=b'{"parent": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
}


def _exchange(port: int, payload: bytes, half_close: bool = True) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.settimeout(10)
        try:
            sock.sendall(payload)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    return data


def _statuses(answer: bytes) -> list[int]:
    return [int(line.split(b" ")[1]) for line in answer.split(b"\r\n") if line.startswith(b"HTTP/1.")]


@pytest.mark.parametrize("payload", RAW_CASES.values(), ids=RAW_CASES.keys())
def test_raw_requests_never_get_a_5xx(server: HookProcess, payload: bytes) -> None:
    assert all(status < 500 for status in _statuses(_exchange(server.port, payload)))


def test_truncated_bodies_from_clients_that_hang_up_never_get_a_5xx(server: HookProcess) -> None:
    head = b"POST /sync HTTP/1.1\r\nHost: h\r\nContent-Length: " + str(len(VALID)).encode() + b"\r\n\r\n"
    for cut in range(0, len(VALID), max(1, len(VALID) // 40)):
        assert all(status < 500 for status in _statuses(_exchange(server.port, head + VALID[:cut])))


def test_a_valid_raw_request_is_still_answered(server: HookProcess) -> None:
    """The raw cases above are judged by a server that still answers well-formed calls."""
    head = b"POST /sync HTTP/1.1\r\nHost: h\r\nContent-Length: " + str(len(VALID)).encode() + b"\r\n\r\n"
    assert _statuses(_exchange(server.port, head + VALID)) == [200]
