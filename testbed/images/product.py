"""Image build: the product's own images for a real cluster, built here because no registry is reachable.

``build_product_images()`` (or ``python -m testbed.images.product``) writes two archives
that ``ctr -n k8s.io images import`` (and ``docker load``, ``podman load``) reads:

- the hooks image as users get it: the repository's Dockerfile, built and checked by
  ``make image``'s tool (``python -m tools.image``, with the machine's docker, podman or
  buildah), saved under ``ghcr.io/example/sharddb-hooks:0.1.0`` and ``:dev``, the names the
  production and dev overlays run, and ``:0.1.1``, the same image under a new tag to roll
  a Deployment to;
- Metacontroller's image, ``ghcr.io/metacontroller/metacontroller:v4.17.2``, the name its
  release manifests run: its binary built from its source tree (``shared/metacontroller``)
  with its release build's settings (``.goreleaser.yaml``: CGO_ENABLED=0, the version
  stamped into ``main``, no debug symbols), in its Dockerfile's layout: ``/usr/bin/
  metacontroller``, CA certificates, the group and user ``nonroot`` (65532) it runs as,
  the binary as CMD. Its Dockerfile starts from Alpine, which cannot be pulled here; this
  one is Debian bookworm's minbase (what debian:bookworm-slim is) with Debian's
  ca-certificates, made with mmdebstrap as ``testbed.images.workloads`` makes its images.

Each is built once into the images cache (``testbed.images.toolkit.cache_root()``), under a key
of everything it is made of; a later call finds it and builds nothing.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .toolkit import (
    BUILD_VERSION,
    DEFAULT_PATH,
    HOOKS,
    MERGED_USR,
    MMDEBSTRAP_OPTIONS,
    SLIM_EXCLUDES,
    SUITE,
    ImageBuildError,
    Key,
    Obj,
    cached,
    debian_sources,
    hook,
    need,
    package_versions,
    say,
    tail,
    write_archive,
    write_layer,
)

HOOKS_REPOSITORY = "ghcr.io/example/sharddb-hooks"
HOOKS_TAGS = ("0.1.0", "dev", "0.1.1")  # the production overlay's, the dev overlay's, one to roll to
HOOKS_NAMES = tuple(f"{HOOKS_REPOSITORY}:{tag}" for tag in HOOKS_TAGS)

MC_VERSION = "4.17.2"
METACONTROLLER = f"ghcr.io/metacontroller/metacontroller:v{MC_VERSION}"
# sha256 of the uncompressed source tar (git archive --prefix=metacontroller-4.17.2/), as build-binaries.sh pins it.
MC_TAR_SHA256 = "a74f91374b700dc21fc0052d3afd2509ddb5038c50d6f3ac59867c0c74e9d39c"
MC_ARCHIVE = f"metacontroller-v{MC_VERSION}.tar.gz"
MC_BINARY = "/usr/bin/metacontroller"
MC_PACKAGE = "./pkg/cmd/metacontroller"
RELEASE_ENV = {"CGO_ENABLED": "0"}  # .goreleaser.yaml's builds.env
# The Dockerfile's `addgroup -g 65532 -S nonroot && adduser -D -u 65532 -g nonroot -S nonroot -G nonroot`:
# a system account with a home of its own, no password and no login shell.
MC_ACCOUNT = ("nonroot", "65532", "/home/nonroot", "/usr/sbin/nologin", "755")
MC_PACKAGES = ("ca-certificates",)  # the Dockerfile's `apk add --no-cache ca-certificates`

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]  # the repository
DEFAULT_SHARED = ROOT.parent / "shared"
# What the hooks image is made of: the build context the .dockerignore lets in, the Dockerfile,
# the stand-in base made where the official one cannot be pulled, and how the builder is asked.
HOOKS_INPUTS = ("Dockerfile", ".dockerignore", "requirements.txt", "tools/python-standin.sh", "tools/image/builders.py")


@dataclass(frozen=True)
class ProductImage:
    """One archive for ``ctr -n k8s.io images import``, and the names it gives its image."""

    archive: Path
    names: tuple[str, ...]


@dataclass(frozen=True)
class ProductImages:
    hooks: ProductImage  # ghcr.io/example/sharddb-hooks:0.1.0, :dev and :0.1.1
    metacontroller: ProductImage  # ghcr.io/metacontroller/metacontroller:v4.17.2

    @property
    def archives(self) -> tuple[Path, ...]:
        return (self.hooks.archive, self.metacontroller.archive)


def _hooks_files() -> list[Path]:
    """The files of hooks/ that the build context holds (the .dockerignore leaves out bytecode)."""
    return sorted(
        path
        for path in (ROOT / "hooks").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )


def hooks_key(base: str | None = None) -> str:
    """The hooks image's key: its Dockerfile, build context, base, stand-in recipe and names."""
    key = Key()
    key.add("build", BUILD_VERSION)
    key.add("base", base or "the Dockerfile's, else the stand-in")
    key.add("names", "\n".join(HOOKS_NAMES))
    for name in HOOKS_INPUTS:
        key.add(name, (ROOT / name).read_bytes())
    for path in _hooks_files():
        key.add(str(path.relative_to(ROOT)), path.read_bytes())
    return key.hex()


