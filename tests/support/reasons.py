"""Every reason each condition can be given, read from ``hooks/lifecycle/``'s source: the status page's
tables and the metrics' closed set of Degraded reasons are both held to it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from hooks import lifecycle, names
from hooks.replication import shape

Reasons = dict[tuple[str, bool], set[str]]


class Reader:
    """Reads, from ``hooks/lifecycle/``, every reason each ``ConditionState(...)`` can be given.

    A reason written in a way this reader does not follow fails the test instead of being
    guessed: the reader must then learn it. A status that is not a literal (``bool(problems)``)
    counts as both, so the split by status is an upper bound; the set per condition is exact
    but for a phase passed as an argument, which counts as every phase its caller can set.
    """

    def __init__(self) -> None:
        package = Path(lifecycle.__file__).parent
        sources = sorted(package.rglob("*.py"))
        self.modules = [
            importlib.import_module(".".join(("hooks", "lifecycle", *path.relative_to(package).with_suffix("").parts)))
            for path in sources
        ]
        self.functions: dict[str, ast.FunctionDef] = {}
        for path in sources:
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.FunctionDef):
                    assert node.name not in self.functions, (
                        f"{node.name} twice in hooks/lifecycle/: the reader needs one"
                    )
                    self.functions[node.name] = node
        names_module = ast.parse(Path(names.__file__).read_text())
        self.foreign = {f"names.{node.name}": node for node in names_module.body if isinstance(node, ast.FunctionDef)}

    def reasons(self) -> Reasons:
        found: Reasons = {}
        for function in self.functions.values():
            for call in ast.walk(function):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "ConditionState":
                    kind, status, reason = call.args[:3]
                    assert isinstance(kind, ast.Constant), ast.unparse(call)
                    assert isinstance(kind.value, str), ast.unparse(call)
                    statuses = [bool(status.value)] if isinstance(status, ast.Constant) else [True, False]
                    for value in statuses:
                        found.setdefault((kind.value, value), set()).update(self.resolve(reason, function))
        return found

    def resolve(self, node: ast.expr, function: ast.FunctionDef) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.IfExp):
            return self.resolve(node.body, function) | self.resolve(node.orelse, function)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Phase":
            return {lifecycle.Phase[node.attr].value}
        if isinstance(node, ast.Attribute) and node.attr == "value":
            return self.resolve(node.value, function)
        if isinstance(node, ast.Attribute) and node.attr == "reason" and self.refusal(node.value, function):
            return set(shape.REFUSAL_REASONS)  # a replication refusal's: every reason ``decide`` gives
        if isinstance(node, ast.Name):
            return self.name(node.id, function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.functions:
            callee = self.functions[node.func.id]
            return set().union(
                *(self.resolve(r.value, callee) for r in ast.walk(callee) if isinstance(r, ast.Return) and r.value)
            )
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Subscript)
            and isinstance(node.value.value, ast.Name)
        ):
            return self.firsts(node.value.value, function)  # problems[0][0]: the first problem's reason
        raise AssertionError(f"cannot read the reason {ast.unparse(node)} (line {node.lineno})")

    @staticmethod
    def refusal(node: ast.expr, function: ast.FunctionDef) -> bool:
        """``node`` is a parameter annotated as a ``shape.Refusal``."""
        return isinstance(node, ast.Name) and any(
            a.arg == node.id and a.annotation is not None and "Refusal" in ast.unparse(a.annotation)
            for a in function.args.args
        )

    def name(self, name: str, function: ast.FunctionDef) -> set[str]:
        constants = {getattr(module, name, None) for module in self.modules} - {None}
        if name.isupper() and constants and all(isinstance(constant, str) for constant in constants):
            assert len(constants) == 1, f"{name} has two values in hooks/lifecycle/"
            return {str(constant) for constant in constants}
        assigned = [
            n.value
            for n in ast.walk(function)
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
        ]
        if assigned:
            return set().union(*(self.resolve(value, function) for value in assigned))
        parameters = [a.arg for a in function.args.args]
        assert name in parameters, f"cannot read {name} in {function.name}"
        return self.argument(function, parameters.index(name))

    def argument(self, function: ast.FunctionDef, index: int) -> set[str]:
        """What a parameter can hold: the argument at each call of the function."""
        found: set[str] = set()
        for caller in self.functions.values():
            for call in ast.walk(caller):
                if not (
                    isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == function.name
                ):
                    continue
                starred = [i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)]
                if starred and starred[0] <= index:
                    found |= self.unpacked(call.args[starred[0]], caller, index - starred[0])
                else:
                    found |= self.resolve(call.args[index], caller)
        return found

    def unpacked(self, star: ast.expr, caller: ast.FunctionDef, offset: int) -> set[str]:
        """``f(*x)`` with ``x = names.g(...)``: element ``offset`` of each tuple ``g`` returns."""
        assert isinstance(star, ast.Starred), ast.unparse(star)
        assert isinstance(star.value, ast.Name), ast.unparse(star)
        sources = [
            n.value
            for n in ast.walk(caller)
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == star.value.id for t in n.targets)
        ]
        found: set[str] = set()
        for source in sources:
            assert isinstance(source, ast.Call), ast.unparse(source)
            callee = self.foreign[ast.unparse(source.func)]
            for r in ast.walk(callee):
                if isinstance(r, ast.Return) and isinstance(r.value, ast.Tuple):
                    element = r.value.elts[offset]
                    assert isinstance(element, ast.Constant), ast.unparse(element)
                    assert isinstance(element.value, str), ast.unparse(element)
                    found.add(element.value)
        return found

    def firsts(self, name: ast.Name, function: ast.FunctionDef) -> set[str]:
        """The first element of each tuple appended to a list of problems, wherever the list is made."""
        found: set[str] = set()
        for value in (
            n.value
            for n in ast.walk(function)
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name.id for t in n.targets)
        ):
            called = [c.func.id for c in ast.walk(value) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]
            assert called, ast.unparse(value)
            for called_name in called:
                callee = self.functions[called_name]
                for append in ast.walk(callee):
                    if (
                        isinstance(append, ast.Call)
                        and isinstance(append.func, ast.Attribute)
                        and append.func.attr == "append"
                        and isinstance(append.args[0], ast.Tuple)
                    ):
                        found |= self.resolve(append.args[0].elts[0], callee)
        return found


EMITTED = Reader().reasons()


def emitted(condition: str) -> set[str]:
    return EMITTED.get((condition, True), set()) | EMITTED.get((condition, False), set())
