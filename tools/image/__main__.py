"""``make image``: build the Dockerfile with the machine's builder, then run it and check it serves.

    python -m tools.image [--tag TAG] [--also-tag TAG]... [--base PYTHON_IMAGE] [--save ARCHIVE]

Steps, each with its time: pick a builder (``BUILDER``: docker, podman, buildah);
find the base (``--base`` / ``PYTHON_IMAGE``; without one, the Dockerfile's
official base, and where that cannot be pulled a stand-in made from Debian
packages by ``tools/python-standin.sh``); build, with the CA bundle the machine's
pip trusts as a build secret; start the image's entrypoint as a container (extra
``run`` options in ``IMAGE_RUN_ARGS``), or, where containers cannot start, from
its filesystem with chroot, and say so; check ``/healthz``, a ``/sync`` answer,
the user and the read-only root (``checks``); with ``--save``, give the checked image
its other names (``--also-tag``) and write it, under all of them, as a docker archive
that ``docker load``, ``podman load`` and ``ctr images import`` read. Exit 1 when any
step fails.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

from .builders import Builder, ImageConfig, NoBuilderError, find_builder
from .checks import Check, http_checks, probe_checks, wait_until_serving
from .chroot import rootfs_user
from .runners import Chroot, Container, Running, StartError

ROOT = Path(__file__).resolve().parents[2]
STANDIN = "localhost/sharddb-python-standin:3.11-bookworm"
STANDIN_SCRIPT = ROOT / "tools" / "python-standin.sh"
PULL_TIMEOUT = 300.0
_start = time.monotonic()


def say(message: str) -> None:
    print(f"image: {message} ({time.monotonic() - _start:.0f}s)", file=sys.stderr, flush=True)


def fail(message: str) -> NoReturn:
    print(f"image: FAILED: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def default_base(dockerfile: str) -> str:
    """The Dockerfile's own ``ARG PYTHON_IMAGE=…``."""
    found = re.search(r"^ARG PYTHON_IMAGE=(\S+)", dockerfile, re.MULTILINE)
    if found is None:
        raise ValueError("the Dockerfile declares no ARG PYTHON_IMAGE default")
    return found.group(1)


def pip_ca_bundle(env: Mapping[str, str], pip_config: Mapping[str, str]) -> Path | None:
    """The CA bundle the machine's pip trusts: ``PIP_CERT``, else pip's configured ``cert``; None for pip's own."""
    named = env.get("PIP_CERT") or pip_config.get("global.cert") or pip_config.get("install.cert")
    if named and Path(named).is_file():
        return Path(named)
    return None


def read_pip_config() -> dict[str, str]:
    """``pip config list`` of this interpreter's pip (the files the machine's pip reads)."""
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False)
    config = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        config[key.strip()] = value.strip().strip("'\"")
    return config


def _quiet(command: list[str], timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=timeout)


