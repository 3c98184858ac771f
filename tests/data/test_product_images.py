"""The product's images run in real containers: Metacontroller's as its own user, the hooks' under every name.

``testbed.images.product`` builds both archives (once; cached) as the cluster imports them.
podman loads each into a store of this module's own (vfs, under a temporary folder, never the
machine's) and runs it with runc (``testbed.real.machine.podman_runtime``: crun refuses hybrid cgroup layouts)
without a network, its cgroups under the sandbox's, so the run leaves nothing behind. No stack is started.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testbed.images import product
from testbed.images.product import HOOKS_NAMES, MC_BINARY, METACONTROLLER
from testbed.images.toolkit import ImageBuildError
from testbed.real import machine, sandbox
from tools.image.builders import ulimits_below_own

NONROOT = "uid=65532(nonroot) gid=65532(nonroot) groups=65532(nonroot)"


@dataclass(frozen=True)
class Podman:
    """podman on a store of its own (its run root apart: podman takes one of at most 50 characters)."""

    store: Path
    runroot: Path

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [
            "podman",
            "--runtime",
            machine.podman_runtime(),
            "--root",
            str(self.store / "root"),
            "--runroot",
            str(self.runroot),
            "--storage-driver",
            "vfs",
            "--cgroup-manager",
            "cgroupfs",
            "--events-backend",
            "file",
            *args,
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        if check and done.returncode != 0:
            pytest.fail(f"{' '.join(args[:2])} exited {done.returncode}:\n{done.stdout}{done.stderr}", pytrace=False)
        return done

    def run(
        self, image: str, *command: str, entrypoint: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """The image's command (or ``command``) once, as the image's user, with no network and a read-only root."""
        where = ["--cgroup-parent", f"/{sandbox.run_name()}/podman"] if sandbox.inside() else []
        options = [
            *where,
            *ulimits_below_own(),
            "--no-healthcheck",
            *(["--entrypoint", entrypoint] if entrypoint else []),
        ]
        return self("run", "--rm", "--network", "none", "--read-only", *options, image, *command, check=check)

    def load(self, archive: Path) -> list[str]:
        """The names the archive gave its image."""
        done = self("load", "--input", str(archive))
        return re.findall(r"Loaded image(?:\(s\))?: *(\S+)", done.stdout + done.stderr)


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Podman]:
    if shutil.which("podman") is None:
        pytest.fail("podman is required to run the product images: apt-get install podman", pytrace=False)
    store = tmp_path_factory.mktemp("podman")
    runroot = Path(tempfile.mkdtemp(prefix="sharddb-podman-", dir="/tmp"))
    try:
        yield Podman(store, runroot)
    finally:
        Podman(store, runroot)("system", "reset", "--force", check=False)
        shutil.rmtree(runroot, ignore_errors=True)


@pytest.fixture(scope="module")
def metacontroller(podman: Podman) -> str:
    try:
        image = product.metacontroller_image()
    except ImageBuildError as error:
        pytest.fail(f"Metacontroller's image: {error}", pytrace=False)
    loaded = podman.load(image.archive)
    assert METACONTROLLER in loaded, loaded
    return METACONTROLLER


@pytest.fixture(scope="module")
def hooks(podman: Podman) -> list[str]:
    try:
        image = product.hooks_image()
    except ImageBuildError as error:
        pytest.fail(f"the hooks image: {error}", pytrace=False)
    return podman.load(image.archive)


def test_metacontroller_runs_as_nonroot_65532(podman: Podman, metacontroller: str) -> None:
    assert podman.run(metacontroller, "id").stdout.strip() == NONROOT


def test_metacontroller_answers_its_help_with_the_release_manifests_flags(podman: Podman, metacontroller: str) -> None:
    done = podman.run(metacontroller, MC_BINARY, "--help", check=False)
    usage = done.stdout + done.stderr
    assert done.returncode == 0, usage
    for flag in ("zap-log-level", "discovery-interval"):  # what manifests/production/metacontroller.yaml passes
        assert f"-{flag} " in usage


def test_metacontroller_starts_as_its_cmd_and_says_its_version(podman: Podman, metacontroller: str) -> None:
    """Outside a cluster it stops for want of one, after logging the version its release build stamped."""
    done = podman.run(metacontroller, check=False)
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert f'"version":"{product.MC_VERSION}"' in output, output


def test_metacontroller_trusts_debians_ca_certificates(podman: Podman, metacontroller: str) -> None:
    assert podman.run(metacontroller, "test", "-s", "/etc/ssl/certs/ca-certificates.crt", check=False).returncode == 0


def test_the_hooks_image_loads_under_every_name_as_one_image(podman: Podman, hooks: list[str]) -> None:
    assert set(HOOKS_NAMES) <= set(hooks), hooks
    ids = {podman("image", "inspect", "--format", "{{.Id}}", name).stdout.strip() for name in HOOKS_NAMES}
    assert len(ids) == 1


def test_the_hooks_image_runs_as_65532(podman: Podman, hooks: list[str]) -> None:
    del hooks
    assert podman.run(HOOKS_NAMES[-1], "-u", entrypoint="id").stdout.strip() == "65532"
    assert podman.run(HOOKS_NAMES[-1], "-g", entrypoint="id").stdout.strip() == "65532"
