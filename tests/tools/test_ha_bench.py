"""The HA benchmark's table and its reading of each run's outages (``bench/ha.py``); ``make bench-ha`` runs it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from bench.ha import FOLDER, OUTAGES_ENV, Row, collect, command, read, rows, table
from testbed.faults.outages import Outage


def drain(primary: float, standby: float, other: float = 0.2) -> Outage:
    return Outage("drain", {"db-0": primary, "db-1": standby, "db-2": other}, ("db-0", "db-1"), cache=0.1)


def test_a_steps_outage_pools_the_affected_writers_gaps_of_every_run() -> None:
    [row] = rows([[drain(4.0, 2.0)], [drain(6.0, 1.0)], [drain(3.0, 5.0)]])
    assert row == Row("drain", 3, (4.0, 2.0, 6.0, 1.0, 3.0, 5.0))


def test_p50_is_the_median_and_max_the_longest_gap() -> None:
    [row] = rows([[drain(4.0, 2.0)], [drain(6.0, 1.0)], [drain(3.0, 5.0)]])
    assert row.line() == "| drain | 3 | 3.5 | 6.0 |"


def test_writers_the_step_did_not_stop_are_left_out() -> None:
    [row] = rows([[drain(1.0, 1.0, other=30.0)]])
    assert max(row.gaps) == 1.0


def test_steps_keep_the_order_they_first_ran_in_and_count_the_runs_that_reached_them() -> None:
    killed = Outage("postmaster killed", {"db-0": 8.0}, ("db-0",))
    found = rows([[drain(1.0, 1.0), killed], [drain(2.0, 2.0)]])
    assert [(row.step, row.runs) for row in found] == [("drain", 2), ("postmaster killed", 1)]


def test_a_step_that_stopped_no_writer_shows_dashes() -> None:
    [row] = rows([[Outage("rollout", {"db-0": 0.3}, ())]])
    assert row.line() == "| rollout | 1 | — | — |"


def test_the_table_is_markdown_with_one_row_per_step() -> None:
    lines = table(rows([[drain(1.0, 3.0)]])).splitlines()
    assert lines[0] == "| step | runs | outage p50 (s) | outage max (s) |"
    assert lines[1] == "|---|---:|---:|---:|"
    assert lines[2:] == ["| drain | 1 | 2.0 | 3.0 |"]


def test_no_runs_is_a_table_without_rows() -> None:
    assert len(table(rows([])).splitlines()) == 2


def test_a_run_file_as_the_installed_conftest_writes_it_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "run-1.json"
    path.write_text(json.dumps([dataclasses.asdict(drain(4.0, 2.0))]))
    assert read(path) == [drain(4.0, 2.0)]


def test_a_missing_run_file_is_reported_with_its_run_number(tmp_path: Path) -> None:
    written = tmp_path / "run-1.json"
    written.write_text(json.dumps([dataclasses.asdict(drain(4.0, 2.0))]))
    runs, problems = collect([written, tmp_path / "run-2.json"])
    assert runs == [[drain(4.0, 2.0)]]
    assert problems == [f"run 2: {tmp_path / 'run-2.json'} was not written"]


def test_a_garbled_run_file_is_reported_rather_than_crashing(tmp_path: Path) -> None:
    cut = tmp_path / "run-1.json"
    cut.write_text('[{"step": "drain", "gaps": {"db-0": 4')
    wrong = tmp_path / "run-2.json"
    wrong.write_text(json.dumps([{"step": "drain", "gaps": {"db-0": "slow"}, "affected": ["db-0"]}]))
    runs, problems = collect([cut, wrong])
    assert runs == []
    assert [line.split(":")[0] for line in problems] == ["run 1", "run 2"]
    assert "is not JSON" in problems[0]
    assert "not an outage" in problems[1]


def test_each_run_is_the_members_module_alone_inside_the_sandbox() -> None:
    found = command("python3")
    assert found[:4] == ["python3", "-m", "testbed.real.sandbox", "--"]
    assert found[4:] == ["python3", "-m", "pytest", "-m", "installed", FOLDER, "-p", "no:cacheprovider", "-q"]


def test_the_members_steps_are_a_folder_of_files_one_per_step_in_their_order() -> None:
    """pytest runs a folder's files in name order: the numbers keep the steps in the order they build on."""
    folder = Path(__file__).resolve().parents[2] / FOLDER
    steps = sorted(path.name for path in folder.glob("test_*.py"))
    assert steps[0] == "test_01_bring_up.py"
    assert steps[-1] == "test_15_deletion.py"
    assert [int(name.split("_")[1]) for name in steps] == list(range(1, len(steps) + 1))


def test_an_outage_reads_back_as_the_one_class_the_installed_tier_writes() -> None:
    """One ``Outage`` (``testbed/faults/outages.py``): the installed tier's writers measure it and its conftest
    writes it; read back, it is equal and prints the tier's row."""
    item = json.loads(json.dumps(dataclasses.asdict(drain(4.0, 2.0))))
    assert Outage.from_json(item) == drain(4.0, 2.0)
    assert Outage.from_json(item).row() == "| drain | 2 | 3.0 | 4.0 | 0.2 | 0.1 |"


def test_the_run_file_is_named_by_the_variable_the_installed_conftest_reads() -> None:
    conftest = Path(__file__).resolve().parents[1] / "installed" / "conftest.py"
    assert f'"{OUTAGES_ENV}"' in conftest.read_text()
