"""Whether the API server takes ``spec.backup.schedule`` for a CronJob, checked before the CronJob is written.

The CRD's pattern takes five fields or a macro; the API server parses each field (Kubernetes' cron parser:
ranges, lists, steps, month and weekday names) and refuses the CronJob otherwise. Written anyway, that refusal
would be a sync error, and the CronJob would keep the old schedule with nothing said. Checked here, the hooks
keep the CronJob as it is and say why, naming the field (``lifecycle/wording/degraded``). The rules are the
parser's; ``tests/cluster/test_backup_schedule.py`` holds them to the real API server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

# The macros the CRD's pattern takes; the parser knows each.
DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
MONTHS = {
    name: number
    for number, name in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}
WEEKDAYS = {name: number for number, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Bounds:
    what: str
    low: int
    high: int
    names: dict[str, int] = field(default_factory=dict)


FIELDS = (
    Bounds("minute", 0, 59),
    Bounds("hour", 0, 23),
    Bounds("day of month", 1, 31),
    Bounds("month", 1, 12, MONTHS),
    Bounds("day of week", 0, 6, WEEKDAYS),
)


def problem(schedule: str) -> str | None:
    """Why the API server would refuse ``schedule`` for a CronJob; None when it takes it."""
    if "TZ" in schedule:
        return "a time zone in the schedule is refused (CronJob's own timeZone field is not offered here)"
    if schedule.startswith("@"):
        return None if schedule in DESCRIPTORS else f"unrecognized macro {schedule}"
    fields = schedule.split()
    if len(fields) != len(FIELDS):
        return f"expected exactly {len(FIELDS)} fields, found {len(fields)}"
    for text, bounds in zip(fields, FIELDS, strict=True):
        for expr in (each for each in text.split(",") if each):
            said = _range(expr, bounds)
            if said is not None:
                return f"{bounds.what} {expr!r}: {said}"
    return None


def kept(asked: str, running: str | None) -> str | None:
    """The schedule the CronJob is written with: ``asked``, or while the API server would refuse it, the one the
    CronJob runs on (None when there is none yet: no CronJob is made until the schedule is fixed)."""
    return asked if problem(asked) is None else running


def _range(expr: str, bounds: Bounds) -> str | None:
    """Why one element of a field's list is refused, or None."""
    read = _element(expr, bounds)
    return read if isinstance(read, str) else None


def _element(expr: str, bounds: Bounds) -> range | str:
    """One element of a field's list: ``*``, ``?``, ``a``, ``a-b``, each with an optional ``/step``; the values it
    takes, or why the parser refuses it."""
    parts = expr.split("/")
    if len(parts) > 2:
        return "too many slashes"
    ends = parts[0].split("-")
    if ends[0] in ("*", "?"):
        start, end = bounds.low, bounds.high  # the parser reads nothing after a star
    else:
        if len(ends) > 2:
            return "too many hyphens"
        numbers = []
        for each in ends:
            number = _number(each, bounds)
            if number is None:
                return f"{each!r} is not a number"
            numbers.append(number)
        start, end = numbers[0], numbers[-1]
    step = 1
    if len(parts) == 2:
        read = _number(parts[1], Bounds("step", 0, 0))
        if read is None:
            return f"step {parts[1]!r} is not a number"
        if len(ends) == 1:
            end = bounds.high  # "a/step" runs from a to the field's end
        if read == 0:
            return "a step must be positive"
        step = read
    refused = _within(start, end, bounds)
    return refused if refused is not None else range(start, end + 1, step)


def _within(start: int, end: int, bounds: Bounds) -> str | None:
    if start < 0 or end < 0:
        return "a negative number is refused"
    if start < bounds.low:
        return f"below the minimum {bounds.low}"
    if end > bounds.high:
        return f"above the maximum {bounds.high}"
    if start > end:
        return "its range begins after it ends"
    return None


def _number(text: str, bounds: Bounds) -> int | None:
    """A number, or a name of the field's (any case); None for anything else."""
    named = bounds.names.get(text.lower())
    if named is not None:
        return named
    return int(text) if INTEGER.fullmatch(text) else None


# Macros as the parser expands them.
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# The parser looks this far ahead for a time that matches (a 30th of February never does) and gives up after.
HORIZON_DAYS = 5 * 366


@dataclass(frozen=True)
class Times:
    """A schedule's fields as the sets of values each takes; a star (no step over 1) in either day field makes the
    day match on both fields, otherwise on either (the parser's rule, as cron's)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool

    def day(self, when: date) -> bool:
        on_day, on_weekday = when.day in self.days, (when.weekday() + 1) % 7 in self.weekdays
        if self.any_day:
            return on_day and on_weekday
        return on_day or on_weekday


def times(schedule: str) -> Times | None:
    """The schedule's sets of values; None when the API server would refuse it."""
    if problem(schedule) is not None:
        return None
    fields = MACROS.get(schedule, schedule).split()
    minutes, hours, days, months, weekdays = (
        frozenset[int]().union(*(_values(each, bounds) for each in text.split(",") if each))
        for text, bounds in zip(fields, FIELDS, strict=True)
    )
    any_day = any(_starred(each) for text in (fields[2], fields[4]) for each in text.split(","))
    return Times(minutes, hours, days, months, weekdays, any_day)


def following(schedule: str, after: datetime) -> datetime | None:
    """The schedule's first time strictly after ``after`` (UTC, as the CronJob controller runs a CronJob without a
    time zone); None for a refused schedule, or one with no time within the parser's horizon."""
    parsed = times(schedule)
    if parsed is None:
        return None
    after = after.astimezone(UTC)
    start = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    for offset in range(HORIZON_DAYS):
        when = start.date() + timedelta(days=offset)
        if when.month not in parsed.months or not parsed.day(when):
            continue
        for hour in sorted(parsed.hours):
            for minute in sorted(parsed.minutes):
                moment = datetime(when.year, when.month, when.day, hour, minute, tzinfo=UTC)
                if moment >= start:
                    return moment
    return None


def _starred(expr: str) -> bool:
    """A star (or ``?``) with no step over 1: the parser marks the field as any."""
    base, _, step = expr.partition("/")
    return base in ("*", "?") and (not step or int(step) <= 1)


def _values(expr: str, bounds: Bounds) -> frozenset[int]:
    """The values one element of a field's list (already checked by ``problem``) takes."""
    read = _element(expr, bounds)
    return frozenset(read) if isinstance(read, range) else frozenset()
