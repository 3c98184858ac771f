"""ETags for hook answers, so Metacontroller's webhook cache can get a 304 instead of a body.

An answer is a function of the request path, the request body, this code and the clock,
and the clock only through the pods whose grace has run out. So a tag is a hash of the
first three, plus, when a grace is still running, the second it runs out: the cached
answer holds until then, and after it the same request is answered afresh.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from blake3 import blake3

PACKAGE = Path(__file__).resolve().parent.parent  # hooks/: the decision and this service


def code_fingerprint(package: Path = PACKAGE) -> bytes:
    """The hooks' own source and schemas: an upgraded image must not be answered from an old ETag."""
    digest = blake3(b"sharddb-hooks\0")
    for source in sorted([*package.rglob("*.py"), *package.rglob("*.json")]):
        digest.update(source.relative_to(package).as_posix().encode() + b"\0")
        digest.update(source.read_bytes())
    return digest.digest()


_CODE = code_fingerprint()


def digest(path: str, body: bytes) -> str:
    """The request and this code, hashed.

    Every call hashes its whole body, so the hash is BLAKE3: cryptographic like
    blake2b, and several times faster over a large request (SIMD).
    """
    hashed = blake3(_CODE + path.encode() + b"\0")
    hashed.update(body)
    return hashed.hexdigest(16)


def etag(request_digest: str, fresh_until: datetime | None = None) -> str:
    """The tag of an answer: the request's digest, and the second it stops holding, if it does."""
    if fresh_until is None:
        return f'"{request_digest}"'
    return f'"{request_digest}-{int(fresh_until.timestamp())}"'


def still_matches(if_none_match: str | None, request_digest: str, now: datetime) -> str | None:
    """The tag in an ``If-None-Match`` header (weak or strong) whose answer still holds at ``now``.

    A tag names its request by the digest, and an answer bound to a grace holds only
    before the second written after it. ``*`` matches nothing: only a tag of ours says
    which answer the client holds. None when no tag fits.
    """
    if not if_none_match:
        return None
    for candidate in if_none_match.split(","):
        tag = candidate.strip().removeprefix("W/")
        found, _, until = tag.strip('"').partition("-")
        if found != request_digest:
            continue
        if not until:
            return tag
        if until.isdigit() and now.timestamp() < int(until):
            return tag
    return None
