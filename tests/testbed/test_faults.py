"""A part that died on its own is reported with how it ended, so a crash names its cause."""

from __future__ import annotations

import signal

from testbed.faults.faults import ended


def test_a_part_killed_by_a_signal_names_the_signal() -> None:
    assert ended(-signal.SIGKILL) == "killed by SIGKILL"


def test_a_part_that_exited_names_its_status() -> None:
    assert ended(1) == "exit status 1"


def test_a_signal_without_a_name_is_given_by_number() -> None:
    assert ended(-40) == "killed by signal 40"
