"""Every word a refused caller reads about its request, in one place, and the errors that carry them.

4xx messages name the offending field first, ``path: problem``, whether the problem
was found by msgspec (the request), pydantic (the spec) or our own checks. pydantic's
and msgspec's English is translated into that shape here and nowhere else;
``tests/decision/test_errors.py`` pins the msgspec wording we rely on. Each error says what is
wrong, never how to answer: the HTTP edge maps it to a status (``hooks/service/refusals.py``).
"""

from __future__ import annotations

import re

import msgspec
from pydantic import ValidationError


class HookError(Exception):
    """A request the hooks cannot act on; which kind says what is wrong with it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotJsonError(HookError):
    """The body is not JSON at all, so there is no field to name."""


class InvalidRequestError(HookError):
    """The request is JSON, but a value in it (named first in the message) is not one the hooks can act on."""


def located(path: str, problem: str) -> str:
    """``path: problem``, the shape of every 4xx message; no path means the whole ``body``."""
    return f"{path or 'body'}: {problem}"


def invalid(path: str, problem: str) -> InvalidRequestError:
    """The request is JSON, but the value at ``path`` is not one the hooks can act on."""
    return InvalidRequestError(located(path, problem))


def not_json(reason: str) -> NotJsonError:
    return NotJsonError(f"request body is not valid JSON: {reason}")


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


def from_validation(error: ValidationError, prefix: str = "") -> InvalidRequestError:
    """Every bad field named (up to ten), each under ``prefix``."""
    problems = error.errors(include_url=False, include_input=False)
    parts = []
    for problem in problems[:10]:
        path = ".".join(str(part) for part in (prefix, *problem["loc"]) if part != "")
        parts.append(located(path, problem["msg"]))
    more = len(problems) - 10
    if more > 0:
        parts.append(f"and {more} more")
    return InvalidRequestError("; ".join(parts))


# msgspec says ``problem - at `$.a.b``` (no suffix at the root) and ``Object missing required field `f```.
MSGSPEC_AT = re.compile(r"^(?P<problem>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
MSGSPEC_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`$")


def from_msgspec(error: msgspec.ValidationError) -> InvalidRequestError:
    """``a.b: problem`` like the other 4xx messages; a missing field reads like pydantic's."""
    message = str(error)
    match = MSGSPEC_AT.match(message)
    problem, path = (match["problem"], (match["path"] or "").lstrip(".")) if match else (message, "")
    missing = MSGSPEC_MISSING.match(problem)
    if missing:
        path, problem = f"{path}.{missing['field']}".lstrip("."), FIELD_REQUIRED
    return invalid(path, problem)
