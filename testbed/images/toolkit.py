"""Image build toolkit: what the test images and the product images are both made with.

The cache outside the repository (``cache_root()``, ``cached()``: built once under a key of
everything an image is made of, ``Key``), mmdebstrap's settings and hook commands (``hook()`` runs
a script of ``recipes/``), this machine's Debian mirrors, and the OCI image archive of one layer
that ``ctr -n k8s.io images import`` loads (``write_layer()``, ``write_archive()``).
"""

from __future__ import annotations

import configparser
import fcntl
import gzip
import hashlib
import io
import json
import os
import platform
import re
import shlex
import shutil
import sys
import tarfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

# Bump when the way an image is made changes in a way its key does not see.
BUILD_VERSION = "1"
SUITE = "bookworm"
HOOKS = Path(__file__).resolve().parent / "recipes"  # the hook scripts and own recipes
MERGED_USR = Path("/usr/share/mmdebstrap/hooks/merged-usr")
FALLBACK_MIRROR = "http://deb.debian.org/debian"
FALLBACK_SECURITY = "http://deb.debian.org/debian-security"

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What debian:bookworm-slim leaves out (its /etc/dpkg/dpkg.cfg.d/docker), which the recipes start from.
SLIM_EXCLUDES = (
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/groff/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/lintian/*",
    "path-exclude=/usr/share/linda/*",
)
# debian:bookworm-slim is minbase; finish.sh cleans /run itself, keeping /run/postgresql.
MMDEBSTRAP_OPTIONS = ("--mode=root", "--variant=minbase", "--format=tar", "--skip=cleanup/run")

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

Obj = dict[str, Any]


class ImageBuildError(RuntimeError):
    """An image cannot be built here; the message says what is missing and how to get it."""


def say(message: str) -> None:
    """One progress line on stderr."""
    print(f"images: {message}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    """SHARDDB_IMAGE_CACHE, else $XDG_CACHE_HOME/sharddb/images, else ~/.cache/sharddb/images."""
    if explicit := os.environ.get("SHARDDB_IMAGE_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sharddb" / "images"


class Key:
    """A sha256 over labelled parts, each length-prefixed so no two inputs run together."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def add(self, label: str, data: str | bytes) -> None:
        raw = data.encode() if isinstance(data, str) else data
        self._hash.update(f"{label}\0{len(raw)}\0".encode())
        self._hash.update(raw)

    def hex(self) -> str:
        return self._hash.hexdigest()[:16]


def _apt_entries(apt_dir: Path) -> Iterator[tuple[str, list[str]]]:
    """(URI, suites) of every enabled ``deb`` entry in apt's sources, one-line and deb822 alike."""
    one_line = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*.list"))]
    for path in one_line:
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
            if len(words) >= 3 and words[0] == "deb":
                yield words[1], [words[2]]
    for path in sorted((apt_dir / "sources.list.d").glob("*.sources")):
        if not path.is_file():
            continue
        for stanza in re.split(r"\n\s*\n", path.read_text()):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[:1].isspace():
                    continue
                name, value = line.split(":", 1)
                fields[name.strip().lower()] = value.strip()
            if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes").lower() == "no":
                continue
            for uri in fields.get("uris", "").split():
                yield uri, fields.get("suites", "").split()


def debian_sources(suite: str = SUITE, apt_dir: Path = Path("/etc/apt")) -> list[str]:
    """apt lines for ``suite``, its -updates and -security, from this machine's mirrors (else deb.debian.org)."""
    found: dict[str, str] = {}
    for uri, suites in _apt_entries(apt_dir):
        for name in suites:
            found.setdefault(name, uri)
    if suite not in found:
        found = {suite: FALLBACK_MIRROR, f"{suite}-updates": FALLBACK_MIRROR, f"{suite}-security": FALLBACK_SECURITY}
    wanted = (suite, f"{suite}-updates", f"{suite}-security")
    return [f"deb {found[name]} {name} main" for name in wanted if name in found]


def package_versions(status: str) -> dict[str, str]:
    """Installed package -> version, from a dpkg status file."""
    versions: dict[str, str] = {}
    for stanza in status.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[:1] != " ")
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            versions[fields["Package"]] = fields.get("Version", "")
    return versions


class _Hashing(io.RawIOBase):
    """A writer that hashes and counts what passes through it to ``target``."""

    def __init__(self, target: IO[bytes]) -> None:
        super().__init__()
        self.target = target
        self.sha = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.sha.update(view)
        self.size += view.nbytes
        self.target.write(view)
        return view.nbytes

    def flush(self) -> None:
        self.target.flush()

    @property
    def digest(self) -> str:
        return f"sha256:{self.sha.hexdigest()}"


@dataclass(frozen=True)
class Layer:
    """One gzip layer blob: its digest and size, and the digest of its uncompressed tar (the diff_id)."""

    path: Path
    digest: str
    size: int
    diff_id: str


def write_layer(source: IO[bytes], out: Path, keep: frozenset[str] = frozenset()) -> tuple[Layer, dict[str, bytes]]:
    """Copies a tar stream into a gzip layer, without device nodes; returns it and the files named in ``keep``."""
    kept: dict[str, bytes] = {}
    with out.open("wb") as raw:
        compressed = _Hashing(cast(IO[bytes], raw))
        with gzip.GzipFile(fileobj=compressed, mode="wb", compresslevel=6, mtime=0) as zipped:
            plain = _Hashing(cast(IO[bytes], zipped))
            with (
                tarfile.open(fileobj=source, mode="r|") as tar_in,
                tarfile.open(fileobj=cast(IO[bytes], plain), mode="w|", format=tarfile.PAX_FORMAT) as tar_out,
            ):
                for member in tar_in:
                    if member.ischr() or member.isblk() or member.isfifo():
                        continue  # the runtime makes /dev; a layer carries no device nodes
                    data = tar_in.extractfile(member) if member.isreg() else None
                    name = member.name.removeprefix("./")
                    if data is not None and name in keep:
                        kept[name] = data.read()
                        data = io.BytesIO(kept[name])
                    tar_out.addfile(member, data)
    return Layer(out, compressed.digest, compressed.size, plain.digest), kept


def _blob(data: bytes) -> tuple[str, bytes]:
    return f"sha256:{hashlib.sha256(data).hexdigest()}", data


def _architecture() -> str:
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def write_archive(out: Path, layer: Layer, config: Obj, refs: tuple[str, ...], history: str) -> None:
    """An OCI image layout of one layer, as one tar; index.json names the manifest once per ref."""
    arch = _architecture()
    config_digest, config_blob = _blob(
        json.dumps(
            {
                "architecture": arch,
                "os": "linux",
                "config": config,
                "rootfs": {"type": "layers", "diff_ids": [layer.diff_id]},
                "history": [{"created_by": history}],
            },
            indent=2,
        ).encode()
    )
    manifest_digest, manifest_blob = _blob(
        json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST,
                "config": {"mediaType": CONFIG, "digest": config_digest, "size": len(config_blob)},
                "layers": [{"mediaType": LAYER, "digest": layer.digest, "size": layer.size}],
            },
            indent=2,
        ).encode()
    )
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX,
        "manifests": [
            {
                "mediaType": MANIFEST,
                "digest": manifest_digest,
                "size": len(manifest_blob),
                "platform": {"architecture": arch, "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": ref,
                    "org.opencontainers.image.ref.name": ref.rsplit(":")[-1],
                },
            }
            for ref in refs
        ],
    }

    def add(tar: tarfile.TarFile, name: str, data: bytes | None = None, path: Path | None = None) -> None:
        info = tarfile.TarInfo(name)
        if data is None and path is None:
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
            return
        info.mode = 0o644
        if path is not None:
            info.size = path.stat().st_size
            with path.open("rb") as stream:
                tar.addfile(info, stream)
        else:
            assert data is not None
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        add(tar, "blobs")
        add(tar, "blobs/sha256")
        add(tar, f"blobs/sha256/{config_digest.split(':')[1]}", config_blob)
        add(tar, f"blobs/sha256/{manifest_digest.split(':')[1]}", manifest_blob)
        add(tar, f"blobs/sha256/{layer.digest.split(':')[1]}", path=layer.path)
        add(tar, "index.json", json.dumps(index, indent=2).encode())


def pip_settings(env: Mapping[str, str] | None = None, cafile: Path = Path("/etc/pip.conf")) -> dict[str, str]:
    """The CA bundle and index this machine's pip uses, for a hook that runs pip in a chroot.

    As SHARDDB_PIP_CERT and SHARDDB_PIP_INDEX_URL: the hook passes only these into the chroot,
    where the build machine's other variables (REQUESTS_CA_BUNDLE among them) would override them.
    """
    found = os.environ if env is None else env
    cert = found.get("PIP_CERT") or _pip_conf(cafile, "cert")
    index = found.get("PIP_INDEX_URL") or _pip_conf(cafile, "index-url")
    settings = {"SHARDDB_PIP_CERT": cert if cert and Path(cert).is_file() else ""}
    return {**settings, "SHARDDB_PIP_INDEX_URL": index or ""}


def _pip_conf(path: Path, name: str) -> str:
    """One setting of pip's [global] section in ``path``; empty when it is not there."""
    parser = configparser.ConfigParser()
    parser.read(path)
    return parser.get("global", name, fallback="")


def need(program: str, how: str) -> str:
    """The path of ``program``; without it, an ImageBuildError that says ``how`` to get it."""
    found = shutil.which(program)
    if found is None:
        raise ImageBuildError(f"{program} is required to build the test images: {how}")
    return found


def hook(script: str, *args: str) -> str:
    """A hook command for mmdebstrap, which runs it under sh with the chroot as $1."""
    return " ".join(["sh", shlex.quote(str(HOOKS / script)), '"$1"', *(shlex.quote(arg) for arg in args)])


def tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a build log, for an error message."""
    text = path.read_text(errors="replace").splitlines() if path.exists() else []
    return "\n".join(text[-lines:])


@contextmanager
def _locked(lock_path: Path, name: str) -> Iterator[None]:
    with lock_path.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"{name}: another process is building it; waiting")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def cached(name: str, key: str, build: Callable[[Path], str]) -> Path:
    """``<cache>/<name>-<key>/image.tar``, built by ``build`` into a temporary folder first if it is not there."""
    root = cache_root()
    final = root / f"{name}-{key}"
    archive = final / "image.tar"
    if archive.is_file():
        say(f"{name} cached: {archive}")
        return archive
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{name}-{key}.lock", name):
        if archive.is_file():
            say(f"{name} built by another process: {archive}")
            return archive
        work = root / f"{name}-{key}.tmp"
        shutil.rmtree(work, ignore_errors=True)  # what a killed build left (its lock is ours now)
        shutil.rmtree(final, ignore_errors=True)
        work.mkdir()
        started = time.monotonic()
        try:
            detail = build(work)
            work.rename(final)
        except ImageBuildError as error:
            kept = root / f"{name}-{key}.failed.log"
            if (work / "build.log").is_file():
                (work / "build.log").replace(kept)
                raise ImageBuildError(f"{error}\n(whole log: {kept})") from error
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        megabytes = archive.stat().st_size / 1e6
        say(f"{name} built in {time.monotonic() - started:.0f}s ({megabytes:.1f} MB; {detail}): {archive}")
    return archive