def _docker_engine_up() -> bool:
    try:
        return _quiet(["docker", "info"], timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def base_image(builder: Builder, named: str | None) -> str:
    """The base to build on: present, pulled, or (only when none was named) the Debian stand-in."""
    wanted = named or default_base((ROOT / "Dockerfile").read_text())
    if _quiet(builder.exists(wanted)).returncode == 0:
        say(f"base {wanted} is present")
        return wanted
    say(f"pulling base {wanted}")
    try:
        pulled = subprocess.run(builder.pull(wanted), check=False, timeout=PULL_TIMEOUT, stdout=sys.stderr)
        problem = None if pulled.returncode == 0 else f"{builder.name} pull exited {pulled.returncode}"
    except subprocess.TimeoutExpired:
        problem = f"no answer within {PULL_TIMEOUT:.0f}s"
    if problem is None:
        return wanted
    if named:
        fail(f"base {wanted} cannot be pulled ({problem}); {STANDIN_SCRIPT.relative_to(ROOT)} makes a local one")
    say(f"cannot pull {wanted} ({problem}): building on {STANDIN}, a stand-in made from Debian packages")
    if _quiet(builder.exists(STANDIN)).returncode != 0:
        say(f"making {STANDIN} with {STANDIN_SCRIPT.relative_to(ROOT)} (first time: about 2 minutes)")
        made = subprocess.run(["bash", str(STANDIN_SCRIPT), STANDIN], env={**os.environ, "BUILDER": builder.name})
        if made.returncode != 0:
            fail(f"the stand-in base could not be made (exit {made.returncode}); see its messages above")
    return STANDIN


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def start(builder: Builder, tag: str, config: ImageConfig, port: int) -> Running:
    """A container where the builder runs them and the machine can start one; else the filesystem, said so."""
    if builder.runs_containers:
        try:
            return Container(builder, tag, port)
        except StartError as error:
            say(f"containers cannot start here ({error}); running the image's filesystem with chroot instead")
    else:
        say("buildah builds but does not run services: running the image's filesystem with chroot")
    try:
        return Chroot(builder, tag, config, port, ROOT)
    except StartError as error:
        fail(str(error))


def report(checks: list[Check]) -> bool:
    for check in checks:
        print(f"  {'ok    ' if check.ok else 'FAILED'} {check.name}: {check.detail}", file=sys.stderr)
    return all(check.ok for check in checks)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.image", description=__doc__.splitlines()[0])
    parser.add_argument("--tag", default="localhost/sharddb-hooks:dev", help="name of the built image")
    parser.add_argument("--also-tag", action="append", default=[], metavar="TAG", help="another name of the image")
    parser.add_argument("--base", default=os.environ.get("PYTHON_IMAGE") or None, help="base image (PYTHON_IMAGE)")
    parser.add_argument("--save", type=Path, metavar="ARCHIVE", help="write the checked image here, under every name")
    args = parser.parse_args(argv)

    try:
        builder = find_builder(os.environ, shutil.which, _docker_engine_up)
    except NoBuilderError as error:
        fail(str(error))
    say(f"builder: {builder.name}")
    base = base_image(builder, args.base)
    ca_bundle = pip_ca_bundle(os.environ, read_pip_config())
    trust = f"pip trusts {ca_bundle} (a build secret, not stored)" if ca_bundle else "pip uses its own CA bundle"
    say(f"building {args.tag} on {base}; {trust}")
    built = subprocess.run(
        builder.build(args.tag, base, ROOT, ca_bundle), env={**os.environ, **builder.build_env()}, check=False
    )
    if built.returncode != 0:
        fail(f"{builder.name} build exited {built.returncode}; its output is above")
    say(f"built {args.tag}")

    config = ImageConfig.from_json(_quiet(builder.config(args.tag)).stdout)
    port = free_port()
    running = start(builder, args.tag, config, port)
    say(f"started {' '.join(config.command)} as user {config.user or 'root'} in {running.how}, port {port}")
    try:
        problem = wait_until_serving(f"http://127.0.0.1:{port}", running.alive)
        if problem is not None:
            fail(f"{problem}; its output:\n{running.output()}")
        uid, gid = _image_ids(config, running)
        checks = http_checks(f"http://127.0.0.1:{port}") + probe_checks(running.probe(), uid, gid)
        ok = report(checks)
    finally:
        running.stop()
    if not ok:
        fail("the image does not serve as it should (see above)")
    say(f"{args.tag} serves /healthz and /sync as uid {uid} on a read-only root, in {running.how}")
    if args.save is not None:
        save(builder, [args.tag, *args.also_tag], args.save)


def save(builder: Builder, names: list[str], archive: Path) -> None:
    """The image under every name in ``names`` (the first is the built one), as a docker archive."""
    for name in names[1:]:
        if _quiet(builder.tag(names[0], name)).returncode != 0:
            fail(f"{builder.name} tag {names[0]} {name} failed")
    try:
        command = builder.save(names, archive)
    except NoBuilderError as error:
        fail(str(error))
    archive.parent.mkdir(parents=True, exist_ok=True)
    archive.unlink(missing_ok=True)  # docker and podman refuse to write over a file
    saved = subprocess.run(command, stdout=sys.stderr, check=False)
    if saved.returncode != 0:
        fail(f"{builder.name} could not save {', '.join(names)} to {archive} (exit {saved.returncode})")
    say(f"saved {', '.join(names)} to {archive} ({archive.stat().st_size / 1e6:.0f} MB)")


def _image_ids(config: ImageConfig, running: Running) -> tuple[int, int]:
    """The image's user as numbers: read from the unpacked root where there is one, else numeric ``USER``."""
    if isinstance(running, Chroot):
        return rootfs_user(running.root, config.user)
    name, _, group = config.user.partition(":")
    if not name.isdigit():
        fail(f"USER {config.user}: give the image a numeric user, as Kubernetes' runAsNonRoot needs")
    return int(name), int(group) if group.isdigit() else int(name)


if __name__ == "__main__":
    main(sys.argv[1:])