def _build_hooks(base: str | None, work: Path) -> str:
    """Writes work/image.tar with ``python -m tools.image``: built, run and checked, then saved.

    Which builder builds it is that tool's choice (and its message, when there is none), as with ``make image``.
    """
    first, *others = HOOKS_NAMES
    command = [sys.executable, "-m", "tools.image", "--tag", first, "--save", str(work / "image.tar")]
    command += [arg for name in others for arg in ("--also-tag", name)]
    command += ["--base", base] if base else []
    log = work / "build.log"
    say(f"hooks: python -m tools.image builds the Dockerfile and checks it serves (minutes the first time; log: {log})")
    with log.open("wb") as out:
        done = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if done.returncode != 0 or not (work / "image.tar").is_file():
        raise ImageBuildError(f"the hooks image: python -m tools.image failed (exit {done.returncode}):\n{tail(log)}")
    return ", ".join(HOOKS_TAGS)


def hooks_image(base: str | None = None) -> ProductImage:
    """The hooks image's archive, from the cache or built now; ``base`` as ``make image``'s PYTHON_IMAGE."""
    wanted = base or os.environ.get("PYTHON_IMAGE") or None
    archive = cached("hooks", hooks_key(wanted), lambda work: _build_hooks(wanted, work))
    return ProductImage(archive, HOOKS_NAMES)


def metacontroller_source() -> Path:
    """Metacontroller's source archive: SHARDDB_METACONTROLLER_SRC, else shared/metacontroller/ (checked)."""
    shared = Path(os.environ["SHARDDB_SHARED"]) if os.environ.get("SHARDDB_SHARED") else DEFAULT_SHARED
    candidates = [Path(p) for p in (os.environ.get("SHARDDB_METACONTROLLER_SRC"),) if p]
    candidates.append(shared / "metacontroller" / MC_ARCHIVE)
    for path in candidates:
        if path.is_file():
            actual = tar_sha256(path)
            if actual != MC_TAR_SHA256:
                wrong = f"tar sha256 {actual}, expected {MC_TAR_SHA256}"
                raise ImageBuildError(f"{path} is not Metacontroller v{MC_VERSION}'s source: {wrong}")
            return path
    raise ImageBuildError(
        f"Metacontroller v{MC_VERSION}'s source archive is not in {' or '.join(map(str, candidates))}: place "
        f"shared/metacontroller/{MC_ARCHIVE} beside the repository, or set SHARDDB_METACONTROLLER_SRC to it "
        f"(GitHub's tag archive, https://github.com/metacontroller/metacontroller/archive/refs/tags/v{MC_VERSION}"
        ".tar.gz), or SHARDDB_SHARED to the shared/ folder"
    )


def tar_sha256(path: Path) -> str:
    """The sha256 of a gzip file's uncompressed bytes."""
    digest = hashlib.sha256()
    with gzip.open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def go_version() -> str:
    """``go env GOVERSION``: the compiler is part of what the binary is."""
    go = need("go", "install Go >= 1.26.4 (https://go.dev/dl or Debian's golang package)")
    done = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ImageBuildError(f"go env GOVERSION failed: {done.stderr.strip()}")
    return done.stdout.strip()


