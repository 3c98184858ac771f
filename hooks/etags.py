"""ETags for hook answers, so Metacontroller's webhook cache can get a 304 instead of a body.

An answer is a function of the request path, the request body and this code, so the tag
hashes exactly those and nothing else.
"""

from __future__ import annotations

from pathlib import Path

from blake3 import blake3


def code_fingerprint(package: Path = Path(__file__).parent) -> bytes:
    """The hooks' own source and schemas: an upgraded image must not be answered from an old ETag."""
    digest = blake3(b"sharddb-hooks\0")
    for source in sorted([*package.glob("*.py"), *package.glob("*.json")]):
        digest.update(source.name.encode() + b"\0")
        digest.update(source.read_bytes())
    return digest.digest()


_CODE = code_fingerprint()


def etag(path: str, body: bytes) -> str:
    """Answers are a function of the request and this code, so hash exactly those.

    Every call hashes its whole body, so the hash is BLAKE3: cryptographic like
    blake2b, and several times faster over a large request (SIMD).
    """
    digest = blake3(_CODE + path.encode() + b"\0")
    digest.update(body)
    return f'"{digest.hexdigest(16)}"'


def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``tag`` (weak or strong) or ``*``."""
    if not if_none_match:
        return False
    return any(candidate.strip().removeprefix("W/") in (tag, "*") for candidate in if_none_match.split(","))
