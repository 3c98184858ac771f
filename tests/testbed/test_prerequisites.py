"""A file from outside the repository is looked for once per run, and a miss is explained once."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.prerequisites import Prerequisite, refuse_reads_under


class MissingError(Exception):
    pass


def test_a_found_file_is_looked_for_once() -> None:
    calls: list[int] = []

    def find() -> str:
        calls.append(1)
        return "found"

    needed = Prerequisite("the file", find, MissingError)
    assert [needed.get(), needed.get(), needed.get()] == ["found"] * 3
    assert len(calls) == 1


def test_the_first_failure_explains_and_the_rest_point_back_to_it() -> None:
    calls: list[int] = []

    def find() -> str:
        calls.append(1)
        raise MissingError("the file is not at X:\n  put it at X, or set Y")

    needed = Prerequisite("the file", find, MissingError)
    with pytest.raises(pytest.fail.Exception) as first:
        needed.get()
    with pytest.raises(pytest.fail.Exception) as second:
        needed.get()
    with pytest.raises(pytest.fail.Exception) as third:
        needed.get()
    assert str(first.value) == "the file is not at X:\n  put it at X, or set Y"
    assert str(second.value) == str(third.value)
    assert str(second.value) == "missing: the file (how to provide: see this run's first failure about it)"
    assert "put it at X" not in str(second.value)
    assert len(calls) == 1, "a miss is not looked for (or downloaded) again"


def test_other_errors_are_not_taken_for_a_missing_file() -> None:
    def find() -> str:
        raise ValueError("a bug, not a missing file")

    with pytest.raises(ValueError, match="a bug"):
        Prerequisite("the file", find, MissingError).get()


def test_a_read_under_the_refused_folder_is_a_permission_error(tmp_path: Path) -> None:
    hook = refuse_reads_under(tmp_path / "shared")
    with pytest.raises(PermissionError, match="mark the test `shared`"):
        hook("open", (str(tmp_path / "shared" / "images" / "Dockerfile"), "r", 0))


def test_a_folder_listing_under_the_refused_folder_is_refused_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "shared").symlink_to(tmp_path / "store")
    hook = refuse_reads_under(tmp_path / "shared")
    with pytest.raises(PermissionError):
        hook("os.listdir", (str(tmp_path / "store"),))


def test_reads_elsewhere_pass_the_refusing_hook(tmp_path: Path) -> None:
    hook = refuse_reads_under(tmp_path / "shared")
    elsewhere = (tmp_path / "shared-not" / "x", tmp_path / "repo" / "shared.py", tmp_path / "sharedx")
    answers = [hook("open", (str(path), "r", 0)) for path in elsewhere]
    answers.append(hook("open", (3, "r", 0)))  # a file descriptor: nothing to judge
    answers.append(hook("compile", (b"x", str(tmp_path / "shared" / "x"))))  # not a read
    assert answers == [None] * 5
