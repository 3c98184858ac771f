"""Turning bad requests into 4xx answers that name the offending field."""

from __future__ import annotations

from pydantic import ValidationError


class HookError(Exception):
    """A request the hook cannot act on; the HTTP edge turns it into ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def from_validation(error: ValidationError, prefix: str = "") -> HookError:
    """422 naming every bad field (up to ten), each under ``prefix``."""
    problems = error.errors(include_url=False, include_input=False)
    parts = []
    for problem in problems[:10]:
        path = ".".join(str(part) for part in (prefix, *problem["loc"]) if part != "")
        parts.append(f"{path or 'body'}: {problem['msg']}")
    more = len(problems) - 10
    if more > 0:
        parts.append(f"and {more} more")
    return HookError(422, "; ".join(parts))
