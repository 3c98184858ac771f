"""The restore points benchmark's reading of a run (``bench/points.py``); ``make bench-points`` runs it."""

from __future__ import annotations

from bench.points import Figures, longest_wait, table


def test_the_longest_wait_is_the_longest_gap_that_ends_within_the_window() -> None:
    acks = [0.0, 0.001, 0.002, 0.050, 0.051, 1.0]
    assert round(longest_wait(acks, 0.01, 0.06), 3) == 48.0


def test_a_gap_ending_after_the_window_is_left_out() -> None:
    assert round(longest_wait([0.0, 0.001, 1.0], 0.0, 0.5), 3) == 1.0


def test_a_window_with_no_insert_acknowledged_in_it_waits_nothing() -> None:
    assert longest_wait([0.0, 1.0], 0.2, 0.3) == 0.0


def test_the_table_gives_p50_and_max_per_shard_count_in_order() -> None:
    two = Figures([3.0, 5.0, 4.0], [1.0, 1.0, 2.0], [6.0, 8.0, 7.0], [2.0, 2.0, 3.0], [0.3, 0.3, 0.4])
    text = table({2: two, 1: Figures()})
    lines = text.splitlines()
    assert lines[2].startswith("| 1 | 0 | — |")
    assert lines[3] == "| 2 | 3 | 4.0 / 5.0 | 7.0 / 8.0 | 2.0 / 3.0 | 1.0 / 2.0 | 0.3 / 0.4 |"
