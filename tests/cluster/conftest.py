"""Fixtures of the cluster tier: one real API server per session, a fresh namespace per test.

A missing Go or a failed build fails the session with the reason; these tests
are never skipped.
"""

from __future__ import annotations

import itertools
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.real.controlplane import ControlPlane, ControlPlaneError, build_binaries, start_plane

from ..support import evidence
from ..support.kube import Kube
from ..support.markers import mark_folder
from ..support.prerequisites import Prerequisite
from ..support.samples import SPEC
from ..support.stacks import on_the_terminal
from .loop import Loop
from .metacontroller_crds import CrdsNotFoundError, resolve

ROOT = Path(__file__).resolve().parents[2]
CRD_NAME = "sharddbs.mygroup.example.com"
METACONTROLLER_KINDS = ("compositecontrollers", "decoratorcontrollers", "controllerrevisions")
_namespaces = itertools.count(1)

pytest_collection_modifyitems = mark_folder(__file__, pytest.mark.cluster)

# Looked for (and downloaded, if it comes to that) once per run; a miss is explained once.
METACONTROLLER_CRDS = Prerequisite("Metacontroller's CRDs", resolve, CrdsNotFoundError)


@pytest.fixture
def metacontroller_crds() -> Path:
    """Metacontroller's CRD file (see ``metacontroller_crds.resolve``), or a failure saying how to provide it."""
    return METACONTROLLER_CRDS.get()


@pytest.fixture(scope="session")
def control_plane(pytestconfig: pytest.Config) -> Iterator[ControlPlane]:
    if shutil.which("kubectl") is None:
        pytest.fail("cluster tier: kubectl is required on PATH (kustomize rendering and kubectl checks)", pytrace=False)
    problem = None
    try:
        # A first build takes minutes: its progress lines go to the terminal, not into pytest's capture.
        with on_the_terminal(pytestconfig):
            binaries = build_binaries()
        plane = start_plane(binaries)
    except ControlPlaneError as error:
        problem = str(error)
    if problem is not None:
        pytest.fail(f"cluster tier: {problem}", pytrace=False)
    source = evidence.Source(plane.root, evidence.kubectl_dump(plane.kubeconfig), fixture="control_plane")
    try:
        with evidence.watched(pytestconfig, source):
            yield plane
    finally:
        plane.stop()


def _established(client: Kube, timeout: float = 60.0) -> bool:
    """Poll rather than ``kubectl wait``, which fails outright while the new CRD has no conditions yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conditions = client.get("CustomResourceDefinition", CRD_NAME).get("status", {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Iterator[Kube]:
    """Admin access, with the ShardDB CRD installed from ``crds/`` and Established."""
    client = Kube(control_plane.url, control_plane.token, control_plane.ca_file, control_plane.kubeconfig)
    result = client.kubectl("apply", "--server-side", "--field-manager=sharddb-tests", "-k", str(ROOT / "crds"))
    if result.returncode != 0:
        pytest.fail(f"cluster tier: kubectl apply of the CRD failed:\n{result.stderr}", pytrace=False)
    if not _established(client):
        status = client.get("CustomResourceDefinition", CRD_NAME).get("status")
        pytest.fail(f"cluster tier: the CRD is not Established after 60s: {status}", pytrace=False)
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


@pytest.fixture
def available(kube: Kube, namespace: str) -> Loop:
    """A ShardDB driven to Available through the real hook code and the real API server."""
    loop = Loop(kube, namespace)
    loop.create(SPEC)
    loop.until("Available")
    return loop


@pytest.fixture(scope="session")
def with_metacontroller(kube: Kube) -> Kube:
    """The API server with Metacontroller's CRDs installed and Established."""
    crds = METACONTROLLER_CRDS.get()
    result = kube.kubectl("apply", "--server-side", "--field-manager=sharddb-tests", "-f", str(crds))
    assert result.returncode == 0, result.stderr
    names = [f"crd/{plural}.metacontroller.k8s.io" for plural in METACONTROLLER_KINDS]
    result = kube.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
    assert result.returncode == 0, result.stderr
    return kube
