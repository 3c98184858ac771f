"""The writers' log, read as the installed tier reads it: acknowledged numbers, failures, the longest gap."""

from __future__ import annotations

from tests.installed.writers import tally

LOG = "ready\nack 1 100.0\nack 2 100.25\nfail 3 100.5\nfail 4 102.7\nack 5 104.0\nack 6 104.25\n"


def test_every_acknowledged_number_is_counted() -> None:
    assert tally(LOG).acked == frozenset({1, 2, 5, 6})


def test_the_longest_gap_is_between_acknowledgements() -> None:
    assert tally(LOG).longest_gap == 3.75


def test_failures_and_gaps_count_from_the_step_on() -> None:
    step = tally(LOG, since=102.0)
    assert (step.failed, step.acked) == (1, frozenset({1, 2, 5, 6}))


def test_an_outage_that_begins_with_the_step_counts_from_the_step() -> None:
    assert tally(LOG, since=100.5).longest_gap == 3.5


def test_the_last_acknowledgement_is_kept() -> None:
    assert tally(LOG).last_ack == 104.25


def test_lines_that_are_not_attempts_are_ignored() -> None:
    assert tally("ready\nsomething else\n") == tally("")
