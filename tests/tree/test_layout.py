"""The tests' layout is their map: one folder per subject, each saying what it holds, and the guide's map is theirs.

``docs/development/tests.md`` carries the map between its ``map`` markers, generated from each
folder's docstring and the marker its conftest sets; ``python -m tests.tree.test_layout`` writes
it anew. A tier's marker is set one way, by its folder's conftest, so ``pytest -m cluster`` and
``pytest tests/cluster`` select the same tests. Every path of a test the guide names exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
GUIDE = ROOT / "docs" / "development" / "tests.md"
# The map's order: what the hooks do, what ships, what keeps it true, then the tiers on a real stack.
FOLDERS = (
    "decision",
    "service",
    "generated",
    "shipped",
    "docs",
    "tools",
    "testbed",
    "tree",
    "cluster",
    "e2e",
    "data",
    "installed",
    "patroni",
    "support",
)
TIERS = ("cluster", "e2e", "data", "installed", "patroni")
START = "<!-- map:start: generated from each folder's docstring (python -m tests.tree.test_layout) -->"
END = "<!-- map:end -->"


def docstring(folder: str) -> str:
    text = ast.get_docstring(ast.parse((TESTS / folder / "__init__.py").read_text())) or ""
    return " ".join(text.split())


def folder_marker(folder: str) -> str | None:
    """The marker the folder's conftest gives every test under it (``mark_folder(__file__, pytest.mark.X)``)."""
    conftest = TESTS / folder / "conftest.py"
    if not conftest.is_file():
        return None
    for node in ast.walk(ast.parse(conftest.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "mark_folder":
            mark = node.args[1]
            assert isinstance(mark, ast.Attribute), ast.dump(mark)
            return mark.attr
    return None


def the_map() -> str:
    rows = [
        f"| `tests/{folder}/` | {f'`{marker}`' if (marker := folder_marker(folder)) else ''} | {docstring(folder)} |"
        for folder in FOLDERS
    ]
    return "\n".join([START, "| folder | marker | what it holds |", "|---|---|---|", *rows, END])


def written_map() -> str:
    text = GUIDE.read_text()
    assert START in text, f"{GUIDE.relative_to(ROOT)} has no map: no line {START}"
    assert END in text, f"{GUIDE.relative_to(ROOT)} has no map's end: no line {END}"
    return text[text.index(START) : text.index(END) + len(END)]


def test_the_folders_are_the_map() -> None:
    found = sorted(path.name for path in TESTS.iterdir() if path.is_dir() and (path / "__init__.py").is_file())
    assert found == sorted(FOLDERS), "a folder of tests/ is missing from the map (FOLDERS), or the map names one gone"
    loose = sorted(path.name for path in TESTS.glob("*.py") if path.name not in ("__init__.py", "conftest.py"))
    assert not loose, f"modules at the top of tests/; each belongs in the folder of its subject: {loose}"
    strays = sorted(
        str(path.relative_to(TESTS)) for path in TESTS.rglob("*.py") if not (path.parent / "__init__.py").is_file()
    )
    assert not strays, f"test modules outside a package of tests/: {strays}"


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_folder_says_what_it_holds(folder: str) -> None:
    assert len(docstring(folder)) > 40, f"tests/{folder}/__init__.py needs a docstring saying what the folder holds"


def test_the_support_package_names_each_of_its_modules() -> None:
    """A newcomer reads ``tests/support/__init__.py`` to find a builder: each module is named there."""
    text = docstring("support")
    modules = sorted(path.stem for path in (TESTS / "support").glob("*.py") if path.stem != "__init__")
    unnamed = [name for name in modules if f"``{name}``" not in text]
    assert not unnamed, f"tests/support/__init__.py does not name: {unnamed}"


def test_the_guides_map_is_generated_from_the_folders() -> None:
    assert written_map() == the_map(), (
        f"the map in {GUIDE.relative_to(ROOT)} is stale; run python -m tests.tree.test_layout"
    )


@pytest.mark.parametrize("tier", TIERS)
def test_each_tier_folder_sets_its_own_marker_in_its_conftest(tier: str) -> None:
    assert folder_marker(tier) == tier


def test_no_test_module_sets_a_tier_marker_itself() -> None:
    """One way: a tier's marker comes from its folder's conftest, never from a module or a test."""
    tier_mark = re.compile(r"\bpytest\.mark\.(" + "|".join(TIERS) + r")\b")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if tier_mark.search(line)
    ]
    assert not found, "set a tier's marker by the folder a test is in, not in the module:\n" + "\n".join(found)


def named_test_paths() -> list[tuple[str, str]]:
    """(file, path) for every path under ``tests/`` the guide, the Makefile, the hooks, the tools and the testbed name.

    ``tests.md`` also names tests by their folder alone (``decision/test_lifecycle.py``).
    """
    files = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md", ROOT / "testbed" / "README.md"]
    files += [ROOT / "Makefile", ROOT / ".ci" / "run"]
    files += [*sorted((ROOT / "tools").rglob("*.py")), *sorted((ROOT / "testbed").rglob("*.py"))]
    files += [*sorted((ROOT / "bench").rglob("*.py")), *sorted((ROOT / "hooks").rglob("*.py"))]
    found = []
    for path in files:
        text = path.read_text()
        for match in re.finditer(r"(?<![\w/.])tests/[\w./-]*[\w/]", text):
            found.append((str(path.relative_to(ROOT)), match[0]))
        if path == GUIDE:
            for match in re.finditer(r"`((?:[a-z0-9_]+/)+test_\w+\.py)`", text):
                if not match[1].startswith("tests/"):
                    found.append((str(path.relative_to(ROOT)), f"tests/{match[1]}"))
    return found


def test_every_test_path_the_guide_names_exists() -> None:
    paths = named_test_paths()
    assert any(path == "tests/e2e/test_chaos.py" for _, path in paths), "the check no longer sees the paths named"
    missing = sorted({f"{where}: {path}" for where, path in paths if not (ROOT / path.split("::")[0]).exists()})
    assert not missing, "these name a path under tests/ that is not there:\n" + "\n".join(missing)


def write_map() -> None:
    """Write the map anew into ``docs/development/tests.md``."""
    text = GUIDE.read_text()
    GUIDE.write_text(text.replace(written_map(), the_map()))


if __name__ == "__main__":
    write_map()
