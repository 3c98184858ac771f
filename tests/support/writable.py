"""A check for two primaries that cannot miss one: every member's own history of accepting writes, compared.

A prober holds one session per member address and writes through it in lockstep, an ``INSERT`` at a
time, every ``PROBE_EVERY`` seconds (0.05 unless set): each try is sent, then its answer (the row, or
an error) read back before the next, so a try's interval ``[sent, received]`` holds the moment the
member committed it. A member's
*run* is a stretch of consecutive acknowledged tries, with no refused, failed or lost one between
them: throughout it, that member accepted writes. Two runs of different members that overlap in time
are two primaries. A run is bounded by the member's own answers, not by a question asked now and
then, so an overlap shorter than the gap between two questions is not missed; each acknowledged row
is kept with its member and its send time, to be found again in the final table.

The prober is bash and ``psql`` (the PostgreSQL image's own client), started with a targets file of
``<member> <host>`` lines it reads as they are added. It prints one line per try:
``<member> <sent> <received> <outcome>``, outcome ``ok`` (the row came back), ``no`` (refused, such as
a standby's read-only error), ``lost`` (no answer within ``HUNG_SECONDS``: the session is dropped) or
``gone`` (the session ended: a new one starts, and a run never spans it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

TABLE = "writable_probe"
TARGETS = "/tmp/writable-targets"
HUNG_SECONDS = 5
# The loop between two tries runs only builtins: a ``sleep`` started per try had to be read from disk whenever the
# page cache had let it go, and beside heavy writeback that stalled the prober for seconds between an answer and its
# next try (3.1 s measured), while the member had answered in a millisecond. ``rest`` waits on a pipe nothing writes.
SCRIPT = f"""
exec {{idle}}<> <(:)
rest() {{ read -r -t "$1" -u "$idle" _ || true; }}
session() {{
  coproc PSQL {{ exec stdbuf -oL psql -XqAt -h "$2" -U postgres -d postgres 2>/dev/null; }}
  printf 'create table if not exists {TABLE} (member text, sent numeric);\\n\\\\echo .\\n' >&"${{PSQL[1]}}" 2>/dev/null
  while true; do
    IFS= read -r -t {HUNG_SECONDS} line <&"${{PSQL[0]}}" || {{ echo "$1 $EPOCHREALTIME $EPOCHREALTIME gone"; return; }}
    [ "$line" = . ] && break
  done
  while true; do
    sent=$EPOCHREALTIME
    printf "insert into {TABLE} values ('%s', %s) returning sent;\\n%s\\n" "$1" "$sent" '\\echo .' >&"${{PSQL[1]}}" \\
      2>/dev/null || {{ echo "$1 $sent $EPOCHREALTIME gone"; return; }}
    outcome=no
    while true; do
      if ! IFS= read -r -t {HUNG_SECONDS} line <&"${{PSQL[0]}}"; then
        [ -n "$PSQL_PID" ] && kill "$PSQL_PID" 2>/dev/null
        echo "$1 $sent $EPOCHREALTIME lost"
        return
      fi
      [ "$line" = . ] && break
      [ "$line" = "$sent" ] && outcome=ok
    done
    echo "$1 $sent $EPOCHREALTIME $outcome"
    rest "${{PROBE_EVERY:-0.05}}"
  done
}}
probe() {{ while true; do session "$1" "$2"; rest 0.1; done; }}
touch {TARGETS}
seen=" "
while true; do
  while read -r member host; do
    case "$seen" in *" $member@$host "*) ;; *) seen="$seen$member@$host "; probe "$member" "$host" & ;; esac
  done < {TARGETS}
  rest 0.2
done
"""


@dataclass(frozen=True)
class Try:
    """One write sent to a member: when it was sent and answered (the prober's clock), and how it ended."""

    member: str
    sent: str  # as written in the row: the row is found again by it
    received: float
    outcome: str  # ok, no, lost, gone

    @property
    def at(self) -> float:
        return float(self.sent)


@dataclass(frozen=True)
class Run:
    """A member's consecutive acknowledged tries: it accepted writes from ``start`` until ``end``."""

    member: str
    start: float  # the first try's send time
    end: float  # the last try's answer time
    tries: int


def tries(log: str) -> list[Try]:
    """The prober's lines; anything else in the log (a shell's warning) is skipped."""
    out = []
    for line in log.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] in ("ok", "no", "lost", "gone"):
            out.append(Try(parts[0], parts[1], float(parts[2]), parts[3]))
    return out


def runs(tried: Iterable[Try]) -> list[Run]:
    """Each member's runs, in the order it tried: any try not acknowledged ends a run."""
    by_member: dict[str, list[Try]] = {}
    for each in tried:
        by_member.setdefault(each.member, []).append(each)
    out: list[Run] = []
    for member, own in by_member.items():
        current: list[Try] = []
        ended = Try(member, "inf", float("inf"), "gone")  # the log's end ends the last run
        for each in [*sorted(own, key=lambda t: t.at), ended]:
            if each.outcome == "ok":
                current.append(each)
                continue
            if current:
                out.append(Run(member, current[0].at, max(t.received for t in current), len(current)))
            current = []
    return sorted(out, key=lambda run: run.start)


def overlaps(found: Iterable[Run]) -> list[tuple[Run, Run]]:
    """Every pair of runs of two members that overlap in time: two primaries, each acknowledging writes."""
    ordered = sorted(found, key=lambda run: run.start)
    pairs = []
    for index, first in enumerate(ordered):
        for second in ordered[index + 1 :]:
            if second.start >= first.end:
                break
            if second.member != first.member:
                pairs.append((first, second))
    return pairs


def overlap_seconds(pair: tuple[Run, Run]) -> float:
    first, second = pair
    return min(first.end, second.end) - max(first.start, second.start)


def acknowledged(tried: Iterable[Try]) -> set[tuple[str, str]]:
    """(member, sent) of every acknowledged try: each must be a row of the final table."""
    return {(each.member, each.sent) for each in tried if each.outcome == "ok"}


@dataclass(frozen=True)
class Silence:
    """The longest time between two consecutive tries' sends to a member, and the two tries around it."""

    seconds: float
    before: Try | None
    after: Try | None


def longest_silence(tried: Iterable[Try], member: str) -> Silence:
    """How closely ``member`` was watched: its widest gap between sends, kept with its ends as evidence."""
    sent = sorted((each for each in tried if each.member == member), key=lambda t: t.at)
    widest = Silence(0.0, None, None)
    for before, after in itertools.pairwise(sent):
        if after.at - before.at > widest.seconds:
            widest = Silence(after.at - before.at, before, after)
    return widest
