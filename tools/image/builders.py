"""The image builders ``make image`` can drive (docker, podman, buildah), as command lines.

Only argument lists live here, so what each builder is asked to do can be read
(and tested) without one installed; ``__main__`` runs them.
"""

from __future__ import annotations

import json
import resource
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

NAMES = ("docker", "podman", "buildah")
SECRET_ID = "pip-ca"  # the Dockerfile mounts it for its pip step only


class NoBuilderError(Exception):
    """No usable builder; the message says how to get one."""


@dataclass(frozen=True)
class ImageConfig:
    """What a runtime reads from an image to start it."""

    user: str
    env: tuple[str, ...]
    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...]
    workdir: str

    @classmethod
    def from_json(cls, text: str) -> ImageConfig:
        """Docker's ``.Config`` or OCI's ``config`` (same keys)."""
        raw = json.loads(text) or {}
        return cls(
            user=raw.get("User") or "",
            env=tuple(raw.get("Env") or ()),
            entrypoint=tuple(raw.get("Entrypoint") or ()),
            cmd=tuple(raw.get("Cmd") or ()),
            workdir=raw.get("WorkingDir") or "/",
        )

    @property
    def environment(self) -> dict[str, str]:
        return dict(item.split("=", 1) for item in self.env if "=" in item)

    @property
    def command(self) -> list[str]:
        return [*self.entrypoint, *self.cmd]


@dataclass(frozen=True)
class Builder:
    """One builder's commands; ``run_args`` are extra ``run`` options (``IMAGE_RUN_ARGS``).

    ``runtime`` is podman's OCI runtime for ``run``: runc where it is installed, since podman's
    default crun refuses hybrid cgroup layouts (``testbed.real.machine.podman_runtime``).
    """

    name: str
    run_args: tuple[str, ...] = field(default=())
    runtime: str | None = None

    @property
    def runs_containers(self) -> bool:
        """buildah builds images but does not serve them: its images are run from their filesystem."""
        return self.name != "buildah"

    def build(self, tag: str, base: str, context: Path, ca_bundle: Path | None) -> list[str]:
        """Build the Dockerfile in ``context``; the CA bundle goes in as a secret, never as a file of the image."""
        command = [self.name, "build", "--build-arg", f"PYTHON_IMAGE={base}", "-t", tag]
        if self.name != "docker":
            # Docker's format keeps the HEALTHCHECK; chroot isolation runs RUN steps without an
            # OCI runtime (so a machine that cannot start containers still builds), on the host's network.
            command += ["--format", "docker", "--isolation", "chroot", "--network", "host"]
        if ca_bundle is not None:
            command += ["--secret", f"id={SECRET_ID},src={ca_bundle}"]
        return [*command, str(context)]

    def build_env(self) -> dict[str, str]:
        """Docker needs BuildKit for build secrets (the default from Docker 23)."""
        return {"DOCKER_BUILDKIT": "1"} if self.name == "docker" else {}

    def exists(self, image: str) -> list[str]:
        if self.name == "buildah":
            return ["buildah", "inspect", "--type", "image", "--format", "{{.FromImageID}}", image]
        return [self.name, "image", "inspect", "--format", "{{.Id}}", image]

    def pull(self, image: str) -> list[str]:
        return [self.name, "pull", image]

    def tag(self, image: str, name: str) -> list[str]:
        return [self.name, "tag", image, name]

    def save(self, names: Sequence[str], archive: Path) -> list[str]:
        """A docker archive of one image under every name in ``names``, for ``ctr images import``.

        Docker's own format keeps all the names in one archive (an OCI archive of podman's
        holds one); buildah's push writes one name, so it is given one.
        """
        if not names:
            raise ValueError("save needs at least one name")
        if self.name == "buildah":
            if len(names) > 1:
                raise NoBuilderError("buildah writes one name per archive: save several with podman or docker")
            return ["buildah", "push", names[0], f"docker-archive:{archive}:{names[0]}"]
        if self.name == "podman":
            return ["podman", "save", "--format", "docker-archive", "--multi-image-archive", "-o", str(archive), *names]
        return ["docker", "save", "-o", str(archive), *names]

    def config(self, image: str) -> list[str]:
        """Prints the image's config as JSON (see ``ImageConfig.from_json``)."""
        if self.name == "buildah":
            return ["buildah", "inspect", "--type", "image", "--format", "{{json .OCIv1.Config}}", image]
        return [self.name, "image", "inspect", "--format", "{{json .Config}}", image]

    def run(self, image: str, name: str, port: int) -> list[str]:
        """Start the image's own entrypoint detached: read-only root, scratch /tmp, no capabilities.

        The host's network with the service on loopback at ``port``: no port mapping to
        set up, and nothing exposed beyond this machine.
        """
        return [
            self.name,
            *(["--runtime", self.runtime] if self.runtime else []),
            "run",
            "--detach",
            "--name",
            name,
            "--read-only",
            "--tmpfs",
            "/tmp",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--network",
            "host",
            "--env",
            "SHARDDB_HOST=127.0.0.1",
            "--env",
            f"SHARDDB_PORT={port}",
            *self.run_args,
            image,
        ]

    def exec(self, name: str, command: Sequence[str]) -> list[str]:
        return [self.name, "exec", name, *command]

    def logs(self, name: str) -> list[str]:
        return [self.name, "logs", name]

    def remove(self, name: str) -> list[str]:
        return [self.name, "rm", "--force", name]

    def create(self, image: str) -> list[str]:
        """A stopped container (docker, podman) or working container (buildah) whose files can be read."""
        if self.name == "buildah":
            return ["buildah", "from", "--pull-never", image]
        return [self.name, "create", image]

    def export(self, container: str) -> list[str]:
        """The container's whole filesystem as a tar stream on stdout (buildah: its mount point)."""
        if self.name == "buildah":
            return ["buildah", "mount", container]
        return [self.name, "export", container]

    def discard(self, container: str) -> list[str]:
        if self.name == "buildah":
            return ["buildah", "rm", container]
        return [self.name, "rm", "--force", container]


