"""Image build: the test images for tests that run real containers, built here because no registry is reachable.

``build_images()`` (or ``python -m testbed.images.workloads``) writes five OCI image archives
that ``ctr -n k8s.io images import`` loads: postgres:15 and redis:7.0 made as the
official images' recipes make them (``shared/images/``, beside the repository) but
from Debian bookworm's packages with mmdebstrap; mariadb:10.11 and memcached:1.6 the
same way after what the official mariadb and memcached recipes are known to do (those
recipes are not in ``shared/images/``: their entrypoints here, in ``recipes/``,
are this repository's own); and Kubernetes' pause container compiled from its C source.
Each is built once into a cache outside the repository, under a key of everything it is
made of; a later call finds it and builds nothing.

``python -m testbed.images.workloads postgres-patroni`` builds one more, on its own: the
Patroni recipe users build (``examples/images/postgres-patroni/``) made the same way, the postgres
image's steps, then the recipe's own, with Patroni and its pinned dependencies from PyPI.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
    pip_settings,
    say,
    tail,
    write_archive,
    write_layer,
)

KUBE_MODULE = "k8s.io/kubernetes"
KUBE_VERSION = "v1.34.4"

POSTGRES = "docker.io/library/postgres:15"
POSTGRES_ROLLOUT = "docker.io/library/postgres:15-rollout"
REDIS = "docker.io/library/redis:7.0"
REDIS_ROLLOUT = "docker.io/library/redis:7.0-rollout"
MARIADB = "docker.io/library/mariadb:10.11"
MEMCACHED = "docker.io/library/memcached:1.6"
PAUSE = "registry.k8s.io/pause:3.10"
POSTGRES_PATRONI = "localhost/sharddb/postgres-patroni:15-4.1.5-debian"
POSTGRES_PATRONI_ROLLOUT = "localhost/sharddb/postgres-patroni:15-4.1.5-debian-rollout"

HERE = Path(__file__).resolve().parent
DEFAULT_RECIPES = HERE.parents[2] / "shared" / "images"
EXAMPLE_RECIPES = HERE.parents[1] / "examples" / "images"  # the recipes users build, this repository's own

PG_MAJOR = "15"
PGDATA = "/var/lib/postgresql/data"
MARIADB_DATA = "/var/lib/mysql"
PATRONI_ENV = ("PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONDONTWRITEBYTECODE=1")  # the Patroni recipe's ENV
LOCALE_EXCLUDE = "path-exclude=/usr/share/locale/*"  # the postgres recipe takes it out again
PAUSE_CFLAGS = ("-Os", "-Wall", "-Werror", "-static")  # build/pause/Makefile's CFLAGS, less -DVERSION


@dataclass(frozen=True)
class ImageSet:
    """The archives, each for ``ctr -n k8s.io images import``."""

    postgres: Path  # docker.io/library/postgres:15 and :15-rollout
    redis: Path  # docker.io/library/redis:7.0 and :7.0-rollout
    mariadb: Path  # docker.io/library/mariadb:10.11
    memcached: Path  # docker.io/library/memcached:1.6
    pause: Path  # registry.k8s.io/pause:3.10

    @property
    def archives(self) -> tuple[Path, ...]:
        return (self.postgres, self.redis, self.mariadb, self.memcached, self.pause)


def _versioned(name: str, versions: Mapping[str, str]) -> list[str]:
    return [f"{name}={versions[name]}"] if name in versions else []


def postgres_config(versions: Mapping[str, str] | None = None) -> Obj:
    """The image config of the postgres recipe; ``versions`` gives GOSU_VERSION and PG_VERSION (Debian's)."""
    found = versions or {}
    return {
        "Env": [
            f"PATH={DEFAULT_PATH}:/usr/lib/postgresql/{PG_MAJOR}/bin",
            *_versioned("GOSU_VERSION", found),
            "LANG=en_US.utf8",
            f"PG_MAJOR={PG_MAJOR}",
            *_versioned("PG_VERSION", found),
            f"PGDATA={PGDATA}",
        ],
        "Entrypoint": ["docker-entrypoint.sh"],
        "Cmd": ["postgres"],
        "ExposedPorts": {"5432/tcp": {}},
        "Volumes": {PGDATA: {}},
        "StopSignal": "SIGINT",
    }


def postgres_patroni_config(versions: Mapping[str, str] | None = None) -> Obj:
    """The Patroni recipe's image config: the postgres one, Patroni's venv first on PATH, its user and signal."""
    base = {name: value for name, value in postgres_config(versions).items() if name != "Cmd"}
    path, *rest = base["Env"]
    return {
        **base,
        "User": "999:999",
        "Env": [path.replace("PATH=", "PATH=/opt/patroni/bin:", 1), *rest, *PATRONI_ENV],
        "Entrypoint": ["patroni-entrypoint.sh"],
        "ExposedPorts": {"5432/tcp": {}, "8008/tcp": {}},
        "StopSignal": "SIGTERM",
    }


def redis_config(versions: Mapping[str, str] | None = None) -> Obj:
    """The image config of the redis recipe; ``versions`` gives GOSU_VERSION and REDIS_VERSION (Debian's)."""
    found = versions or {}
    return {
        "Env": [f"PATH={DEFAULT_PATH}", *_versioned("GOSU_VERSION", found), *_versioned("REDIS_VERSION", found)],
        "Entrypoint": ["docker-entrypoint.sh"],
        "Cmd": ["redis-server"],
        "WorkingDir": "/data",
        "ExposedPorts": {"6379/tcp": {}},
        "Volumes": {"/data": {}},
    }


def mariadb_config(versions: Mapping[str, str] | None = None) -> Obj:
    """The image config of the official mariadb recipe; ``versions`` gives GOSU_VERSION and MARIADB_VERSION (Debian's).

    It sets no user (the entrypoint switches to mysql with gosu) and no stop signal: SIGTERM, a normal shutdown.
    """
    found = versions or {}
    return {
        "Env": [
            f"PATH={DEFAULT_PATH}",
            *_versioned("GOSU_VERSION", found),
            "LANG=C.UTF-8",
            *_versioned("MARIADB_VERSION", found),
        ],
        "Entrypoint": ["docker-entrypoint.sh"],
        "Cmd": ["mariadbd"],
        "ExposedPorts": {"3306/tcp": {}},
        "Volumes": {MARIADB_DATA: {}},
    }


def memcached_config(versions: Mapping[str, str] | None = None) -> Obj:
    """The image config of the official memcached recipe: as memcache; ``versions`` gives MEMCACHED_VERSION."""
    found = versions or {}
    return {
        "User": "memcache",
        "Env": [f"PATH={DEFAULT_PATH}", *_versioned("MEMCACHED_VERSION", found)],
        "Entrypoint": ["docker-entrypoint.sh"],
        "Cmd": ["memcached"],
        "ExposedPorts": {"11211/tcp": {}},
    }


def pause_config() -> Obj:
    """The image config of build/pause's Dockerfile: the static binary alone, as nobody."""
    return {"User": "65535:65535", "Env": [f"PATH={DEFAULT_PATH}"], "Entrypoint": ["/pause"], "WorkingDir": "/"}


@dataclass(frozen=True)
class DebianImage:
    """How one official image is made again from Debian packages."""

    name: str
    refs: tuple[str, ...]
    recipe: str  # its folder under shared/images, or under ``recipe_root``
    files: tuple[str, ...]  # the recipe files the image needs
    account: tuple[str, ...]  # account.sh's arguments: name, id, home, shell[, home mode]
    packages: tuple[str, ...]  # mmdebstrap --include
    customize: tuple[str, ...]  # a hook script and its arguments after the chroot and the recipe folder
    hooks: tuple[str, ...]  # every file of recipes/ it uses
    dpkg_options: tuple[str, ...]
    config: Callable[[Mapping[str, str] | None], Obj]
    # Env variables the recipe sets to a version: which Debian package's version, and upstream part only?
    versions: tuple[tuple[str, str, bool], ...]
    # Where the recipe folder is when shared/images has none (this repository's recipes/, beside this module).
    recipe_root: Path | None = None
    # A hook script and its arguments after the chroot, run after finish.sh.
    after: tuple[str, ...] = ()
    # A second recipe on top of the first (a FROM of it): its folder, and a hook script and its
    # arguments after the chroot and that folder, run after ``customize`` and before finish.sh.
    then_recipe: Path | None = None
    then: tuple[str, ...] = ()

    def recipe_folder(self, recipes: Path) -> Path:
        return (self.recipe_root or recipes) / self.recipe


POSTGRES_IMAGE = DebianImage(
    name="postgres",
    refs=(POSTGRES, POSTGRES_ROLLOUT),
    recipe="postgres-15",
    files=("Dockerfile", "docker-entrypoint.sh", "docker-ensure-initdb.sh"),
    account=("postgres", "999", "/var/lib/postgresql", "/bin/bash", "1777"),
    # The recipe's packages, less gnupg (it only fetched the PostgreSQL apt repository's key);
    # postgresql-common alone first, the server after its main cluster is turned off.
    packages=("gosu", "less", "libnss-wrapper", "locales", "postgresql-common", "tzdata", "xz-utils", "zstd"),
    customize=("postgres.sh", PG_MAJOR, f"postgresql-{PG_MAJOR}", f"postgresql-client-{PG_MAJOR}"),
    hooks=("account.sh", "postgres.sh", "finish.sh"),
    dpkg_options=SLIM_EXCLUDES,
    config=postgres_config,
    versions=(("GOSU_VERSION", "gosu", True), ("PG_VERSION", f"postgresql-{PG_MAJOR}", False)),
)
REDIS_IMAGE = DebianImage(
    name="redis",
    refs=(REDIS, REDIS_ROLLOUT),
    recipe="redis-7.0",
    files=("Dockerfile", "docker-entrypoint.sh"),
    account=("redis", "999", "/home/redis", "/bin/sh"),
    packages=("gosu", "redis-server", "redis-tools", "tzdata"),
    customize=("redis.sh",),
    hooks=("account.sh", "redis.sh", "redis-server", "finish.sh"),
    dpkg_options=(*SLIM_EXCLUDES, LOCALE_EXCLUDE),
    config=redis_config,
    versions=(("GOSU_VERSION", "gosu", True), ("REDIS_VERSION", "redis-server", True)),
)
# The official mariadb image is built on Ubuntu with MariaDB's own packages; here Debian
# bookworm's MariaDB 10.11 gives the same server and clients. Its packages as that recipe
# installs them (gosu, tzdata, xz-utils and zstd for the entrypoint; the server,
# mariadb-backup and socat), its user mysql with uid/gid 999 and home /var/lib/mysql.
MARIADB_IMAGE = DebianImage(
    name="mariadb",
    refs=(MARIADB,),
    recipe="mariadb-10.11",
    files=("docker-entrypoint.sh",),
    account=("mysql", "999", MARIADB_DATA, "/bin/sh"),
    packages=("gosu", "mariadb-backup", "mariadb-server", "socat", "tzdata", "xz-utils", "zstd"),
    customize=("mariadb.sh",),
    hooks=("account.sh", "mariadb.sh", "finish.sh", "run-dir.sh"),
    dpkg_options=(*SLIM_EXCLUDES, LOCALE_EXCLUDE),
    config=mariadb_config,
    versions=(("GOSU_VERSION", "gosu", True), ("MARIADB_VERSION", "mariadb-server", False)),
    recipe_root=HOOKS,
    # the socket's and pid file's folder, writable whatever uid the server runs as
    after=("run-dir.sh", "mysqld", "mysql", "1777"),
)
# The official memcached image compiles memcached from its source tarball on
# debian:bookworm-slim, as memcache (uid/gid 11211); Debian's memcached 1.6 package gives
# the same program, beside the SASL modules the recipe installs.
MEMCACHED_IMAGE = DebianImage(
    name="memcached",
    refs=(MEMCACHED,),
    recipe="memcached-1.6",
    files=("docker-entrypoint.sh",),
    account=("memcache", "11211", "/home/memcache", "/bin/sh"),
    packages=("libsasl2-modules", "memcached"),
    customize=("memcached.sh",),
    hooks=("account.sh", "memcached.sh", "finish.sh"),
    dpkg_options=(*SLIM_EXCLUDES, LOCALE_EXCLUDE),
    config=memcached_config,
    versions=(("MEMCACHED_VERSION", "memcached", True),),
    recipe_root=HOOKS,
)


# The users' Patroni recipe is FROM the official postgres image: that image's steps, then the
# recipe's (Debian's Python, Patroni's venv from PyPI, the entrypoint), with its config.
POSTGRES_PATRONI_IMAGE = DebianImage(
    name="postgres-patroni",
    refs=(POSTGRES_PATRONI, POSTGRES_PATRONI_ROLLOUT),
    recipe=POSTGRES_IMAGE.recipe,
    files=POSTGRES_IMAGE.files,
    account=POSTGRES_IMAGE.account,
    # psycopg2's build packages, purged by patroni.sh once the venv is made.
    packages=(*POSTGRES_IMAGE.packages, "python3", "python3-venv", "gcc", "libpq-dev", "python3-dev"),
    customize=POSTGRES_IMAGE.customize,
    hooks=(*POSTGRES_IMAGE.hooks, "patroni.sh"),
    dpkg_options=POSTGRES_IMAGE.dpkg_options,
    config=postgres_patroni_config,
    versions=POSTGRES_IMAGE.versions,
    then_recipe=EXAMPLE_RECIPES / "postgres-patroni",
    then=("patroni.sh",),
)
# Built only when named: the data and installed tiers do not run it.
BY_NAME = {image.name: image for image in (POSTGRES_PATRONI_IMAGE,)}


def recipes_dir() -> Path:
    """The official recipes' folder: SHARDDB_IMAGES_RECIPES, else SHARDDB_SHARED/images, else ../shared/images."""
    if explicit := os.environ.get("SHARDDB_IMAGES_RECIPES"):
        path = Path(explicit)
    elif shared := os.environ.get("SHARDDB_SHARED"):
        path = Path(shared) / "images"
    else:
        path = DEFAULT_RECIPES
    missing = [f"{image.recipe}/{name}" for image in (POSTGRES_IMAGE, REDIS_IMAGE) for name in image.files]
    missing = [name for name in missing if not (path / name).is_file()]
    if missing:
        raise ImageBuildError(
            f"the official images' recipes are not in {path} (missing: {', '.join(missing)}): place shared/ "
            "beside the repository (shared/images/postgres-15/, shared/images/redis-7.0/), or set SHARDDB_SHARED "
            "to the shared/ folder or SHARDDB_IMAGES_RECIPES to its images/ folder"
        )
    return path


def image_key(image: DebianImage, recipes: Path) -> str:
    """The cache key: the recipe's files, the hooks, packages, options, config, suite and build version."""
    key = Key()
    key.add("build", BUILD_VERSION)
    key.add("suite", SUITE)
    key.add("packages", "\n".join(image.packages))
    key.add("customize", "\n".join(image.customize))
    key.add("account", "\n".join(image.account))
    key.add("dpkg", "\n".join(image.dpkg_options))
    key.add("mmdebstrap", "\n".join(MMDEBSTRAP_OPTIONS))
    key.add("config", json.dumps(image.config(None), sort_keys=True))
    key.add("versions", json.dumps(image.versions))
    if image.after:  # only where there is one, so the other images keep their keys
        key.add("after", "\n".join(image.after))
    if image.then_recipe is not None:
        key.add("then", "\n".join(image.then))
        key.add("refs", "\n".join(image.refs))  # the archive names them: a new ref is a new archive
        for path in sorted(image.then_recipe.iterdir()):
            if path.is_file():
                key.add(f"then/{path.name}", path.read_bytes())
    folder = image.recipe_folder(recipes)
    for path in sorted(folder.iterdir()):
        if path.is_file():
            key.add(f"recipe/{path.name}", path.read_bytes())
    for name in image.hooks:
        key.add(f"hook/{name}", (HOOKS / name).read_bytes())
    return key.hex()


def pause_key() -> str:
    """The pause image's key: the module version names its source exactly (go.sum pins it)."""
    key = Key()
    key.add("build", BUILD_VERSION)
    key.add("module", f"{KUBE_MODULE}@{KUBE_VERSION}")
    key.add("cflags", " ".join(PAUSE_CFLAGS))
    key.add("config", json.dumps(pause_config(), sort_keys=True))
    return key.hex()


def debian_version(version: str, upstream: bool) -> str:
    """A Debian version without its epoch, and with ``upstream`` without its Debian revision."""
    version = version.split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if upstream else version


def env_versions(image: DebianImage, installed: Mapping[str, str]) -> dict[str, str]:
    """The recipe's version variables, set to what Debian installed."""
    return {
        name: debian_version(installed[package], upstream)
        for name, package, upstream in image.versions
        if package in installed
    }


def mmdebstrap_command(image: DebianImage, recipes: Path, sources: list[str]) -> list[str]:
    """The mmdebstrap run that writes the image's root file system as a tar to stdout."""
    merged_usr = [f"--hook-dir={MERGED_USR}"] if MERGED_USR.is_dir() else []
    return [
        "mmdebstrap",
        "--verbose",
        *MMDEBSTRAP_OPTIONS,
        *merged_usr,  # merged /usr as debian:bookworm-slim, without usrmerge and the perl it pulls in
        f"--include={','.join(image.packages)}",
        *(f"--dpkgopt={option}" for option in image.dpkg_options),
        f"--essential-hook={hook('account.sh', *image.account)}",
        f"--customize-hook={hook(image.customize[0], str(image.recipe_folder(recipes)), *image.customize[1:])}",
        *([f"--customize-hook={hook(image.then[0], str(image.then_recipe), *image.then[1:])}"] if image.then else []),
        f"--customize-hook={hook('finish.sh')}",
        *([f"--customize-hook={hook(*image.after)}"] if image.after else []),
        SUITE,
        "-",
        *sources,
    ]


def _build_debian(image: DebianImage, recipes: Path, work: Path) -> str:
    """Writes work/image.tar for ``image``; returns what the progress line adds."""
    need("mmdebstrap", "apt-get install mmdebstrap")
    if os.geteuid() != 0:
        raise ImageBuildError("building the test images needs root (mmdebstrap's root mode chroots and chowns)")
    sources = debian_sources()
    say(f"{image.name}: mmdebstrap {SUITE} from {sources[0].split()[1]} (a few minutes; log: {work / 'build.log'})")
    command = mmdebstrap_command(image, recipes, sources)
    with (work / "build.log").open("wb") as log:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env={**os.environ, **pip_settings()}
        )
        assert process.stdout is not None
        status = "var/lib/dpkg/status"
        broken: Exception | None = None
        try:
            layer, kept = write_layer(process.stdout, work / "layer.tar.gz", frozenset({status}))
        except (tarfile.TarError, OSError) as error:
            broken = error  # mmdebstrap failing ends its tar early: its exit code tells more
            time.sleep(1)
            if process.poll() is None:
                process.kill()
        finally:
            process.stdout.close()
        if process.wait() != 0 or broken is not None:
            problem = f"exit {process.returncode}" if process.returncode > 0 else f"its tar broke off: {broken}"
            raise ImageBuildError(f"{image.name}: mmdebstrap failed ({problem}):\n{tail(work / 'build.log')}")
    installed = package_versions(kept.get(status, b"").decode())
    versions = env_versions(image, installed)
    where = f"testbed/images/recipes/{image.recipe}" if image.recipe_root else f"shared/images/{image.recipe}"
    history = f"testbed/images/workloads.py {BUILD_VERSION}: mmdebstrap {SUITE} minbase, {where}"
    write_archive(work / "image.tar", layer, image.config(versions), image.refs, history)
    (work / "layer.tar.gz").unlink()
    return ", ".join(f"{name}={value}" for name, value in sorted(versions.items()))


