"""Files some tests need from outside the repository, looked for once per run.

A missing file fails every test that needs it, never skips it; but only the first
failure carries the whole explanation, and the others point back to it, so a run
prints how to provide the file once (and tries a slow download once), however many
tests need it.
"""

from __future__ import annotations

from collections.abc import Callable
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
