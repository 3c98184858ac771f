"""Who may import whom: only the tests import ``tests``, no import runs back up the tree, no test imports a test.

What the tests and the benchmarks share (the Metacontroller model, the stand-in
world, the loopback launcher, the control plane) lives in ``testbed/``. Imports
are read from the source with ``ast``, so one inside a function counts too. The
same reading holds the API server to one client (``testbed/real/apiclient.py``) and
kubectl to one wrapper (``testbed/real/kubectl.py``): a new copy of either fails here.
Inside ``tests/``, what two folders share lives in ``tests/support/``: no module imports
a test module, no conftest imports a conftest, and the tiers import none of each other.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("hooks", "bench", "tools", "testbed")


def imports(source: str, package: str, members: bool = False) -> Iterator[tuple[int, str]]:
    """Every module ``source`` imports, as (line, absolute name); ``package`` is where it sits, dotted.

    With ``members``, each name imported from a module counts too, as the submodule it may be
    (``from tests import x`` may import ``tests.x``)."""
    parts = package.split(".")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = parts[: len(parts) - node.level + 1] if node.level else []
            names = [node.module] if node.module else [alias.name for alias in node.names]
            if members and node.module:
                names += [f"{node.module}.{alias.name}" for alias in node.names]
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


# The hooks' edges: the HTTP service, the command line and the entry point that starts either. Everything else in
# ``hooks/`` is the decision (parse, observe, decide, render), reached from an edge through ``hooks.handler``.
EDGES = ("hooks.service", "hooks.cli", "hooks.__main__")
# What would tie the decision to HTTP: the web framework, the ASGI toolkit, the servers and the HTTP clients.
HTTP = ("fastapi", "starlette", "uvicorn", "httptools", "h11", "httpx", "requests", "urllib3", "http", "aiohttp")


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(f"{prefix}.") for prefix in prefixes)


def decision_modules() -> list[Path]:
    return sorted(path for path in (ROOT / "hooks").rglob("*.py") if not within(module_of(path), EDGES))


def test_the_decision_never_imports_the_service() -> None:
    """From the tree a reader sees where the decision ends: ``hooks/service/`` serves HTTP, ``hooks/cli/`` is the
    command line, everything else in ``hooks/`` decides and renders.

    Only the entry point (``__main__``) starts an edge.
    """
    decision = decision_modules()
    assert decision
    assert {module_of(path) for path in decision} >= {"hooks.handler", "hooks.lifecycle.gates", "hooks.lifecycle.grace"}
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in decision
        for line, name in imports(path.read_text(), package_of(path))
        if within(name, EDGES)
    ]
    assert not found, "the decision imports an edge (the service, the command line):\n" + "\n".join(found)


def test_the_decision_imports_no_http_framework() -> None:
    """HTTP is the service's: the decision answers bytes with a dict and raises typed errors, whose status the edge
    chooses (``hooks/service/refusals.py``)."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in decision_modules()
        for line, name in imports(path.read_text(), package_of(path))
        if within(name, HTTP)
    ]
    assert not found, "the decision imports HTTP:\n" + "\n".join(found)
    service = [name for path in (ROOT / "hooks" / "service").rglob("*.py") for _, name in imports(path.read_text(), "")]
    assert any(within(name, HTTP) for name in service), "the check no longer sees the service's own HTTP imports"


def test_the_two_edges_stand_side_by_side() -> None:
    """The command line never loads the HTTP service, nor the service the command line (nor its YAML)."""
    for edge, other in (("service", "hooks.cli"), ("cli", "hooks.service")):
        found = [
            f"{path.relative_to(ROOT)}:{line}: {name}"
            for path in sorted((ROOT / "hooks" / edge).rglob("*.py"))
            for line, name in imports(path.read_text(), package_of(path))
            if within(name, (other,))
        ]
        assert not found, f"hooks/{edge}/ imports {other}:\n" + "\n".join(found)


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
# The client of the API server and the kubectl wrapper import nothing of the testbed; every floor may use them.
TESTBED_BELOW = {"images": (), "models": (), "standins": (), "real": ("images",), "faults": ("real", "stack")}
EVERY_FLOOR = frozenset({"testbed.real.apiclient", "testbed.real.kubectl"})


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
        if name.startswith("testbed.") and name.split(".")[1] not in allowed and name not in EVERY_FLOOR
    ]
    assert not found, f"testbed/{folder}/ imports from a floor above it:\n" + "\n".join(found)


