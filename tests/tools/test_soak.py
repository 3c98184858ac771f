"""``make soak``: each run's result read from its pytest sessions, and the figure the soak ends with."""

from __future__ import annotations

from tools.soak import Outcome, read, report, tiers

FAILED_SESSION = """\
....F.
=========================== short test summary info ============================
FAILED tests/e2e/test_scaling.py::test_growing_runs_a_new_seed - AssertionError: timed out after 330s
ERROR tests/e2e/test_deletion.py::test_deletion_stops_every_cache_pod - AssertionError: a node deleted pods
=========================== evidence kept on failure ===========================
in .evidence/20261202-011500-4242/ (logs cut to each test's window)
1 failed, 40 passed, 1 error in 612.31s (0:10:12)
"""


def test_a_failed_session_gives_its_counts_its_failures_first_lines_and_its_evidence() -> None:
    outcome = read("e2e", 1, 612.3, FAILED_SESSION)
    assert outcome.counts == {"failed": 1, "passed": 40, "error": 1}
    assert outcome.failures == [
        "FAILED tests/e2e/test_scaling.py::test_growing_runs_a_new_seed - AssertionError: timed out after 330s",
        "ERROR tests/e2e/test_deletion.py::test_deletion_stops_every_cache_pod - AssertionError: a node deleted pods",
    ]
    assert outcome.evidence == ".evidence/20261202-011500-4242"
    assert not outcome.passed


def test_a_passed_session_reads_as_passed_with_nothing_to_show() -> None:
    outcome = read("data", 0, 300.0, "......\n6 passed in 300.02s (0:05:00)\n")
    assert (outcome.passed, outcome.counts, outcome.failures) == (True, {"passed": 6}, [])
    assert str(outcome) == "data passed (6 passed; 300 s)"


def test_the_report_counts_passed_runs_and_shows_each_failed_runs_failures() -> None:
    good = [Outcome("e2e", 0, 600.0, {"passed": 41}), Outcome("data", 0, 300.0, {"passed": 6})]
    bad = [read("e2e", 1, 612.3, FAILED_SESSION), Outcome("data", 0, 300.0, {"passed": 6})]
    lines = report([good, bad, good]).splitlines()
    assert lines[0] == "soak: 2 of 3 runs passed"
    assert lines[1].startswith("run 2, e2e FAILED (1 failed, 40 passed, 1 error; 612 s); evidence in .evidence/")
    assert [line.split(" - ")[0].strip() for line in lines[2:]] == [
        "FAILED tests/e2e/test_scaling.py::test_growing_runs_a_new_seed",
        "ERROR tests/e2e/test_deletion.py::test_deletion_stops_every_cache_pod",
    ]


def test_a_session_that_failed_before_any_test_is_a_failed_run_said_so() -> None:
    outcome = read("e2e", 2, 3.0, "ERROR: usage: pytest [options]\n")
    assert report([[outcome]]).splitlines() == [
        "soak: 0 of 1 runs passed",
        "run 1, e2e FAILED (exit 2; 3 s)",
        "  (no test failed: the session itself did)",
    ]


def test_the_data_tier_runs_inside_the_real_nodes_namespaces_and_a_selection_narrows_a_tier() -> None:
    e2e, data = tiers(["tests/e2e/test_deletion.py"], ["all"], python="python")
    assert e2e.command[-3:] == ["-m", "e2e", "tests/e2e/test_deletion.py"]
    assert data.command[:4] == ["python", "-m", "testbed.real.sandbox", "--"]
    assert data.command[-2:] == ["-m", "data"]


def test_a_tier_without_a_selection_is_left_out() -> None:
    assert [tier.name for tier in tiers(["all"], [], python="python")] == ["e2e"]