def release_ldflags(commit: str, date: str) -> str:
    """.goreleaser.yaml's ldflags for a release (not DEBUG): the stamps in ``main`` and ``-s -w``."""
    stamps = {"version": MC_VERSION, "commit": commit, "date": date, "builtBy": "sharddb-testbed"}
    return " ".join([*(f"-X main.{name}={value}" for name, value in stamps.items()), "-s", "-w"])


def metacontroller_config(commit: str = "", date: str = "") -> Obj:
    """The image config of Metacontroller's Dockerfile, with its release's labels (.goreleaser.yaml)."""
    labels = {
        "org.opencontainers.image.title": "metacontroller",
        "org.opencontainers.image.description": "Lightweight Kubernetes controllers as a service",
        "org.opencontainers.image.url": "https://github.com/metacontroller/metacontroller",
        "org.opencontainers.image.source": "https://github.com/metacontroller/metacontroller",
        "org.opencontainers.image.version": f"v{MC_VERSION}",
        "org.opencontainers.image.licenses": "Apache-2.0",
    }
    if commit:
        labels["org.opencontainers.image.revision"] = commit
    if date:
        labels["org.opencontainers.image.created"] = date
    return {
        "User": "nonroot:nonroot",
        "Env": [f"PATH={DEFAULT_PATH}"],
        "Cmd": [MC_BINARY],
        "WorkingDir": "/",
        "Labels": labels,
    }


def metacontroller_key(source_sha256: str, go: str) -> str:
    """The key: the source, the compiler, the build's flags, the packages, account, hooks and config."""
    key = Key()
    key.add("build", BUILD_VERSION)
    key.add("source", source_sha256)
    key.add("go", go)
    key.add("env", json.dumps(RELEASE_ENV, sort_keys=True))
    key.add("ldflags", release_ldflags("", ""))
    key.add("suite", SUITE)
    key.add("packages", "\n".join(MC_PACKAGES))
    key.add("account", "\n".join(MC_ACCOUNT))
    key.add("dpkg", "\n".join(SLIM_EXCLUDES))
    key.add("mmdebstrap", "\n".join(MMDEBSTRAP_OPTIONS))
    key.add("config", json.dumps(metacontroller_config(), sort_keys=True))
    for name in ("account.sh", "finish.sh"):
        key.add(f"hook/{name}", (HOOKS / name).read_bytes())
    return key.hex()


