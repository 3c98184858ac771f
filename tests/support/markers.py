"""The tier markers, set one way: each tier folder's conftest marks every test under it.

A tier is where its tests live (``tests/cluster/``, ``tests/e2e/``, ``tests/data/``,
``tests/installed/``), so ``pytest -m cluster`` and ``pytest tests/cluster`` select the same
tests, and a test module never sets its tier itself. The markers that say what a test needs
(``http``, ``slow``, ``recorded``, ``shared``) stay on the module or the test that needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def mark_folder(conftest: str, mark: pytest.MarkDecorator) -> Callable[[list[pytest.Item]], None]:
    """A ``pytest_collection_modifyitems`` hook that gives ``mark`` to every test in the folder of ``conftest``."""
    folder = Path(conftest).resolve().parent

    def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
        for item in items:
            if item.path.resolve().is_relative_to(folder):
                item.add_marker(mark)

    return pytest_collection_modifyitems
