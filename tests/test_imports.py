"""Only the tests import ``tests``: the hooks, the benchmarks, the tools and the testbed stand on their own.

What the tests and the benchmarks share (the Metacontroller model, the stand-in
world, the loopback launcher, the control plane) lives in ``testbed/``. Imports
are read from the source with ``ast``, so one inside a function counts too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hooks", "bench", "tools", "testbed")


def imports(source: str, package: str) -> Iterator[tuple[int, str]]:
    """Every module ``source`` imports, as (line, absolute name); ``package`` is where it sits, dotted."""
    parts = package.split(".")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = parts[: len(parts) - node.level + 1] if node.level else []
            names = [node.module] if node.module else [alias.name for alias in node.names]
            yield from ((node.lineno, ".".join([*base, name])) for name in names)


def of_tests(name: str) -> bool:
    return name == "tests" or name.startswith("tests.")


def package_of(path: Path) -> str:
    return ".".join(path.parent.relative_to(ROOT).parts)


@pytest.mark.parametrize("package", PACKAGES)
def test_package_does_not_import_the_tests(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no Python files under {package}/"
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        for line, name in imports(path.read_text(), package_of(path))
        if of_tests(name)
    ]
    assert not found, f"{package}/ imports the tests; move what it needs to testbed/:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "package", "expected"),
    [
        ("from tests.world import World", "bench", ["tests.world"]),
        ("import tests.server as server", "bench", ["tests.server"]),
        ("from tests import world", "bench", ["tests"]),
        ("def main() -> None:\n    from tests.cluster import apiserver\n", "tools", ["tests.cluster"]),
        ("from ..world import World", "tests.cluster", ["tests.world"]),
        ("from . import kube", "tests.cluster", ["tests.cluster.kube"]),
        ("from testbed.models.world import World", "bench", []),
        ("from .source import Source", "bench", []),
    ],
)
def test_the_check_sees_absolute_relative_and_nested_imports(source: str, package: str, expected: list[str]) -> None:
    assert [name for _, name in imports(source, package) if of_tests(name)] == expected


def test_the_decision_never_imports_the_service() -> None:
    """From the tree a reader sees where the decision ends: ``hooks/*.py`` decide and render, ``hooks/service/`` serves.

    Only the entry point (``__main__``) starts the service.
    """
    decision = sorted(path for path in (ROOT / "hooks").glob("*.py") if path.name != "__main__.py")
    assert decision
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in decision
        for line, name in imports(path.read_text(), "hooks")
        if name == "hooks.service" or name.startswith("hooks.service.")
    ]
    assert not found, "the decision imports the service:\n" + "\n".join(found)


# The floors of the tree, bottom up: each imports only from the floors below it (or the standard library and
# its dependencies).
BELOW = {"hooks": (), "testbed": ("hooks",), "bench": ("hooks", "testbed"), "tools": ("hooks", "testbed")}


@pytest.mark.parametrize("package", ["hooks", "testbed"])
def test_no_import_runs_back_up_the_tree(package: str) -> None:
    above = [name for name in PACKAGES if name != package and name not in BELOW[package]]
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, name in imports(path.read_text(), package_of(path))
        if name.split(".")[0] in above
    ]
    assert not found, f"{package}/ imports from a floor above it:\n" + "\n".join(found)


# The testbed's own floors: images, models and stand-ins stand alone; the real stack runs the images;
# the fault tooling works on an assembled stack (``testbed/stack.py``, which imports every other folder).
TESTBED_BELOW = {"images": (), "models": (), "standins": (), "real": ("images",), "faults": ("real", "stack")}


def test_every_testbed_folder_is_a_package_that_says_what_it_holds() -> None:
    folders = sorted({path.parent for path in (ROOT / "testbed").rglob("*.py")} - {ROOT / "testbed"})
    assert sorted(path.name for path in folders) == sorted(TESTBED_BELOW)
    for folder in folders:
        init = folder / "__init__.py"
        assert init.is_file(), f"{folder.relative_to(ROOT)} has no __init__.py"
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init.relative_to(ROOT)} has no docstring"


@pytest.mark.parametrize("folder", sorted(TESTBED_BELOW))
def test_no_testbed_import_runs_back_up_its_floors(folder: str) -> None:
    allowed = {folder, *TESTBED_BELOW[folder]}
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((ROOT / "testbed" / folder).rglob("*.py"))
        for line, name in imports(path.read_text(), package_of(path))
        if name.startswith("testbed.") and name.split(".")[1] not in allowed
    ]
    assert not found, f"testbed/{folder}/ imports from a floor above it:\n" + "\n".join(found)
