"""Two ways to start the built image's entrypoint: as a container, or from its filesystem with chroot.

Each gives the same handle: is it alive, what the probe finds (``checks.PROBE``),
its output, and stop.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Protocol

from .builders import Builder, ImageConfig
from .checks import PROBE, WRITES
from .chroot import Launch, command, rootfs_user


class StartError(Exception):
    """The runtime could not start the image at all (as opposed to a service that fails)."""


class Running(Protocol):
    how: str

    def alive(self) -> bool: ...
    def probe(self) -> dict[str, Any]: ...
    def output(self) -> str: ...
    def stop(self) -> None: ...


def _probe_result(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    if done.returncode != 0:
        return {"error": done.stderr.strip()}
    report: dict[str, Any] = json.loads(done.stdout)
    return report


class Container:
    """``<builder> run`` of the image, read-only root, on the host's loopback."""

    def __init__(self, builder: Builder, image: str, port: int) -> None:
        self.builder = builder
        self.name = f"sharddb-image-check-{os.getpid()}"
        self.how = f"a {builder.name} container"
        done = subprocess.run(builder.run(image, self.name, port), capture_output=True, text=True, check=False)
        if done.returncode != 0:
            subprocess.run(builder.remove(self.name), capture_output=True, check=False)
            lines = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()
            raise StartError(lines[-1])

    def alive(self) -> bool:
        inspect = [self.builder.name, "inspect", "--format", "{{.State.Running}}", self.name]
        done = subprocess.run(inspect, capture_output=True, text=True, check=False)
        return done.stdout.strip() == "true"

    def probe(self) -> dict[str, Any]:
        run = self.builder.exec(self.name, ["python", "-c", PROBE, "/proc/1", "/", *WRITES])
        return _probe_result(subprocess.run(run, capture_output=True, text=True, check=False))

    def output(self) -> str:
        done = subprocess.run(self.builder.logs(self.name), capture_output=True, text=True, check=False)
        return done.stdout + done.stderr

    def stop(self) -> None:
        subprocess.run(self.builder.remove(self.name), capture_output=True, check=False)


class Chroot:
    """The image's filesystem, unpacked, served by its entrypoint under chroot (see ``chroot``)."""

    def __init__(self, builder: Builder, image: str, config: ImageConfig, port: int, repo: Path) -> None:
        unshare = shutil.which("unshare")
        if os.geteuid() != 0 or unshare is None:
            raise StartError("running the image's filesystem needs root and unshare (util-linux)")
        self.builder = builder
        self.folder = Path(tempfile.mkdtemp(prefix="sharddb-image-"))
        self.container: str | None = None
        self.how = "its filesystem under chroot (no container runtime)"
        self.log = (self.folder / "service.log").open("w+")
        try:
            self.root = self._unpack(image)
            uid, gid = rootfs_user(self.root, config.user)
        except (OSError, ValueError, subprocess.CalledProcessError) as error:
            self._clean()
            raise StartError(f"could not unpack {image}: {error}") from None
        env = {**config.environment, "SHARDDB_HOST": "127.0.0.1", "SHARDDB_PORT": str(port)}
        launch = Launch(str(self.root), uid, gid, config.workdir, env, config.command)
        self.process = subprocess.Popen(
            command(launch, unshare), cwd=repo, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def _unpack(self, image: str) -> Path:
        """buildah mounts a working container; docker and podman export a created one into our folder."""
        created = subprocess.run(self.builder.create(image), capture_output=True, text=True, check=True)
        self.container = created.stdout.strip().splitlines()[-1]
        if self.builder.name == "buildah":
            mounted = subprocess.run(self.builder.export(self.container), capture_output=True, text=True, check=True)
            return Path(mounted.stdout.strip())
        root = self.folder / "rootfs"
        root.mkdir()
        export = subprocess.Popen(self.builder.export(self.container), stdout=subprocess.PIPE)
        untar = subprocess.run(["tar", "-x", "-C", str(root)], stdin=export.stdout, check=False)
        if export.wait() != 0 or untar.returncode != 0:
            raise OSError(f"{self.builder.name} export or tar failed")
        return root

    def alive(self) -> bool:
        return self.process.poll() is None

    def probe(self) -> dict[str, Any]:
        proc = f"/proc/{self.process.pid}"
        run = [sys.executable, "-c", PROBE, proc, f"{proc}/root", *WRITES]
        return _probe_result(subprocess.run(run, capture_output=True, text=True, check=False))

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._clean()

    def _clean(self) -> None:
        self.log.close()
        if self.container is not None:
            subprocess.run(self.builder.discard(self.container), capture_output=True, check=False)
        shutil.rmtree(self.folder, ignore_errors=True)
