"""Every word a refused caller reads, in one place.

4xx messages name the offending field first, ``path: problem``, whether the problem
was found by msgspec (the request), pydantic (the spec), our own checks, or the edge
(size, time, token). pydantic's and msgspec's English is translated into that shape
here and nowhere else; ``tests/test_errors.py`` pins the msgspec wording we rely on.
"""

from __future__ import annotations

import re

import msgspec
from pydantic import ValidationError


class HookError(Exception):
    """A request the hook cannot act on; the HTTP edge turns it into ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def located(path: str, problem: str) -> str:
    """``path: problem``, the shape of every 4xx message; no path means the whole ``body``."""
    return f"{path or 'body'}: {problem}"


def invalid(path: str, problem: str) -> HookError:
    """422: the request is JSON, but the value at ``path`` is not one the hooks can act on."""
    return HookError(422, located(path, problem))


def not_json(reason: str) -> HookError:
    """400: the body is not JSON at all, so there is no field to name."""
    return HookError(400, f"request body is not valid JSON: {reason}")


# --- problems found in a request ------------------------------------------------------

NESTED_TOO_DEEPLY = "nested too deeply"
# pydantic's wording for a missing field; msgspec's is translated to it, so both read alike.
FIELD_REQUIRED = "Field required"
# msgspec's wording for a value that should be a mapping, reused where children are checked by hand.
EXPECTED_OBJECT = "Expected `object`"
BEYOND_64_BITS = "an integer beyond 64 bits"


def nested_deeper_than(levels: int) -> str:
    return f"nested deeper than {levels} levels"


def not_a(kind: str) -> str:
    return f"not a {kind} with metadata"


# --- pydantic's and msgspec's messages, translated ------------------------------------


def from_validation(error: ValidationError, prefix: str = "") -> HookError:
    """422 naming every bad field (up to ten), each under ``prefix``."""
    problems = error.errors(include_url=False, include_input=False)
    parts = []
    for problem in problems[:10]:
        path = ".".join(str(part) for part in (prefix, *problem["loc"]) if part != "")
        parts.append(located(path, problem["msg"]))
    more = len(problems) - 10
    if more > 0:
        parts.append(f"and {more} more")
    return HookError(422, "; ".join(parts))


# msgspec says ``problem - at `$.a.b``` (no suffix at the root) and ``Object missing required field `f```.
MSGSPEC_AT = re.compile(r"^(?P<problem>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
MSGSPEC_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`$")


def from_msgspec(error: msgspec.ValidationError) -> HookError:
    """422 reading ``a.b: problem`` like the other 4xx messages; a missing field reads like pydantic's."""
    message = str(error)
    match = MSGSPEC_AT.match(message)
    problem, path = (match["problem"], (match["path"] or "").lstrip(".")) if match else (message, "")
    missing = MSGSPEC_MISSING.match(problem)
    if missing:
        path, problem = f"{path}.{missing['field']}".lstrip("."), FIELD_REQUIRED
    return invalid(path, problem)


# --- refused at the edge, before a hook runs --------------------------------------------

MISSING_TOKEN = "missing bearer token"
INVALID_TOKEN = "invalid bearer token"
HEAD_TOO_LARGE = "request head too large"
HEAD_TOO_SLOW = "request head not received in time"


def body_too_large(limit: int) -> str:
    return f"request body exceeds {limit} bytes"


def body_too_slow(timeout: float) -> str:
    return f"request body not received within {timeout:g} seconds"


# --- 5xx: the details are in the log, never in the answer -------------------------------

INTERNAL_ERROR = "internal error; see the hook service log"
