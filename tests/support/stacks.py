"""What the tiers on a real stack share: the stack's client and evidence, its namespaces' audit, the summary.

The end-to-end, data and installed tiers each start a stack of their own kind in their
conftest; these are the parts they have in common, so no conftest imports another's.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager

import pytest

from testbed.faults.invariants import unmarked_deletions
from testbed.real import sandbox
from testbed.stack import Stack

from . import evidence
from .kube import Kube


@pytest.fixture(scope="session")
def kube(stack: Stack) -> Iterator[Kube]:
    """The admin's client of the tier's stack (each tier's conftest defines ``stack``)."""
    plane = stack.control_plane
    client = Kube(plane.url, plane.token, plane.ca_file, plane.kubeconfig)
    try:
        yield client
    finally:
        client.close()


def on_the_terminal(pytestconfig: pytest.Config) -> AbstractContextManager[None]:
    """pytest's capture lifted: a first build's progress lines go to the terminal (it takes minutes)."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    return capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()


def inside_the_sandbox(tier: str, whose: str) -> None:
    """A tier on real nodes runs only inside ``whose`` own namespaces (``make <tier>``); elsewhere it fails."""
    if sandbox.inside():
        return
    try:
        sandbox.check_host()
    except sandbox.SandboxError as error:
        pytest.fail(f"{tier} tier: {error}", pytrace=False)
    pytest.fail(
        f"{tier} tier: runs only inside {whose} own namespaces: `make {tier}`, "
        f"or python -m testbed.real.sandbox -- python -m pytest -m {tier}",
        pytrace=False,
    )


def stack_source(stack: Stack) -> evidence.Source:
    """Where a started stack keeps its logs, and its objects read as the admin: a failing test's evidence."""
    plane = stack.control_plane
    return evidence.Source(plane.root, evidence.kubectl_dump(plane.kubeconfig), fixture="stack")


def watched(pytestconfig: pytest.Config, running: Stack) -> Iterator[Stack]:
    """The started stack for the session, its evidence kept for a failing test, stopped at the end."""
    try:
        with evidence.watched(pytestconfig, stack_source(running)):
            yield running
    finally:
        running.stop()


def assert_no_unmarked_deletions(stack: Stack, mark: int, namespace: str) -> None:
    """No pod of ``namespace`` deleted by a node after ``mark`` unless someone else marked it for deletion first."""
    found = unmarked_deletions(stack.audit.since(mark, namespace=namespace))
    assert not found, "a node deleted pods nobody marked for deletion:\n" + "\n".join(map(str, found))


def summarize(
    reporter: pytest.TerminalReporter,
    costs: list[tuple[str, int, Counter[str]]],
    reports: list[str],
    *,
    per: str,
    on: str,
) -> None:
    """The session's tables: Metacontroller's writes per ``per``, then what each step took ``on`` the stack."""
    if not costs:
        return
    reporter.section(f"Metacontroller writes per {per}")
    for name, total, kinds in costs:
        split = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
        reporter.write_line(f"{total:5d}  {name}  ({split})")
    if reports:
        reporter.section(f"What the steps took on {on}")
        for line in reports:
            reporter.write_line(line)
