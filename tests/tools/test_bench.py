"""A one-second smoke run of the benchmark, so ``make bench`` keeps working.

Numbers are never asserted: only that every case ran, answered without errors,
and that the ETag case was really served from ``304 Not Modified``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.report import END, PAGE, START, publish, table
from bench.run import FLOOR, HOOK, HOOK_304, KINDS, Config, Results, run
from bench.worlds import sync_request
from hooks import kinds

pytestmark = pytest.mark.http


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Results:
    config = Config(sizes=(3,), seconds=1.0, rounds=1, warmup_seconds=0.0)
    return run(config, folder=tmp_path_factory.mktemp("bench"))


def test_bench_requests_are_available_sharddbs_with_every_observed_object() -> None:
    request = json.loads(sync_request(3))
    assert request["parent"]["status"]["phase"] == "Available"
    single_copy = [kind for kind in kinds.CHILDREN if kind not in kinds.MEMBERS_ONLY]
    assert sorted(request["children"]) == sorted(kind.group_key for kind in single_copy)
    pods = request["related"]["Pod.v1"].values()
    assert sum(pod["metadata"]["labels"]["app.kubernetes.io/component"] == "db" for pod in pods) == 3
    assert all(pod["metadata"]["managedFields"] and pod["spec"]["volumes"] for pod in pods)


def test_bench_runs_every_case_with_answered_requests(smoke: Results) -> None:
    assert {(row.shards, row.kind) for row in smoke.rows} == {(3, kind) for kind in KINDS}
    for row in smoke.rows:
        assert row.requests > 0, row
        assert row.errors == 0, row
        assert row.rps > 0, row


def test_bench_hook_case_computes_answers(smoke: Results) -> None:
    outcomes = smoke.row(3, HOOK).outcomes
    assert outcomes.get("ok", 0) > 0
    assert "not_modified" not in outcomes


def test_bench_etag_case_is_served_from_304(smoke: Results) -> None:
    outcomes = smoke.row(3, HOOK_304).outcomes
    assert outcomes.get("not_modified", 0) > 0
    assert "ok" not in outcomes


def test_bench_floor_answers_as_many_bytes_as_the_hook(smoke: Results) -> None:
    assert smoke.row(3, FLOOR).answer_bytes == smoke.row(3, HOOK).answer_bytes


def test_bench_reports_memory_of_both_workers(smoke: Results) -> None:
    assert smoke.peak_rss_mb[HOOK] > 0
    assert smoke.peak_rss_mb[FLOOR] > 0


def test_bench_table_lists_every_size_and_the_ratio(smoke: Results) -> None:
    markdown = table(smoke)
    row = next(line for line in markdown.splitlines() if line.startswith("| 3 |"))
    assert row.count("|") == 12
    assert "hook/floor" in markdown


def test_bench_replaces_only_the_marked_section_of_the_performance_page(tmp_path: Path) -> None:
    (tmp_path / PAGE).parent.mkdir(parents=True)
    (tmp_path / PAGE).write_text(f"# Title\n\n{START}\nold table\n{END}\n\nMore text.\n")
    written = publish("new table\n", tmp_path)
    assert written == tmp_path / PAGE
    assert written.read_text() == f"# Title\n\n{START}\nnew table\n{END}\n\nMore text.\n"


def test_bench_without_page_markers_writes_results_beside_the_bench(tmp_path: Path) -> None:
    (tmp_path / "bench").mkdir()
    written = publish("new table\n", tmp_path)
    assert written == tmp_path / "bench" / "RESULTS.md"
    assert "new table" in written.read_text()