def ulimits_below_own(getrlimit: Callable[[int], tuple[int, int]] = resource.getrlimit) -> tuple[str, ...]:
    """``--ulimit`` options below this process's own open files and processes: without CAP_SYS_RESOURCE the
    runtime can set no higher ones (podman's default of 1048576 open files fails), on some machines not even
    the same ones, so half of them, at most 1024 files and 4096 processes."""
    wanted = {"nofile": (resource.RLIMIT_NOFILE, 1024), "nproc": (resource.RLIMIT_NPROC, 4096)}
    found: list[str] = []
    for name, (which, most) in wanted.items():
        soft, _ = getrlimit(which)
        value = most if soft == resource.RLIM_INFINITY else min(most, soft // 2)
        found += ["--ulimit", f"{name}={value}:{value}"]
    return tuple(found)


def _podman(run_args: tuple[str, ...], which: Callable[[str], str | None]) -> Builder:
    """podman with runc where it is installed, and limits it can set unless ``IMAGE_RUN_ARGS`` gives its own."""
    limits = () if any(arg.startswith("--ulimit") for arg in run_args) else ulimits_below_own()
    return Builder("podman", (*limits, *run_args), runtime="runc" if which("runc") is not None else None)


def find_builder(
    env: Mapping[str, str], which: Callable[[str], str | None], docker_engine_up: Callable[[], bool]
) -> Builder:
    """``BUILDER`` if set, else docker with a reachable engine, else podman, else buildah."""
    run_args = tuple(shlex.split(env.get("IMAGE_RUN_ARGS", "")))
    wanted = env.get("BUILDER")
    if wanted:
        if wanted not in NAMES:
            raise NoBuilderError(f"BUILDER={wanted}: expected one of {', '.join(NAMES)}")
        if which(wanted) is None:
            raise NoBuilderError(f"BUILDER={wanted}, but {wanted} is not on PATH")
        return _podman(run_args, which) if wanted == "podman" else Builder(wanted, run_args)
    if which("docker") is not None and docker_engine_up():
        return Builder("docker", run_args)
    if which("podman") is not None:
        return _podman(run_args, which)
    if which("buildah") is not None:
        return Builder("buildah", run_args)
    client_only = " (docker is installed, but no engine answers)" if which("docker") else ""
    raise NoBuilderError(
        f"no image builder found{client_only}: install docker, podman or buildah "
        "(Debian: apt-get install podman), or set BUILDER"
    )
