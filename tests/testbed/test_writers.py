"""The writers' log, read as the installed tier reads it: acknowledged numbers, failures, the longest gap."""

from __future__ import annotations

from tests.installed.writers import Outage, tally

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


def test_an_outage_row_gives_the_stopped_shards_median_and_max_beside_the_others() -> None:
    outage = Outage("drain", {"a-0": 9.0, "a-1": 1.0, "a-2": 4.0}, affected=("a-0", "a-2"), cache=0.5)
    assert outage.row() == "| drain | 2 | 6.5 | 9.0 | 1.0 | 0.5 |"


def test_an_outage_row_without_other_shards_or_cache_says_so() -> None:
    assert Outage("floor", {"f-0": 2.25}, affected=("f-0",)).row() == "| floor | 1 | 2.2 | 2.2 | — | — |"
