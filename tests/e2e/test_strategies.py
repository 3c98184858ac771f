"""The production overlay (HTTPS, bearer token, caBundle) and server-side apply, each on a stack of its own."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from testbed.stack import Instance, Stack, StackOptions

from ..support.kube import Kube
from ..support.sharddbs import ShardDBs
from .conftest import RESYNC_SECONDS, new_namespace, start_stack

NAME = "prod"


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(StackOptions(overlay="metacontroller/overlays/production", tls=True), id="production-overlay"),
        pytest.param(StackOptions(instances=(Instance(apply_strategy="server-side-apply"),)), id="server-side-apply"),
    ],
)
def other_stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    options: StackOptions = request.param
    options.resync_seconds = RESYNC_SECONDS
    running = start_stack(options)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def other(other_stack: Stack, request: pytest.FixtureRequest) -> Iterator[ShardDBs]:
    plane = other_stack.control_plane
    kube = Kube(plane.url, plane.token, plane.ca_file, plane.kubeconfig)
    try:
        yield ShardDBs(kube, new_namespace(kube, request))
    finally:
        kube.close()


def test_a_sharddb_lives_and_dies_with_nothing_written_while_idle(other_stack: Stack, other: ShardDBs) -> None:
    other.create(NAME)
    other.available(NAME)
    time.sleep(3)
    mark, calls = other_stack.audit.mark(), other_stack.hook_calls()
    time.sleep(11)
    assert other_stack.hook_calls() > calls
    assert [str(w) for w in other_stack.metacontroller_writes(mark, namespace=other.namespace, ok=False)] == []
    other.delete(NAME)
    other.gone(NAME)
    assert len(other.claims()) == 3
