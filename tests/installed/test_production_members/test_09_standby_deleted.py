"""The standby pod deleted: writes go on, the primary stays where it is, the standby is made anew. Then the standby
rebuilt from the primary as ``docs/runbooks/standby-lags.md`` writes it, its questions first: the same."""

from __future__ import annotations

import pytest

from ..installs import Install, Obj
from ..invariants import Record, Report
from ..steps import ROOT, runbook
from .disturbances import Disturbed, disturb, watched
from .shard import RUNBOOK_SETTINGS, BroughtUp, delete_pod

RUNBOOK = ROOT / "docs" / "runbooks" / "standby-lags.md"


@pytest.fixture(scope="module")
def standby_deleted(install: Install, brought_up: BroughtUp) -> Disturbed:
    _ = brought_up

    def delete_standby(_: Obj, standby: Obj) -> None:
        delete_pod(install, standby)

    return disturb(install, "standby pod deleted, 2 members (writes go on)", "standby", delete_standby, "standby")


def test_deleting_the_standby_moves_no_primary(standby_deleted: Disturbed, report: Report) -> None:
    report(f"standby deleted: back in {standby_deleted.seconds:.1f} s; polled {watched(standby_deleted.seen.polled)}")
    assert standby_deleted.changes == 0


def test_a_standby_made_anew_starts_no_rollout_job(standby_deleted: Disturbed) -> None:
    assert standby_deleted.jobs == []


def test_no_acknowledged_commit_is_lost_when_the_standby_is_deleted(
    standby_deleted: Disturbed, outages: Record
) -> None:
    standby_deleted.seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_when_the_standby_is_deleted(standby_deleted: Disturbed) -> None:
    standby_deleted.seen.never_two_primaries()


@pytest.fixture(scope="module")
def standby_rebuilt(install: Install, standby_deleted: Disturbed) -> tuple[Disturbed, str]:
    """The runbook's settings, its questions, then its rebuild (``patronictl reinit --wait``); what they printed."""
    _ = standby_deleted  # after it: one step at a time
    said: list[str] = []

    def rebuild(_: Obj, __: Obj) -> None:
        blocks = ("standby-lags-set", "standby-lags-ask", "standby-lags-send", "standby-lags-reinit")
        said.append(install.run(runbook(RUNBOOK, blocks, RUNBOOK_SETTINGS)))

    step = disturb(install, "standby rebuilt by the runbook's reinit, 2 members (writes go on)", "reinit", rebuild)
    return step, said[0]


def test_the_runbooks_questions_find_the_standby_streaming_from_the_primary(
    standby_rebuilt: tuple[Disturbed, str],
) -> None:
    step, said = standby_rebuilt
    (named,) = [line for line in said.splitlines() if line.startswith("primary: ")]
    assert named.startswith(f"primary: {step.primary}, standby: "), said
    standby = named.split("standby: ", 1)[1].split(",", 1)[0]
    assert [line for line in said.splitlines() if line.startswith(f"{standby}|streaming|sync|")], said


def test_the_runbooks_reinit_rebuilds_the_standby_and_moves_no_primary(
    standby_rebuilt: tuple[Disturbed, str], report: Report
) -> None:
    step, said = standby_rebuilt
    report(f"standby rebuilt (runbook): back in {step.seconds:.1f} s; polled {watched(step.seen.polled)}")
    assert "Success: reinitialize for member" in said, said
    assert "Reinitialize is completed on: " in said, said
    assert step.changes == 0


def test_no_acknowledged_commit_is_lost_when_the_runbook_rebuilds_the_standby(
    standby_rebuilt: tuple[Disturbed, str], outages: Record
) -> None:
    standby_rebuilt[0].seen.no_acknowledged_commit_lost(outages)


def test_no_two_members_accept_writes_at_once_when_the_runbook_rebuilds_the_standby(
    standby_rebuilt: tuple[Disturbed, str],
) -> None:
    standby_rebuilt[0].seen.never_two_primaries()
