"""Real stack: the API server's audit log, read as a list of writes: who wrote what, when, with what answer.

The control plane logs every write at Metadata level (reads are left out), one
JSON event per line in completion order, each under the identity of the
component that sent it; so a test can count Metacontroller's writes, or order
one component's write before another's, from the API server's own record. A
pod's deletion is logged with its answer, so it also names the very pod (its
uid) that was deleted, and a ShardDB's status write is logged with its request, so
it says what the status became. Completion order is not the order things were stored: two
writes that overlap are logged in the order their answers went out.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True)
class Write:
    """One completed write request."""

    at: datetime
    user: str
    verb: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    uid: str = ""  # the object's uid, where the log says it (a pod's deletion)
    received: datetime | None = None  # when the request came in; ``at`` is when its answer went out
    status: str = ""  # what a ShardDB's status write wrote, as compact JSON (logged with its request)

    @property
    def began(self) -> datetime:
        """When the request came in: a write logged after another may have been stored before it."""
        return self.received or self.at

    @property
    def kind(self) -> str:
        """``create``, ``update``, ``status``, ``delete``, ``event`` …: how the fleet tables split writes."""
        if self.resource == "events":
            return "event"
        if self.subresource == "status":
            return "status"
        if self.verb == "patch":
            return "update"
        return self.verb

    def __str__(self) -> str:
        target = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        said = f"{self.user} {self.verb} {target} {self.namespace}/{self.name} -> {self.code}"
        return f"{said}: {self.status}" if self.status else said


class AuditLogCutError(RuntimeError):
    """The log is no longer the whole record since the stack started: judging from it would be wrong."""


class AuditLog:
    """Reads the log file; ``mark()`` then ``since(mark)`` counts what a step cost."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self) -> int:
        """A position in the log: writes after it are the ones a later ``since`` returns."""
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def since(
        self, mark: int = 0, *, user: str | None = None, namespace: str | None = None, ok: bool = True
    ) -> list[Write]:
        """Writes logged after ``mark``, by ``user`` and in ``namespace`` when given, successful ones only if ``ok``."""
        return [
            write
            for write in self.writes(mark)
            if (user is None or write.user == user)
            and (namespace is None or write.namespace == namespace)
            and (not ok or 200 <= write.code < 300)
        ]

    def rotated(self) -> list[Path]:
        """Backups the API server rotated out of this log (``audit-<time>.log`` beside it); none is ever expected."""
        return sorted(self.path.parent.glob(f"{self.path.stem}-*{self.path.suffix}"))

    def writes(self, mark: int = 0) -> Iterator[Write]:
        """Every write logged after ``mark``, read line by line (a campaign's log is large).

        A rotated log is refused, not read: the writes before the rotation are in another
        file, and a judgement over part of the log (a deletion whose marking went before)
        would be wrong without saying so.
        """
        try:
            log = self.path.open("rb")
        except FileNotFoundError:
            return
        with log:
            size = log.seek(0, 2)
            if backups := self.rotated():
                names = ", ".join(p.name for p in backups)
                raise AuditLogCutError(f"{self.path} was rotated ({names}); its writes before that are not in it")
            if mark > size:
                raise AuditLogCutError(f"{self.path} is {size} bytes, shorter than a mark at {mark}: it was cut")
            log.seek(mark)
            for line in log:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # a line still being written
                write = _write(event)
                if write is not None:
                    yield write


def _write(event: dict[str, object]) -> Write | None:
    if event.get("stage") != "ResponseComplete" or event.get("verb") not in WRITE_VERBS:
        return None
    ref = event.get("objectRef") or {}
    user = event.get("user") or {}
    status = event.get("responseStatus") or {}
    answer = event.get("responseObject") or {}
    if not (isinstance(ref, dict) and isinstance(user, dict) and isinstance(status, dict) and isinstance(answer, dict)):
        return None
    meta = answer.get("metadata") if answer.get("kind") != "Status" else None
    uid = ref.get("uid") or (meta.get("uid") if isinstance(meta, dict) else None) or ""
    received = event.get("requestReceivedTimestamp")
    request = event.get("requestObject")
    written = request.get("status") if isinstance(request, dict) else None
    return Write(
        at=_time(event["stageTimestamp"]),
        user=str(user.get("username", "")),
        verb=str(event["verb"]),
        resource=str(ref.get("resource", "")),
        subresource=str(ref.get("subresource", "")),
        namespace=str(ref.get("namespace", "")),
        name=str(ref.get("name", "")),
        code=int(str(status.get("code", 0))),
        uid=str(uid),
        received=_time(received) if received else None,
        status=json.dumps(written, sort_keys=True, separators=(",", ":")) if written is not None else "",
    )


def _time(stamp: object) -> datetime:
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))


def tally(writes: list[Write]) -> Counter[str]:
    """Writes by kind (create, update, status, delete, event)."""
    return Counter(write.kind for write in writes)
