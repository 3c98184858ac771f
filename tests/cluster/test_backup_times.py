"""``schedule.following`` gives the time Kubernetes' own cron parser gives: the base backups' next run.

The CronJob controller runs a CronJob by ``github.com/robfig/cron/v3``'s ``ParseStandard`` and ``Next``; the hooks
say when the next base backup is due (``status.backup.nextScheduleTime``, which the overdue alert reads) by their
own reading of the schedule. ``cronref/`` is a few lines of Go over that very module at the version Kubernetes
1.34 requires: each schedule below, after each moment below, must give the same time in both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from hooks.backup import schedule

from ..support.schedules import SCHEDULES

REFERENCE = Path(__file__).parent / "cronref"
# Month and year ends, a leap day, a time on a schedule's own minute, one a second past it.
MOMENTS = (
    "2026-12-07T14:30:00Z", "2026-12-31T23:59:59Z", "2028-02-28T23:59:00Z", "2027-01-01T00:00:00Z",
    "2027-06-15T00:00:01Z", "2026-03-01T12:00:00+02:00",
)  # fmt: skip
EXTRA = ("30 2 */2 * *", "0 0 13 * 5", "0 0 13 * */2", "0 0 */1 * 5", "15 8-18/3 * * 1-5", "0 0 29 2 *")


def reference(pairs: list[tuple[str, str]]) -> list[str]:
    """What robfig/cron says for each (schedule, moment): an RFC 3339 time, ``never`` or ``refused``."""
    go = shutil.which("go")
    assert go is not None, "the cron reference needs Go >= 1.22 on PATH (https://go.dev/dl, or Debian's golang)"
    environment = {**os.environ, "GOFLAGS": "-mod=readonly", "CGO_ENABLED": "0"}
    done = subprocess.run(
        [go, "run", "."],
        cwd=REFERENCE,
        env=environment,
        input="".join(f"{text}\t{at}\n" for text, at in pairs),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, f"go run in {REFERENCE} failed (Go modules come from GOPROXY): {done.stderr[-1500:]}"
    return done.stdout.splitlines()


def ours(text: str, at: str) -> str:
    if schedule.problem(text) is not None:
        return "refused"
    following = schedule.following(text, datetime.fromisoformat(at))
    return "never" if following is None else following.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def answers() -> dict[tuple[str, str], str]:
    pairs = [(text, at) for text in (*SCHEDULES, *EXTRA) for at in MOMENTS]
    return dict(zip(pairs, reference(pairs), strict=True))


@pytest.mark.parametrize("text", [*SCHEDULES, *EXTRA])
def test_the_next_run_is_the_one_the_cron_parser_gives(answers: dict[tuple[str, str], str], text: str) -> None:
    for at in MOMENTS:
        assert ours(text, at) == answers[(text, at)], (text, at)


def test_the_reference_gives_times_never_and_refusals(answers: dict[tuple[str, str], str]) -> None:
    said = set(answers.values())
    assert {"never", "refused"} <= said
    assert len(said) > 10
