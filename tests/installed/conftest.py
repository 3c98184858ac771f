"""Fixtures of the installed-cluster tier: the product as users install it, on three real nodes.

The cluster is ``testbed/real/cluster.py``'s: the real control plane, controllers and
scheduler, three nodes each with its own containerd, kubelet, kube-proxy and
policy agent, CoreDNS and two StorageClasses. Nothing of ShardDB runs on the host:
Metacontroller is the image built from its source, installed from its release
manifests; the hooks are the image ``make image`` builds, installed by the
overlays; both as pods, through the README's deploy steps (``steps.py``). Like the
data tier, it runs only inside its own namespaces (``make installed``), and fails
saying so elsewhere; it is never skipped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.faults.outages import HEADER, Outage
from testbed.images import product, workloads
from testbed.images.toolkit import ImageBuildError
from testbed.real.controlplane import ControlPlaneError, build_binaries
from testbed.stack import Stack, StackOptions

from ..support.markers import mark_folder
from ..support.stacks import inside_the_sandbox, on_the_terminal, watched
from ..support.stacks import kube as kube  # the admin's client, on this tier's cluster
from .installs import Install
from .invariants import Record as Record  # this folder's modules take both from here,
from .invariants import Report as Report  # a subfolder's from invariants.py (each imports its own conftest only)

NODES = 3


pytest_collection_modifyitems = mark_folder(__file__, pytest.mark.installed)


@pytest.fixture(scope="session")
def stack(pytestconfig: pytest.Config) -> Iterator[Stack]:
    inside_the_sandbox("installed", "the nodes'")
    try:
        # First builds take many minutes: their progress goes to the terminal, not into pytest's capture.
        with on_the_terminal(pytestconfig):
            build_binaries()
            archives = product.build_product_images()
            # The Patroni tier's Debian-made image, for ShardDBs with members: one cached archive for both tiers.
            patroni = workloads.debian_archive(workloads.POSTGRES_PATRONI_IMAGE)
    except (ControlPlaneError, ImageBuildError) as error:
        pytest.fail(f"installed tier: {error}", pytrace=False)
    running = Stack(
        StackOptions(
            real_node=True,
            nodes=NODES,
            installed=True,
            node_images=(*archives.archives, patroni),
            mirrored_images=archives.hooks.names,
        )
    )
    try:
        running.start()
    except ControlPlaneError as error:
        pytest.fail(f"installed tier: {error}", pytrace=False)
    yield from watched(pytestconfig, running)


@pytest.fixture(scope="session")
def metacontroller_manifests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``manifests/production`` of Metacontroller's source, the release manifests its README installs."""
    archive = product.metacontroller_source()
    target = tmp_path_factory.mktemp("metacontroller-source")
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    found = sorted(target.glob("*/manifests/production/kustomization.yaml"))
    if not found:
        pytest.fail(f"installed tier: no manifests/production in {archive}", pytrace=False)
    return found[0].parent


@pytest.fixture(scope="session")
def production(
    stack: Stack, metacontroller_manifests: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Install]:
    """The production overlay, installed once for every module that reads or operates it."""
    installed = Install(stack, "production", tmp_path_factory.mktemp("production"), metacontroller_manifests)
    installed.install()
    yield installed
    installed.uninstall()


_reports: list[str] = []
_outages: list[Outage] = []


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Report:
    """A line for the session's summary: what an operation on the installed product took."""
    return lambda line: _reports.append(f"{request.node.name}: {line}")


@pytest.fixture
def outages() -> Record:
    """A row of the session's table of client-visible outages, one per step the writers ran through."""
    return _outages.append


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _reports:
        terminalreporter.section("the installed product on three real nodes")
        for line in _reports:
            terminalreporter.write_line(line)
    if _outages:
        terminalreporter.section("client-visible outage per step (longest gap between acknowledged writes)")
        terminalreporter.write_line(HEADER)
        for outage in _outages:
            terminalreporter.write_line(outage.row())
    if path := os.environ.get("SHARDDB_OUTAGES_JSON"):
        # make bench-ha repeats the session and reads each one's outages back from this file.
        Path(path).write_text(json.dumps([dataclasses.asdict(outage) for outage in _outages], indent=1) + "\n")
