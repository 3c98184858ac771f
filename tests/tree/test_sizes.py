"""The hooks read in small pieces: no module over 400 lines, no function over 60.

A long function is a set of steps without names; a long module, several concepts in one room.
Both are read from the source with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE_LINES = 400
FUNCTION_LINES = 60


def hooks_sources() -> list[Path]:
    return sorted((ROOT / "hooks").rglob("*.py"))


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """Each function (or method) of ``source`` longer than ``limit`` lines, its decorators and docstring included."""
    return [
        (node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > limit
    ]


def test_no_hooks_module_is_over_400_lines() -> None:
    sources = hooks_sources()
    assert len(sources) > 40
    long = {
        str(path.relative_to(ROOT)): n for path in sources if (n := len(path.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}, "split these modules by concept"


def test_no_hooks_function_is_over_60_lines() -> None:
    long = {
        f"{path.relative_to(ROOT)}:{name}": lines
        for path in hooks_sources()
        for name, lines in long_functions(path.read_text(), FUNCTION_LINES)
    }
    assert long == {}, "name the steps of these functions"


def test_the_function_check_counts_a_functions_lines() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(3))
    assert long_functions(f"def f():\n{body}\n", 3) == [("f", 4)]
    assert long_functions(f"def f():\n{body}\n", 4) == []
