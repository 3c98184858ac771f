"""What the base backups' CronJob says of its runs: when the last one was scheduled, when one last succeeded; and
the schedule it runs on, kept while a new one is refused (``schedule``).

The CronJob controller records both on the CronJob itself (a child), so the hooks read them without
watching its Jobs. A Job made by hand from the CronJob (``kubectl create job --from=cronjob/...``) is
owned by it too: its success counts, though only scheduled runs set the scheduled time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from . import schedule as cron


@dataclass(frozen=True)
class BaseBackups:
    """The CronJob's record of its runs."""

    scheduled: datetime | None  # the last scheduled run's time
    succeeded: datetime | None  # when the last successful run ended
    running: bool  # a run is active
    schedule: str | None = None  # the CronJob's schedule, as stored
    created: datetime | None = None  # the CronJob's creationTimestamp: before a first success, due counts from it

    @property
    def failed(self) -> bool:
        """The last scheduled run ended without success: nothing runs now, and no success came after it."""
        if self.running or self.scheduled is None:
            return False
        return self.succeeded is None or self.succeeded < self.scheduled


def due(runs: BaseBackups | None, schedule: str | None) -> datetime | None:
    """When the next base backup is due: the schedule's first time after the last success (before the first, after
    the CronJob was made). It moves only when a run succeeds or the schedule changes, so the status that carries it
    is not rewritten as time passes; a time in the past is a run due now, running, or missed (the overdue alert)."""
    if runs is None or schedule is None:
        return None
    since = runs.succeeded or runs.created
    return cron.following(schedule, since) if since is not None else None
