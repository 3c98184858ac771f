"""The two-primaries check (``tests/support/writable.py``) catches two members that accept writes for 300 ms at once,
every time, and flags nothing when the second starts only after the first has stopped.

Two real primaries stand in for a shard gone wrong: the leaders of two shards of their own (two Patroni
clusters), each told apart only by whether it takes writes (``default_transaction_read_only``, reloaded:
a session already open obeys it from its next statement). The prober writes to both at once, as it
would to a shard's members. Ten times, the member that does not take writes is made to, and 300 ms
later the other stops: both accepted writes for at least those 300 ms. Ten times, the writer stops
first and the other starts 300 ms later: no moment had two. The check reads only the prober's log.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testbed.real.controlplane import ControlPlane
from tools.image.builders import ulimits_below_own

from ..support import writable
from ..support.kube import Kube
from .conftest import IMAGES, new_shard
from .members import PASSWORDS, Member, Shard, full_priority, podman, start_member, wait_for

# The prober and both members run at full priority: the check needs each member tried every quarter second.
MEASURED = True
ROUNDS = 10
OVERLAP = 0.3  # seconds both members take writes, on purpose
SETTLE = 1.0  # seconds each state is held before the next change, so each round stands apart
# A change is made by two execs into the member (about 0.2 s each): what it changes happens within this much of
# the moment recorded, so a round's window is widened by it, and rounds stand further apart than twice it.
EXEC = 0.5


@pytest.fixture(scope="module")
def other(
    shard: Shard, control_plane: ControlPlane, kube: Kube, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Member]:
    """The leader of a second shard of the same image: a second primary."""
    folder: Path = tmp_path_factory.mktemp("patroni-other")
    kind = next(kind for kind, image in IMAGES.items() if image == shard.image)
    second = new_shard(kind, kube, control_plane, folder)
    member = start_member(second, 0, measured=MEASURED)
    try:
        wait_for(f"{member.name} leads", lambda: second.holder("leader") == member.name, [member])
        yield member
    finally:
        member.remove()


def take_writes(member: Member, taking: bool) -> float:
    """Make ``member`` take writes or refuse them; when it was done (every session obeys from then)."""
    value = "off" if taking else "on"
    member.sql(f"ALTER SYSTEM SET default_transaction_read_only = {value}")
    member.sql("SELECT pg_catalog.pg_reload_conf()")
    return time.time()


@dataclass(frozen=True)
class Round:
    overlap: bool  # both took writes from ``start`` until ``end``; else neither did in between
    start: float
    end: float


@dataclass(frozen=True)
class Probed:
    tried: list[writable.Try]
    rounds: list[Round]
    names: dict[str, Member]


@pytest.fixture(scope="module")
def probed(shard: Shard, leader: Member, other: Member) -> Iterator[Probed]:
    names = {"first": leader, "second": other}
    wait_for(f"{leader.name} leads", lambda: shard.holder("leader") == leader.name, [leader])
    for member in names.values():
        member.sql(f"CREATE TABLE IF NOT EXISTS public.{writable.TABLE} (member text, sent numeric)")
    take_writes(leader, True)
    take_writes(other, False)
    container = f"sharddb-prober-{os.getpid()}-{shard.namespace}"
    podman(
        "run", "--detach", "--name", container, "--network", "host", "--pull", "never", "--tmpfs", "/tmp:mode=1777",
        *ulimits_below_own(), "--env", f"PGPASSWORD={PASSWORDS['PATRONI_SUPERUSER_PASSWORD']}",
        "--env", "PGSSLMODE=require", "--env", "PROBE_EVERY=0.02",
        "--entrypoint", "bash", shard.image, "-c", writable.SCRIPT, prefix=full_priority(),
    )  # fmt: skip
    try:
        lines = "".join(f"{name} {member.address}\n" for name, member in names.items())
        podman("exec", container, "sh", "-c", f"printf '%s' '{lines}' >> {writable.TARGETS}")
        try:
            wait_for("the prober writing to both", lambda: _heard(container, set(names)), [leader, other], timeout=60)
        except AssertionError as error:
            raise AssertionError(f"{error}\n--- the prober\n{_log(container)[-3000:]}") from None
        rounds = []
        writer, idle = leader, other
        for index in range(2 * ROUNDS):
            time.sleep(SETTLE)
            if index % 2 == 0:  # the idle member starts first: both take writes
                start = take_writes(idle, True)
                time.sleep(OVERLAP)
                end = time.time()
                take_writes(writer, False)
                rounds.append(Round(True, start, end))
            else:  # the writer stops first
                start = take_writes(writer, False)
                time.sleep(OVERLAP)
                end = time.time()
                take_writes(idle, True)
                rounds.append(Round(False, start, end))
            writer, idle = idle, writer
        time.sleep(SETTLE)
        yield Probed(writable.tries(_log(container)), rounds, names)
    finally:
        subprocess.run(["podman", "rm", "--force", "--time", "1", container], capture_output=True, check=False)


def _log(container: str) -> str:
    done = subprocess.run(["podman", "logs", container], capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


def _heard(container: str, members: set[str]) -> bool:
    """One member has acknowledged a write and the other refused one: both sessions are open."""
    tried = writable.tries(_log(container))
    answered = {(t.member, t.outcome) for t in tried if t.outcome in ("ok", "no")}
    return {member for member, _ in answered} == members and {outcome for _, outcome in answered} == {"ok", "no"}


def within(pair: tuple[writable.Run, writable.Run], round_: Round) -> bool:
    """The overlap falls in the round's window, widened by the time a change takes to be made."""
    first, second = pair
    return max(first.start, second.start) < round_.end + EXEC and min(first.end, second.end) > round_.start - EXEC


