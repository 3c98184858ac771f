"""Files some tests need from outside the repository, looked for once per run.

A missing file fails every test that needs it, never skips it; but only the first
failure carries the whole explanation, and the others point back to it, so a run
prints how to provide the file once (and tries a slow download once), however many
tests need it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Generic, NoReturn, TypeVar

import pytest

T = TypeVar("T")


class Prerequisite(Generic[T]):
    """``find`` runs on first use; its ``missing`` exception's message becomes the failure."""

    def __init__(self, what: str, find: Callable[[], T], missing: type[Exception]) -> None:
        self.what = what
        self._find = find
        self._missing = missing
        self._looked = False
        self._value: T | None = None
        self._problem: str | None = None
        self._told = False

    def get(self) -> T:
        """The found value, or a failure: the full explanation the first time, a pointer to it after."""
        if not self._looked:
            self._looked = True
            try:
                self._value = self._find()
            except self._missing as error:
                self._problem = str(error)
        if self._problem is not None:
            self._fail(self._problem)
        assert self._value is not None
        return self._value

    def _fail(self, problem: str) -> NoReturn:
        if self._told:
            pytest.fail(f"missing: {self.what} (how to provide: see this run's first failure about it)", pytrace=False)
        self._told = True
        pytest.fail(problem, pytrace=False)


AuditHook = Callable[[str, tuple[object, ...]], None]
READS = frozenset({"open", "os.listdir", "os.scandir"})


def refuse_reads_under(folder: Path) -> AuditHook:
    """An audit hook (``sys.addaudithook``) under which reading anything in ``folder`` is a PermissionError.

    The fast tier installs it for ``shared/`` beside the repository, so a test that reads it
    without the ``shared`` marker fails wherever it runs, not only in a bare clone.
    """
    prefixes = {os.path.abspath(folder) + os.sep, os.path.realpath(folder) + os.sep}
    names = {folder.name, os.path.basename(os.path.realpath(folder))}

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event not in READS or not args or not isinstance(args[0], str | bytes | os.PathLike):
            return
        text = os.fsdecode(args[0])
        if not any(name in text for name in names):
            return  # the common case, decided without a system call
        full = os.path.abspath(text)
        if any((path + os.sep).startswith(prefix) for path in (full, os.path.realpath(full)) for prefix in prefixes):
            raise PermissionError(
                f"{text} is beside the repository: the fast tier never reads it (mark the test `shared`)"
            )

    return hook
