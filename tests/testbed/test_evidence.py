"""A failing test on a real stack keeps the stack's evidence in a folder the run's summary names.

Each test runs a small pytest session (pytester) whose stack is a folder of logs
that the deliberately failing test writes to, as a real stack's parts would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.real.evidence import window
from tests.support import evidence

pytest_plugins = ("pytester",)

CONFTEST = """
import pytest
from tests.support import evidence

@pytest.fixture(scope="session")
def stack(pytestconfig, tmp_path_factory):
    root = tmp_path_factory.mktemp("stack")
    (root / "audit.log").write_text('{"verb": "create", "before": true}\\n')
    (root / "kube-scheduler.log").write_text("before the test\\n")
    (root / "hooks").mkdir()
    (root / "hooks" / "hooks-8080.err").write_text("")
    source = evidence.Source(root, lambda namespaces: f"namespaces: {namespaces}\\n", fixture="stack")
    with evidence.watched(pytestconfig, source):
        yield root

@pytest.fixture
def namespace(stack):
    return "scaling-1"
"""
TESTS = """
def test_passes(stack):  # first: the stack starts in its setup, so the failing test's window starts later
    pass

def test_fails(stack, namespace):
    with (stack / "audit.log").open("a") as log:
        log.write('{"verb": "delete", "during": true}\\n')
    with (stack / "kube-scheduler.log").open("a") as log:
        log.write("during the test\\n")
    (stack / "hooks" / "hooks-8080.err").write_text("a hook said this\\n")
    assert 1 == 2, "deliberately"

def test_fails_without_a_stack():
    assert 1 == 2
"""


@pytest.fixture
def session(pytester: pytest.Pytester) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_harness=TESTS)
    return pytester.runpytest("-p", "tests.support.evidence")


def kept(pytester: pytest.Pytester) -> list[Path]:
    return sorted(pytester.path.glob(f"{evidence.FOLDER}/*/*"))


def test_a_failing_test_on_a_stack_leaves_a_folder_the_summary_names(
    session: pytest.RunResult, pytester: pytest.Pytester
) -> None:
    session.assert_outcomes(passed=1, failed=2)
    (folder,) = kept(pytester)
    assert folder.name == "test_harness.test_fails"
    session.stdout.fnmatch_lines(
        ["*evidence kept on failure*", f"test_harness.py::test_fails: {folder.relative_to(pytester.path)}"]
    )


@pytest.mark.usefixtures("session")
def test_the_logs_kept_are_cut_to_the_failing_tests_window(pytester: pytest.Pytester) -> None:
    (folder,) = kept(pytester)
    assert (folder / "audit.log").read_text() == '{"verb": "delete", "during": true}\n'
    assert (folder / "kube-scheduler.log").read_text() == "during the test\n"
    assert (folder / "hooks-hooks-8080.err").read_text() == "a hook said this\n"


@pytest.mark.usefixtures("session")
def test_the_tests_namespace_and_its_failure_are_kept_beside_the_logs(pytester: pytest.Pytester) -> None:
    (folder,) = kept(pytester)
    assert (folder / "objects.yaml").read_text() == "namespaces: ['scaling-1']\n"
    assert "deliberately" in (folder / "failure.txt").read_text()


def test_a_window_longer_than_the_bound_keeps_its_last_whole_lines(tmp_path: Path) -> None:
    log = tmp_path / "kube-apiserver.log"
    log.write_text("old\n" + "".join(f"line {n}\n" for n in range(100)))
    said = window(log, 4, tmp_path / "kept.log", limit=30)
    assert (tmp_path / "kept.log").read_text() == "line 97\nline 98\nline 99\n"
    assert said.endswith(f"the first {len(log.read_bytes()) - 4 - 24} left out")


def test_only_the_newest_runs_stay(tmp_path: Path) -> None:
    for stamp in ("20261201-000000-1", "20261201-000001-1", "20261201-000002-1"):
        (tmp_path / stamp).mkdir()
    evidence.prune(tmp_path, newest=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["20261201-000001-1", "20261201-000002-1"]
