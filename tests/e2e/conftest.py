"""Fixtures of the end-to-end tier: one real stack per session, a namespace per test, the writes it cost.

The stack is the real etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and Metacontroller, our hooks as ``python -m hooks``, and the
node agent; see ``testbed/stack.py``. A missing Go or kubectl, or a failed
build, fails the session with the reason: these tests are never skipped.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from testbed.faults.invariants import unmarked_deletions
from testbed.real.audit import tally
from testbed.real.controlplane import ControlPlaneError, build_binaries
from testbed.stack import Stack, StackOptions
from testbed.standins.node import Behaviour

from ..support import evidence
from ..support.kube import Kube
from ..support.markers import mark_folder
from ..support.sharddbs import ShardDBs
from ..support.stacks import assert_no_unmarked_deletions, on_the_terminal, stack_source, summarize
from ..support.stacks import kube as kube  # the admin's client, on this tier's stack

# Resyncs every 5 s instead of the shipped 600 s, so a short idle window still sees several of them.
RESYNC_SECONDS = 5
_namespaces = itertools.count(1)
_costs: list[tuple[str, int, Counter[str]]] = []
_reports: list[str] = []
Report = Callable[[str], None]


pytest_collection_modifyitems = mark_folder(__file__, pytest.mark.e2e)


def start_stack(options: StackOptions) -> Stack:
    """A started stack, or the session fails saying why."""
    if shutil.which("kubectl") is None:
        pytest.fail("end-to-end tier: kubectl is required on PATH (kustomize rendering, CRDs)", pytrace=False)
    stack = Stack(options)
    try:
        stack.start()
    except ControlPlaneError as error:
        pytest.fail(f"end-to-end tier: {error}", pytrace=False)
    return stack


@pytest.fixture(scope="session")
def stack(pytestconfig: pytest.Config) -> Iterator[Stack]:
    try:
        # A first build takes many minutes: its progress lines go to the terminal, not into pytest's capture.
        with on_the_terminal(pytestconfig):
            build_binaries()
    except ControlPlaneError as error:
        pytest.fail(f"end-to-end tier: {error}", pytrace=False)
    running = start_stack(StackOptions(resync_seconds=RESYNC_SECONDS, behaviour=Behaviour()))
    try:
        with evidence.watched(pytestconfig, stack_source(running)):
            yield running
        # Each test's namespace is judged at its end; this judges what came after, over the whole log.
        found = unmarked_deletions(running.audit.writes())
        assert not found, "a node deleted pods nobody marked for deletion:\n" + "\n".join(map(str, found))
    finally:
        running.stop()


def new_namespace(kube: Kube, request: pytest.FixtureRequest) -> str:
    stem = request.node.name.split("[")[0].removeprefix("test_").replace("_", "-").replace(".", "-")[:40].strip("-")
    name = f"{stem}-{next(_namespaces)}-{os.getpid() % 1000}"
    response = kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert response.status_code == 201, response.text
    return name


@pytest.fixture
def namespace(stack: Stack, kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of its own; at the end, Metacontroller's writes in it are recorded for the session summary.

    Its pods are then judged by the audit log: none was deleted by the node unless marked first.
    """
    name = new_namespace(kube, request)
    mark = stack.audit.mark()
    yield name
    writes = stack.metacontroller_writes(mark, namespace=name)
    _costs.append((request.node.name, len(writes), tally(writes)))
    assert_no_unmarked_deletions(stack, mark, name)


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Report:
    """A line for the session's summary: what a step took on the real stack (times, writes)."""
    return lambda line: _reports.append(f"{request.node.name}: {line}")


@pytest.fixture
def sharddbs(kube: Kube, namespace: str) -> ShardDBs:
    return ShardDBs(kube, namespace)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    summarize(terminalreporter, _costs, _reports, per="end-to-end test", on="the real stack")