def _source_tree(archive: Path, into: Path) -> tuple[Path, str, str]:
    """Extracts the tree; returns its folder, its commit (git archive's pax comment) and commit time."""
    with tarfile.open(archive, "r:gz") as tar:
        commit = str(tar.pax_headers.get("comment", ""))
        first = tar.next()
        when = datetime.fromtimestamp(first.mtime if first else 0, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        tar.extractall(into, filter="data")
    return into / f"metacontroller-{MC_VERSION}", commit, when


def build_metacontroller_binary(archive: Path, out: Path) -> tuple[str, str]:
    """``go build`` of pkg/cmd/metacontroller as its release does, into ``out``; returns (commit, date)."""
    go = need("go", "install Go >= 1.26.4 (https://go.dev/dl or Debian's golang package)")
    env = {**os.environ, **RELEASE_ENV, "GOFLAGS": "-buildvcs=false -mod=mod", "GOTOOLCHAIN": "local"}
    with tempfile.TemporaryDirectory(prefix="metacontroller-src-") as scratch:
        tree, commit, date = _source_tree(archive, Path(scratch))
        downloaded = subprocess.run([go, "mod", "download"], cwd=tree, env=env, capture_output=True, text=True)
        if downloaded.returncode != 0:
            raise ImageBuildError(
                f"could not fetch Metacontroller's dependencies from the Go module proxy: {downloaded.stderr.strip()}"
            )
        command = [go, "build", "-trimpath", f"-ldflags={release_ldflags(commit, date)}", "-o", str(out), MC_PACKAGE]
        built = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        if built.returncode != 0:
            raise ImageBuildError(
                f"building metacontroller v{MC_VERSION} failed (it needs Go >= 1.26.4): {built.stderr.strip()}"
            )
    return commit, date


def metacontroller_mmdebstrap(binary: Path, sources: list[str]) -> list[str]:
    """The mmdebstrap run writing the image's root as a tar to stdout: minbase, CA certificates, the account."""
    merged_usr = [f"--hook-dir={MERGED_USR}"] if MERGED_USR.is_dir() else []
    return [
        "mmdebstrap",
        "--verbose",
        *MMDEBSTRAP_OPTIONS,
        *merged_usr,
        f"--include={','.join(MC_PACKAGES)}",
        *(f"--dpkgopt={option}" for option in SLIM_EXCLUDES),
        f"--essential-hook={hook('account.sh', *MC_ACCOUNT)}",
        f"--customize-hook=copy-in {shlex.quote(str(binary))} {shlex.quote(str(Path(MC_BINARY).parent))}",
        f"--customize-hook={hook('finish.sh')}",
        SUITE,
        "-",
        *sources,
    ]


def _build_metacontroller(archive: Path, work: Path) -> str:
    """Writes work/image.tar: the binary built, then the root file system around it."""
    need("mmdebstrap", "apt-get install mmdebstrap")
    if os.geteuid() != 0:
        raise ImageBuildError("building Metacontroller's image needs root (mmdebstrap's root mode chroots and chowns)")
    binary = work / Path(MC_BINARY).name
    say(f"metacontroller: go build {MC_PACKAGE} of v{MC_VERSION} (a few minutes on 2 cores the first time)")
    commit, date = build_metacontroller_binary(archive, binary)
    sources = debian_sources()
    log = work / "build.log"
    say(f"metacontroller: mmdebstrap {SUITE} from {sources[0].split()[1]} (a minute or two; log: {log})")
    with log.open("wb") as out:
        process = subprocess.Popen(
            metacontroller_mmdebstrap(binary, sources), stdout=subprocess.PIPE, stderr=out, stdin=subprocess.DEVNULL
        )
        assert process.stdout is not None
        status = "var/lib/dpkg/status"
        broken: Exception | None = None
        try:
            layer, kept = write_layer(process.stdout, work / "layer.tar.gz", frozenset({status}))
        except (tarfile.TarError, OSError) as error:
            broken = error
            process.kill()
        finally:
            process.stdout.close()
        if process.wait() != 0 or broken is not None:
            problem = f"exit {process.returncode}" if process.returncode > 0 else f"its tar broke off: {broken}"
            raise ImageBuildError(f"metacontroller: mmdebstrap failed ({problem}):\n{tail(log)}")
    installed = package_versions(kept.get(status, b"").decode())
    history = (
        f"testbed/images/product.py {BUILD_VERSION}: metacontroller v{MC_VERSION} ({commit[:12]}) built with "
        f"CGO_ENABLED=0, on mmdebstrap {SUITE} minbase with ca-certificates {installed.get('ca-certificates', '?')}"
    )
    write_archive(work / "image.tar", layer, metacontroller_config(commit, date), (METACONTROLLER,), history)
    (work / "layer.tar.gz").unlink()
    binary.unlink()
    return f"commit {commit[:12]}, ca-certificates {installed.get('ca-certificates', '?')}"


def metacontroller_image() -> ProductImage:
    """Metacontroller's image archive, from the cache or built now."""
    archive = metacontroller_source()
    key = metacontroller_key(MC_TAR_SHA256, go_version())
    built = cached("metacontroller", key, lambda work: _build_metacontroller(archive, work))
    return ProductImage(built, (METACONTROLLER,))


def build_product_images() -> ProductImages:
    """Both archives, from the cache or built now (minutes cold; a no-op when cached)."""
    return ProductImages(hooks=hooks_image(), metacontroller=metacontroller_image())


def main() -> int:
    """Builds what is missing and prints each archive's path, then its image names, one archive a line."""
    try:
        images = build_product_images()
    except ImageBuildError as error:
        say(str(error))
        return 1
    for image in (images.hooks, images.metacontroller):
        print(image.archive, *image.names, sep="\t")
    return 0


if __name__ == "__main__":
    sys.exit(main())
