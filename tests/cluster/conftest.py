"""Fixtures of the cluster tier: one real API server per session, a fresh namespace per test.

A missing Go or a failed build fails the session with the reason; these tests
are never skipped.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .apiserver import ControlPlane, ControlPlaneError, build_binaries
from .kube import Kube

ROOT = Path(__file__).resolve().parents[2]
CRD_NAME = "sharddbs.mygroup.example.com"
_namespaces = itertools.count(1)


def _start(bin_dir: Path, attempts: int = 2) -> ControlPlane:
    """Start etcd and kube-apiserver; a second try covers a free port taken in between."""
    for attempt in range(1, attempts + 1):
        plane = ControlPlane(bin_dir)
        try:
            plane.start()
        except ControlPlaneError:
            if attempt == attempts:
                raise
            continue
        return plane
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    if shutil.which("kubectl") is None:
        pytest.fail("cluster tier: kubectl is required on PATH (kustomize rendering and kubectl checks)", pytrace=False)
    problem = None
    try:
        plane = _start(build_binaries())
    except ControlPlaneError as error:
        problem = str(error)
    if problem is not None:
        pytest.fail(f"cluster tier: {problem}", pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Iterator[Kube]:
    """Admin access, with the ShardDB CRD installed from ``crds/`` and Established."""
    client = Kube(control_plane.url, control_plane.token, control_plane.ca_file, control_plane.kubeconfig)
    for args in (
        ("apply", "--server-side", "--field-manager=sharddb-tests", "-k", str(ROOT / "crds")),
        ("wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD_NAME}"),
    ):
        result = client.kubectl(*args)
        if result.returncode != 0:
            pytest.fail(f"cluster tier: kubectl {args[0]} of the CRD failed:\n{result.stderr}", pytrace=False)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def namespace(kube: Kube, request: pytest.FixtureRequest) -> str:
    """A namespace of its own for each test (left behind: the server is gone at session end)."""
    stem = request.node.name.split("[")[0].removeprefix("test_").replace("_", "-")[:40].strip("-")
    name = f"{stem}-{next(_namespaces)}-{os.getpid() % 1000}"
    response = kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert response.status_code == 201, response.text
    return name