# --- one client of the API server, one kubectl ---------------------------------------------------------------

# Where every test, benchmark, tool and testbed module talks to the test API server from; nowhere else.
API_CLIENT = ROOT / "testbed" / "real" / "apiclient.py"
KUBECTL = ROOT / "testbed" / "real" / "kubectl.py"
SOURCES = ("testbed", "tests", "bench", "tools")
TLS_CONTEXTS = frozenset({"create_default_context", "SSLContext", "load_verify_locations"})


def sources() -> list[Path]:
    return sorted(path for package in SOURCES for path in (ROOT / package).rglob("*.py"))


def names_the_api_servers_ca(tree: ast.AST) -> bool:
    """The module handles the control plane's ``ca_file``: it means the API server when it opens a connection."""
    return any(
        (isinstance(node, ast.Attribute) and node.attr == "ca_file")
        or (isinstance(node, ast.Name) and node.id == "ca_file")
        or (isinstance(node, ast.arg) and node.arg == "ca_file")
        for node in ast.walk(tree)
    )


def own_connections(source: str) -> Iterator[int]:
    """Lines where a module that names the API server's CA sets up TLS or a bearer token itself.

    A connection to the API server needs both (its certificate is its own CA's, every client has a
    token), so a copy of the client cannot do without them; a module that only passes ``ca_file`` on
    to ``ApiClient`` does neither.
    """
    tree = ast.parse(source)
    if not names_the_api_servers_ca(tree):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            if called in TLS_CONTEXTS or any(keyword.arg in ("verify", "cafile") for keyword in node.keywords):
                yield node.lineno
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("Bearer "):
            yield node.lineno


def starts_with_kubectl(first: ast.expr) -> bool:
    """``"kubectl"``, a name for its path (``kubectl``, ``_kubectl``), or a call that finds it."""
    if isinstance(first, ast.Constant):
        return first.value == "kubectl"
    if isinstance(first, ast.Name):
        return "kubectl" in first.id
    if isinstance(first, ast.Call):
        called = first.func.attr if isinstance(first.func, ast.Attribute) else getattr(first.func, "id", "")
        return "kubectl" in called or any(isinstance(a, ast.Constant) and a.value == "kubectl" for a in first.args)
    return False


def kubectl_commands(source: str) -> Iterator[int]:
    """Lines with a command line that starts with kubectl (``["kubectl", …]``, ``[kubectl, …]``, ``[which(…), …]``);
    a list compared with another (a runbook's words) is no command."""
    tree = ast.parse(source)
    compared = {
        id(node) for compare in ast.walk(tree) if isinstance(compare, ast.Compare) for node in ast.walk(compare)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.List) and node.elts and id(node) not in compared and starts_with_kubectl(node.elts[0]):
            yield node.lineno


