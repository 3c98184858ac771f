"""Fixtures of the Patroni tier: one real API server per session, the two images loaded into podman once,
and per image a shard whose members run in containers (``members.py``).

A missing podman, image or test stack fails the session saying how to get it; these tests are never skipped.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.images.toolkit import ImageBuildError
from testbed.images.workloads import POSTGRES_PATRONI
from testbed.real.controlplane import ControlPlane, ControlPlaneError, build_binaries, start_plane
from tools.image.patroni import RECIPE_NAME, PatroniImages, build_patroni_images

from ..support.kube import Kube
from ..support.markers import mark_folder
from ..support.stacks import on_the_terminal
from .members import Member, PodmanError, Shard, load, prepare, start_member, wait_for

PARENT = "orders"
# The recipe users build, then the same recipe made from Debian packages.
IMAGES = {"recipe": RECIPE_NAME, "debian": POSTGRES_PATRONI}
_count = itertools.count(1)

pytest_collection_modifyitems = mark_folder(__file__, pytest.mark.patroni)


@pytest.fixture(scope="session")
def control_plane(pytestconfig: pytest.Config) -> Iterator[ControlPlane]:
    problem = None
    try:
        with on_the_terminal(pytestconfig):  # a first build takes minutes: its progress goes to the terminal
            plane = start_plane(build_binaries())
    except ControlPlaneError as error:
        problem = str(error)
    if problem is not None:
        pytest.fail(f"patroni tier: {problem}", pytrace=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Iterator[Kube]:
    client = Kube(control_plane.url, control_plane.token, control_plane.ca_file, control_plane.kubeconfig)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def images(pytestconfig: pytest.Config) -> PatroniImages:
    """Both images' archives (built now if they are not cached: ``python -m tools.image.patroni``), in podman."""
    for program in ("podman", "runc"):
        if shutil.which(program) is None:
            pytest.fail(f"patroni tier: {program} is required on PATH: apt-get install podman runc", pytrace=False)
    problem = None
    try:
        with on_the_terminal(pytestconfig):
            built = build_patroni_images()
        for name, archive in built.names.items():
            load(archive, name)
    except (ImageBuildError, PodmanError) as error:
        problem = str(error)
    if problem is not None:
        pytest.fail(f"patroni tier: {problem}", pytrace=False)
    return built


def new_shard(kind: str, kube: Kube, control_plane: ControlPlane, folder: Path, strict: bool = False) -> Shard:
    """A namespace with the hooks' RBAC for one ShardDB of the ``kind`` of image (``IMAGES``), a token of its
    account and the rendered config."""
    namespace = f"patroni-{kind}-{next(_count)}-{os.getpid() % 1000}"
    response = kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    assert response.status_code == 201, response.text
    return prepare(kube, namespace, PARENT, control_plane.port, control_plane.ca_file, folder, IMAGES[kind], strict)


@pytest.fixture(scope="module", params=sorted(IMAGES, reverse=True))
def shard(
    request: pytest.FixtureRequest,
    images: PatroniImages,
    control_plane: ControlPlane,
    kube: Kube,
    tmp_path_factory: pytest.TempPathFactory,
) -> Shard:
    """A synchronous shard, per image; strict (as the hooks render ``strict: true``) for a module that sets
    ``STRICT = True``."""
    assert IMAGES[request.param] in images.names
    strict = bool(getattr(request.module, "STRICT", False))
    folder: Path = tmp_path_factory.mktemp(f"patroni-{'strict-' if strict else ''}{request.param}")
    return new_shard(request.param, kube, control_plane, folder, strict)


@pytest.fixture(scope="module")
def leader(request: pytest.FixtureRequest, shard: Shard) -> Iterator[Member]:
    """The shard's first member, started alone: the one that bootstraps the cluster; at full priority for a module
    that times its answers (``MEASURED = True``)."""
    member = start_member(shard, 0, measured=bool(getattr(request.module, "MEASURED", False)))
    try:
        yield member
    finally:
        member.remove()


@pytest.fixture(scope="module")
def standby(shard: Shard, leader: Member) -> Iterator[Member]:
    """A second member, started once the first leads."""
    wait_for(f"{leader.name} holds {shard.scope}-leader", lambda: shard.holder("leader") == leader.name, [leader])
    member = start_member(shard, 1)
    try:
        yield member
    finally:
        member.remove()
