"""The one clock the hooks read, and Kubernetes' timestamps to hold it against.

The edge (``app``, ``handler``) reads the clock once per call and passes the reading
in, so every decision stays a function of its input and a test can set the time.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """Now, in UTC: what Kubernetes' timestamps are written in."""
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """To the second, the precision metav1.Time keeps."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(text: str | None) -> datetime | None:
    """A metav1.Time (RFC 3339) as an aware datetime, or None when absent or unreadable.

    The API server always writes UTC with a ``Z``; a time without a zone is read as UTC.
    """
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