def kubernetes_source() -> Path:
    """The k8s.io/kubernetes module's folder in Go's module cache, downloaded if it is not there."""
    go = need("go", "install Go (https://go.dev/dl or Debian's golang package)")
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    with tempfile.TemporaryDirectory() as outside_any_module:
        done = subprocess.run(
            [go, "mod", "download", "-json", f"{KUBE_MODULE}@{KUBE_VERSION}"],
            cwd=outside_any_module,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    try:
        found = json.loads(done.stdout)
    except json.JSONDecodeError:
        found = {}
    if done.returncode != 0 or "Dir" not in found:
        problem = found.get("Error") or done.stderr.strip() or f"exit {done.returncode}"
        raise ImageBuildError(
            f"go mod download {KUBE_MODULE}@{KUBE_VERSION} failed (Go module proxy reachable?): {problem}"
        )
    return Path(found["Dir"])


def pause_version(makefile: str) -> str:
    """-DVERSION as build/pause/Makefile gives it (v$(TAG)-$(REV)), with the module version as REV."""
    tag = re.search(r"^TAG \?= *(\S+)", makefile, re.MULTILINE)
    return f"v{tag.group(1) if tag else PAUSE.rsplit(':')[-1]}-{KUBE_VERSION}"


def _build_pause(work: Path) -> str:
    """Writes work/image.tar: pause.c compiled statically, as build/pause's Makefile and Dockerfile do."""
    gcc = need("gcc", "apt-get install gcc libc6-dev")
    pause_dir = kubernetes_source() / "build" / "pause"
    version = pause_version((pause_dir / "Makefile").read_text())
    binary = work / "pause"
    compiled = subprocess.run(
        [gcc, *PAUSE_CFLAGS, f"-DVERSION={version}", "-o", str(binary), str(pause_dir / "linux" / "pause.c")],
        capture_output=True,
        text=True,
        check=False,
    )
    if compiled.returncode != 0:
        raise ImageBuildError(
            f"gcc could not build pause.c (static libc: apt-get install libc6-dev): {compiled.stderr.strip()}"
        )
    plain = io.BytesIO()
    with tarfile.open(fileobj=plain, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tar.gettarinfo(str(binary), arcname="pause")
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mtime = 0
        info.mode = 0o755
        with binary.open("rb") as stream:
            tar.addfile(info, stream)
    plain.seek(0)
    layer, _ = write_layer(plain, work / "layer.tar.gz")
    history = (
        f"testbed/images/workloads.py {BUILD_VERSION}: gcc -Os -static build/pause/linux/pause.c of "
        f"{KUBE_MODULE}@{KUBE_VERSION}"
    )
    write_archive(work / "image.tar", layer, pause_config(), (PAUSE,), history)
    (work / "layer.tar.gz").unlink()
    binary.unlink()
    return version


def debian_archive(image: DebianImage, recipes: Path | None = None) -> Path:
    """One image's archive, from the cache or built now."""
    folder = recipes or recipes_dir()
    return cached(image.name, image_key(image, folder), lambda work: _build_debian(image, folder, work))


def build_images() -> ImageSet:
    """The five archives, from the cache or built now (minutes cold; a no-op when cached)."""
    recipes = recipes_dir()

    def debian(image: DebianImage) -> Path:
        return debian_archive(image, recipes)

    return ImageSet(
        postgres=debian(POSTGRES_IMAGE),
        redis=debian(REDIS_IMAGE),
        mariadb=debian(MARIADB_IMAGE),
        memcached=debian(MEMCACHED_IMAGE),
        pause=cached("pause", pause_key(), _build_pause),
    )


def main(names: list[str]) -> int:
    """Builds what is missing (the five, or the images named) and prints the archives' paths, one a line."""
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        say(f"no image named {', '.join(unknown)}: name one of {', '.join(BY_NAME)}, or none for the five")
        return 2
    try:
        archives = [debian_archive(BY_NAME[name]) for name in names] if names else list(build_images().archives)
    except ImageBuildError as error:
        say(str(error))
        return 1
    for path in archives:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
