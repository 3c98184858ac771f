"""The two invariants every disturbance of a shard with standbys is held to, in one check.

Once a step is over, its clients are read into a ``Seen``: the writer through the shard's
``-primary`` Service and, where the step ran one, the client given every member with
``target_session_attrs=read-write`` (``writers.py``), each as commits acknowledged and those the
primary now lacks; every poller's answers (``poller.py``); and the rows the step adds to the
session's outage table. Each step has a test per invariant, and each calls its half of the check:

- ``Seen.no_acknowledged_commit_lost``: the step's outages recorded; each writer had commits
  acknowledged, and the primary now has every one of them;
- ``Seen.never_two_primaries``: the pollers heard the members, no two members answered ``f`` to
  questions that overlapped in time (``both_primary``), no two committed the poller's write in
  overlapping questions (``both_written``), no two members' runs of acknowledged writes overlap in
  any poller pod's prober (``tests/support/writable.py``), and, when the step hands the primary over
  (``handed_to``), the new primary was heard answer both ``t`` and ``f``;
- and, with the first, every write a prober had acknowledged is a row of its table on the primary.

``Report`` and ``Record`` are the session's summary lines and outage rows, as the tier's conftest
hands them to a test (its ``report`` and ``outages`` fixtures): here, so that a subfolder's modules
can name them too.

Its assertions say what failed themselves: pytest rewrites the asserts of test modules and
conftests only, not of a module they import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from testbed.faults.outages import Outage

from ..support import writable
from .poller import Answer, both_primary, both_written
from .writers import Writers

Report = Callable[[str], None]
Record = Callable[[Outage], None]


@dataclass(frozen=True)
class Kept:
    """What one writer saw acknowledged, and which of those the primary does not have (must be none)."""

    acked: int
    lost: frozenset[int]

    @classmethod
    def read(cls, writers: Writers) -> Kept:
        """The first writer of ``writers``, its rows read on its target's pod (the primary once the step is over)."""
        acked = writers.tally(0).acked
        return cls(len(acked), writers.lost(0) if acked else frozenset())


@dataclass(frozen=True)
class Seen:
    """A step's clients, read once it is over."""

    writer: Kept  # through ``-primary``
    direct: Kept | None  # given every member, read-write; None where the step ran no such client
    outages: tuple[Outage, ...]  # the rows the step adds to the session's table
    polled: list[Answer]  # every poller's answers; none where the step ran no poller
    tried: list[list[writable.Try]] = field(default_factory=list)  # each poller pod's prober, on its own clock
    rows: frozenset[tuple[str, str]] = frozenset()  # the probers' table on the primary once the step is over

    def no_acknowledged_commit_lost(self, record: Record) -> None:
        """Record the step's outages; every writer had commits acknowledged, and none of them is lost."""
        for outage in self.outages:
            record(outage)
        assert self.writer.acked > 0, "the writer through -primary had no commit acknowledged"
        assert self.writer.lost == frozenset(), f"acknowledged commits lost: {sorted(self.writer.lost)}"
        if self.direct is not None:
            assert self.direct.acked > 0, "the client given every member had no commit acknowledged"
            assert self.direct.lost == frozenset(), (
                f"acknowledged commits lost by the client given every member: {sorted(self.direct.lost)}"
            )
        acknowledged = set().union(*(writable.acknowledged(tries) for tries in self.tried))
        missing = sorted(acknowledged - self.rows)
        assert missing == [], f"writes a prober had acknowledged, not on the primary: {len(missing)}, {missing[:5]}"

    def never_two_primaries(self, handed_to: str | None = None) -> None:
        """No two members accepted writes, or committed one, at once; a hand-over to ``handed_to``, if named, seen."""
        assert self.polled, "the step ran no poller, or it heard nothing"
        if handed_to is not None:
            heard = {each.answer for each in self.polled if each.member == handed_to}
            assert heard >= {"t", "f"}, f"no hand-over seen: {handed_to} answered {sorted(heard)}, not both t and f"
        primaries = both_primary(self.polled)
        assert primaries == [], f"two members answered f to overlapping questions: {primaries[:5]}"
        written = both_written(self.polled)
        assert written == [], f"two members committed a write in overlapping questions: {written[:5]}"
        assert self.tried, "the step ran no prober"
        for tries in self.tried:
            assert any(each.outcome == "ok" for each in tries), "a prober had no write acknowledged"
            overlapping = writable.overlaps(writable.runs(tries))
            assert overlapping == [], f"two members' runs of acknowledged writes overlap: {overlapping[:3]}"
