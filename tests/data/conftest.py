"""Fixtures of the data tier: the real stack on a real node, running the examples' databases and caches.

The stack is the end-to-end tier's (real control plane, controllers, scheduler,
Metacontroller and hooks) with a real kubelet, containerd, runc, CNI bridge,
kube-proxy, CoreDNS and local-path-provisioner in place of the node agent; see
``testbed/real/realnode.py``. The node lives in namespaces of its own
(``testbed/real/sandbox.py``), so this tier runs only inside them: ``make data``.
Outside them, or without root, it fails saying so; it is never skipped.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from testbed.real.audit import tally
from testbed.real.controlplane import ControlPlaneError, build_binaries
from testbed.stack import Stack, StackOptions

from ..support.kube import Kube
from ..support.markers import mark_folder
from ..support.sharddbs import ShardDBs
from ..support.stacks import assert_no_unmarked_deletions, inside_the_sandbox, on_the_terminal, summarize, watched
from ..support.stacks import kube as kube  # the admin's client, on this tier's stack
from .cluster import Cluster

RESYNC_SECONDS = 10
_namespaces = itertools.count(1)
_costs: list[tuple[str, int, Counter[str]]] = []
_reports: list[str] = []
Report = Callable[[str], None]

pytest_collection_modifyitems = mark_folder(__file__, pytest.mark.data)


@pytest.fixture(scope="session")
def stack(pytestconfig: pytest.Config) -> Iterator[Stack]:
    inside_the_sandbox("data", "the real node's")
    options = StackOptions(resync_seconds=RESYNC_SECONDS, real_node=True)
    running = Stack(options)
    try:
        # First builds take many minutes: their progress goes to the terminal, not into pytest's capture.
        with on_the_terminal(pytestconfig):
            build_binaries()
            running.start()
    except ControlPlaneError as error:
        pytest.fail(f"data tier: {error}", pytrace=False)
    assert running.node is not None
    _reports.append("node start: " + ", ".join(f"{k} {v:.1f} s" for k, v in running.node.timings.items()))
    yield from watched(pytestconfig, running)


@pytest.fixture(scope="module")
def namespace(stack: Stack, kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    """One namespace per module (a module follows one ShardDB through its life); its writes go to the summary.

    Its pods are then judged by the audit log, the real kubelet's deletions as the stand-in's are.
    """
    stem = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_").replace("_", "-")[:40]
    name = f"{stem}-{next(_namespaces)}-{os.getpid() % 1000}"
    response = kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert response.status_code == 201, response.text
    mark = stack.audit.mark()
    yield name
    writes = stack.metacontroller_writes(mark, namespace=name)
    _costs.append((request.module.__name__, len(writes), tally(writes)))
    assert_no_unmarked_deletions(stack, mark, name)


@pytest.fixture(scope="module")
def sharddbs(kube: Kube, namespace: str) -> ShardDBs:
    return ShardDBs(kube, namespace)


@pytest.fixture(scope="module")
def cluster(stack: Stack, kube: Kube, namespace: str) -> Cluster:
    return Cluster(stack, kube, namespace)


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Report:
    """A line for the session's summary: what a step took on the real node (times, writes)."""
    return lambda line: _reports.append(f"{request.node.name}: {line}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    summarize(terminalreporter, _costs, _reports, per="data-tier module", on="the real node")