def test_only_the_api_client_connects_to_the_api_server() -> None:
    """``testbed/real/apiclient.py`` is the one client of the API server; a new copy fails here."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sources()
        if path != API_CLIENT
        for line in own_connections(path.read_text())
    ]
    assert not found, "these connect to the API server themselves; use testbed.real.apiclient:\n" + "\n".join(found)
    assert list(own_connections(API_CLIENT.read_text())), "the check no longer sees the client itself"


def test_only_the_wrapper_runs_kubectl() -> None:
    """``testbed/real/kubectl.py`` is the one place kubectl is started from; a new wrapper fails here."""
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sources()
        if path != KUBECTL
        for line in kubectl_commands(path.read_text())
    ]
    assert not found, "these run kubectl themselves; use testbed.real.kubectl:\n" + "\n".join(found)
    assert list(kubectl_commands(KUBECTL.read_text())), "the check no longer sees the wrapper itself"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # The copies there were, each its own client of the API server.
        (
            "def f(plane):\n"
            "    return httpx.Client(base_url=plane.url,\n"
            "        verify=ssl.create_default_context(cafile=str(plane.ca_file)))\n",
            [2, 3],
        ),
        ("def f(url, token, ca_file):\n    return {'Authorization': f'Bearer {token}'}\n", [2]),
        ("def f(ca_file):\n    return 'Bearer ' + token\n", [2]),
        ("def f(plane):\n    assert plane.ca_file\n    return httpx.get(plane.url, verify=False)\n", [3]),
        # Handing the CA on to the client, or TLS to another server altogether, is no copy.
        ("def f(url, token, ca_file):\n    return ApiClient(url, token, ca_file, timeout=30.0)\n", []),
        ("def f(pki):\n    return httpx.Client(verify=ssl.create_default_context(cafile=pki.ca))\n", []),
    ],
)
def test_the_connection_check_sees_a_copy_of_the_client(source: str, expected: list[int]) -> None:
    assert sorted(own_connections(source)) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("subprocess.run(['kubectl', f'--kubeconfig={k}', *args], check=False)\n", [1]),
        ("kubectl = shutil.which('kubectl')\nsubprocess.run([kubectl, 'kustomize', t])\n", [2]),
        ("subprocess.run([shutil.which('kubectl'), 'get', 'pods'])\n", [1]),
        ("subprocess.Popen(args=['kubectl', 'proxy'])\n", [1]),
        ("command = ['kubectl', 'get', what]\nsubprocess.run(command)\n", [1]),
        ("subprocess.run([_kubectl(), 'kustomize', str(target)])\n", [1]),
        ("Kubectl(kubeconfig).run('get', 'pods')\n", []),
        ("ok = words[:1] == ['kubectl']\n", []),
        ("subprocess.run(['go', 'env', 'GOVERSION'])\n", []),
    ],
)
def test_the_kubectl_check_sees_a_wrapper_of_its_own(source: str, expected: list[int]) -> None:
    assert list(kubectl_commands(source)) == expected


@pytest.mark.parametrize("module", sorted(EVERY_FLOOR))
def test_the_clients_every_floor_may_use_import_nothing_of_the_testbed(module: str) -> None:
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    found = [name for _, name in imports(path.read_text(), package_of(path)) if name.split(".")[0] in PACKAGES]
    assert not found, f"{module} imports {found}: it would pull a floor above into the stand-ins"


# --- the tests' own layout: no test imports a test, no conftest another -------------------------------------

TESTS = ROOT / "tests"
# The tiers that need a stack stand side by side: each takes what it shares from ``tests/support/``.
TIERS = ("cluster", "e2e", "data", "installed", "patroni")


def modules_named(source: str, package: str) -> Iterator[tuple[int, str]]:
    """As ``imports``, and each name imported from a package as the module it may be (``from tests import x``)."""
    return imports(source, package, members=True)


@cache
def imports_in_the_sources() -> tuple[tuple[Path, int, str], ...]:
    """Every module each source of ``SOURCES`` names, read once for the layout's checks."""
    return tuple(
        (path, line, name) for path in sources() for line, name in modules_named(path.read_text(), package_of(path))
    )


def is_test_module(name: str) -> bool:
    return name.rsplit(".", 1)[-1].startswith("test_")


def is_conftest(name: str) -> bool:
    return name.rsplit(".", 1)[-1] == "conftest"


