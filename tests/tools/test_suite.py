"""``make test``'s runner: every tier in it, each after the builds it needs, and a closing count of every test."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tools import suite

ROOT = Path(__file__).resolve().parents[2]


def markers() -> set[str]:
    declared = re.findall(r'^\s*"(\w+): ', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    return set(declared)


def test_every_tier_marker_is_run_by_some_phase() -> None:
    selected = " ".join(p.command[p.command.index("pytest") + 2] for p in suite.PHASES if p.pytest)
    for tier in ("cluster", "e2e", "data", "installed", "patroni"):
        assert re.search(rf"(?<!not ){tier}\b", selected), f"no phase runs the {tier} tier"
    assert suite.FAST == "not cluster and not e2e and not data and not installed and not patroni"
    assert {"slow", "recorded", "shared", "http"} <= markers(), "the fast phase runs these with the rest"


def test_the_data_tier_waits_for_the_fast_phases_core_and_the_nodes_builds_only() -> None:
    data = next(p for p in suite.PHASES if p.name == "data")
    assert data.after == ("fast",)
    assert set(data.needs) == set(suite.NODE)


def test_the_end_to_end_tier_is_split_into_files_that_cover_it_once() -> None:
    files = sorted(p.name for p in (ROOT / "tests" / "e2e").glob("test_*.py"))
    own = [Path(f).name for f in suite.OWN_STACKS]
    assert set(own) <= set(files)
    shared = next(p for p in suite.PHASES if p.name == "e2e")
    ignored = [arg.removeprefix("--ignore=") for arg in shared.command if arg.startswith("--ignore=")]
    assert sorted(Path(f).name for f in ignored) == sorted(own)


def test_each_file_that_starts_a_stack_of_its_own_runs_beside_the_shared_one() -> None:
    def own(text: str) -> bool:
        return "start_stack(" in text or "from bench.chaos import" in text  # the campaign starts its own

    starts = {p.name for p in (ROOT / "tests" / "e2e").glob("test_*.py") if own(p.read_text())}
    assert starts == {Path(f).name for f in suite.OWN_STACKS}


def test_the_tiers_on_real_nodes_follow_only_the_cluster_tier_in_their_lane() -> None:
    """The longest path: the end-to-end tests, mostly waiting, run in the other lane instead of before them."""
    assert [p.name for p in suite.PHASES if p.lane == "tests"] == ["cluster", "data", "installed"]
    assert [p.name for p in suite.PHASES if p.lane == "own-stacks"] == ["e2e-own-stacks", "e2e"]


def test_the_data_and_installed_tiers_run_inside_the_sandbox_after_every_build() -> None:
    for name in ("data", "installed"):
        phase = next(p for p in suite.PHASES if p.name == name)
        assert phase.command[1:4] == ("-m", "testbed.real.sandbox", "--")
        assert set(suite.NODE) <= set(phase.needs)


def test_the_patroni_tier_runs_last_in_the_images_lane_after_its_images_needing_only_the_test_stack() -> None:
    """The images lane is idle once make image is done, while the data and installed tiers hold the test lane."""
    lane = [p.name for p in suite.PHASES if p.lane == "images"]
    assert lane[-3:] == ["image", "patroni-images", "patroni"]
    tier = next(p for p in suite.PHASES if p.name == "patroni")
    assert set(tier.needs) == {"testbin", "patroni-images"}
    assert next(p for p in suite.PHASES if p.name == "patroni-images").nice == 19
    assert tier.nice > 0, "it yields the CPU to the data and installed tiers beside it"


def test_a_tier_in_a_build_lane_is_counted_as_a_tier(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(suite, "LOGS", tmp_path)
    run = suite.Run([fake("tier", "images", 0)])
    run.lane("images")
    assert run.results["tier"].counts == {"passed": 3, "failed": 0}


def test_pytests_closing_line_gives_the_counts() -> None:
    tail = ["FAILED tests/x.py::t\n", "==== 12 passed, 1 failed, 2 errors, 3 skipped in 4.50s ====\n"]
    assert suite.pytest_counts(tail) == {"passed": 12, "failed": 1, "error": 2, "skipped": 3}
    assert suite.pytest_counts(["no summary here\n"]) == {}


def fake(name: str, lane: str, code: int, *, needs: tuple[str, ...] = (), after: tuple[str, ...] = ()) -> suite.Phase:
    script = f"import time; time.sleep(0.2); print('=== {3 if code == 0 else 1} passed, {code} failed in 0.2s ==='); "
    script += f"raise SystemExit({code})"
    return suite.Phase(name, (sys.executable, "-c", script), lane, needs, after, pytest=True)


def test_a_phase_waits_for_what_it_needs_and_is_not_run_when_that_failed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(suite, "LOGS", tmp_path)
    run = suite.Run(
        [
            fake("build", "builds", 1),
            fake("first", "tests", 0),
            fake("later", "tests", 0, needs=("build",)),
            fake("ordered", "tests", 0, after=("build",)),
        ]
    )
    run.lane("builds")
    run.lane("tests")
    results = run.results
    assert results["later"].outcome() == "not run: build failed"
    assert results["ordered"].ok
    assert results["first"].counts == {"passed": 3, "failed": 0}
    assert results["ordered"].started >= results["build"].started + results["build"].seconds


def test_lanes_run_side_by_side(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(suite, "LOGS", tmp_path)
    results = suite.run_all([fake("one", "tests", 0), fake("two", "other", 0)]).results
    one, two = results["one"], results["two"]
    assert two.started < one.started + one.seconds, "the other lane's phase started before this one's ended"


def test_the_run_ends_with_a_table_and_the_count_of_every_test(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(suite, "LOGS", tmp_path)
    monkeypatch.setattr(suite, "PHASES", (fake("one", "tests", 0), fake("two", "other", 2)))
    assert suite.main([]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "suite: 4 passed, 2 failed"
    assert "| one | tests |" in err
    assert "| two | other |" in err
    assert "FAILED (exit 2): 1 passed, 2 failed" in err


def test_the_closing_lines_name_each_failed_test_of_every_tier(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CI log is often read from its tail: the table alone would say a tier failed, not which test."""
    script = "print('FAILED tests/e2e/test_x.py::test_y - AssertionError: ' + 'z' * 400); "
    script += "print('=== 1 passed, 1 failed in 0.2s ==='); raise SystemExit(1)"
    failing = suite.Phase("e2e", (sys.executable, "-c", script), "other", pytest=True)
    monkeypatch.setattr(suite, "LOGS", tmp_path)
    monkeypatch.setattr(suite, "PHASES", (fake("one", "tests", 0), failing))
    assert suite.main([]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].startswith("suite: e2e: FAILED tests/e2e/test_x.py::test_y - AssertionError: zzz")
    assert len(lines[-2]) <= len("suite: e2e: ") + 240
    assert lines[-1] == "suite: 4 passed, 1 failed"