def test_every_forced_overlap_of_300_ms_is_caught(probed: Probed) -> None:
    found = writable.overlaps(writable.runs(probed.tried))
    forced = [each for each in probed.rounds if each.overlap]
    caught = [each for each in forced if any(within(pair, each) for pair in found)]
    assert len(caught) == ROUNDS == len(forced), (len(caught), found)


def test_each_caught_overlap_spans_the_300_ms_both_took_writes(probed: Probed) -> None:
    found = writable.overlaps(writable.runs(probed.tried))
    spans = sorted(round(writable.overlap_seconds(pair), 3) for pair in found)
    assert spans, "no overlap caught"
    print(f"two primaries: {len(spans)} overlaps caught, spanning {min(spans)} to {max(spans)} s")
    assert min(spans) >= OVERLAP - 0.1, spans


def test_no_overlap_is_found_where_the_second_started_after_the_first_stopped(probed: Probed) -> None:
    found = writable.overlaps(writable.runs(probed.tried))
    clean = [each for each in probed.rounds if not each.overlap]
    flagged = [each for each in clean if any(within(pair, each) for pair in found)]
    assert flagged == [], flagged
    forced = [each for each in probed.rounds if each.overlap]
    assert [pair for pair in found if not any(within(pair, each) for each in forced)] == []


def test_every_acknowledged_write_is_a_row_of_its_members_table(probed: Probed) -> None:
    for name, member in probed.names.items():
        rows = member.sql(f"SELECT sent FROM public.{writable.TABLE} WHERE member = '{name}'").split()
        mine = {sent for owner, sent in writable.acknowledged(probed.tried) if owner == name}
        assert mine, name
        assert mine <= set(rows), sorted(mine - set(rows))[:5]


def test_each_member_was_tried_at_least_every_quarter_second(probed: Probed) -> None:
    for name in probed.names:
        silence = writable.longest_silence(probed.tried, name)
        print(f"two primaries: {name} was tried at least every {silence.seconds:.3f} s")
        assert silence.seconds < 0.25, f"{name}: {_told(silence)}; {_nearest(probed.rounds, silence)}"


def _told(silence: writable.Silence) -> str:
    """The silence's two ends: a slow answer (the member) is told apart from a late send (the prober)."""
    before, after = silence.before, silence.after
    if before is None or after is None:
        return "no tries"
    return (
        f"{silence.seconds:.3f} s between sends: the try before it ({before.outcome}) was answered "
        f"{before.received - before.at:.3f} s after it was sent, the next one sent {after.at - before.received:.3f} s "
        f"after that answer"
    )


def _nearest(rounds: list[Round], silence: writable.Silence) -> str:
    """Where a silence fell against the changes the test made: evidence for a cadence missed."""
    if silence.before is None:
        return "no tries"
    at = silence.before.at
    closest = min(rounds, key=lambda each: min(abs(each.start - at), abs(each.end - at)))
    return f"round (overlap={closest.overlap}) changed at {closest.start - at:+.3f} s and {closest.end - at:+.3f} s"