def test_no_module_imports_a_test_module() -> None:
    """What two test modules share is a builder of ``tests/support/``, never one test module's own helpers."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path, line, name in imports_in_the_sources()
        if of_tests(name) and is_test_module(name)
    ]
    assert not found, "these import a test module; move what they share to tests/support/:\n" + "\n".join(found)


def test_no_conftest_imports_a_conftest_and_no_module_another_folders() -> None:
    """A conftest holds its folder's fixtures; what two folders share lives in ``tests/support/``.

    A test module may import its own folder's conftest (a tier's ``Report``, its resync period), no other.
    """
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path, line, name in imports_in_the_sources()
        if of_tests(name)
        and is_conftest(name)
        and (path.name == "conftest.py" or name.rsplit(".", 1)[0] != package_of(path))
    ]
    assert not found, "these import another folder's conftest, or a conftest imports one:\n" + "\n".join(found)


@pytest.mark.parametrize("tier", TIERS)
def test_a_tier_imports_no_other_tier(tier: str) -> None:
    others = {f"tests.{name}" for name in TIERS if name != tier}
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((TESTS / tier).rglob("*.py"))
        for line, name in imports(path.read_text(), package_of(path))
        if any(name == other or name.startswith(f"{other}.") for other in others)
    ]
    assert not found, f"tests/{tier}/ imports another tier; move what they share to tests/support/:\n" + "\n".join(
        found
    )


def test_the_support_package_imports_no_test_folder() -> None:
    """``tests/support/`` is imported by every folder and imports none of them (only itself)."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((TESTS / "support").rglob("*.py"))
        for line, name in imports(path.read_text(), package_of(path))
        if of_tests(name) and name != "tests.support" and not name.startswith("tests.support.")
    ]
    assert not found, "tests/support/ imports a test folder:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "package", "test_module", "conftest"),
    [
        ("from .test_lifecycle import snapshot", "tests.decision", ["tests.decision.test_lifecycle"], []),
        ("from ..decision.test_lifecycle import spec", "tests.docs", ["tests.decision.test_lifecycle"], []),
        ("from tests.shipped import test_budget", "tests.e2e", ["tests.shipped.test_budget"], []),
        ("from ..e2e.conftest import kube as kube", "tests.data", [], ["tests.e2e.conftest"]),
        ("from .conftest import Report", "tests.e2e", [], ["tests.e2e.conftest"]),
        ("from ..support.snapshots import spec", "tests.decision", [], []),
        ("from ..support import evidence", "tests.cluster", [], []),
        ("from tests.e2e import conftest", "tests.data", [], ["tests.e2e.conftest"]),
    ],
)
def test_the_layout_checks_see_test_modules_and_conftests(
    source: str, package: str, test_module: list[str], conftest: list[str]
) -> None:
    names = [name for _, name in modules_named(source, package)]
    assert [name for name in names if is_test_module(name)] == test_module
    assert [name for name in names if is_conftest(name)] == conftest


def hooks_graph(room: Callable[[str], str]) -> dict[str, set[str]]:
    """Who imports whom inside ``hooks/``, each module named as ``room`` names it; edges within a room dropped."""
    modules = {module_of(path): path for path in (ROOT / "hooks").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        here = room(module)
        graph.setdefault(here, set())
        for _, name in imports(path.read_text(), package_of(path), members=True):
            if name in modules and room(name) != here:
                graph[here].add(room(name))
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of nodes that reach each other (Tarjan's strongly connected components of more than one node)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def folder_of(module: str) -> str:
    """A module's room as the tree shows it: a folder of ``hooks/`` is one room, a file at its top is one."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_two_hooks_modules_import_each_other() -> None:
    """The pipeline has floors: a module imports only what stands below it, so none reaches itself again."""
    graph = hooks_graph(lambda module: module)
    assert len(graph) > 40
    assert circles(graph) == []


def test_no_two_hooks_folders_import_each_other() -> None:
    """A feature's folder (``replication/``, ``lifecycle/``, ``trouble/``) stands on one floor as a whole: nothing
    it imports imports it back, so no arrow runs back up between folders either."""
    graph = hooks_graph(folder_of)
    assert {"hooks.replication", "hooks.lifecycle", "hooks.trouble", "hooks.snapshot"} <= set(graph)
    assert circles(graph) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set(), "c": {"a", "b"}}, []),
    ],
)
def test_the_circle_check_sees_a_loop_of_any_length(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert circles(graph) == expected
