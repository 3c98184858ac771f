"""The Patroni images the patroni tier runs: ``python -m tools.image.patroni`` builds what is missing.

Two archives, each cached outside the repository under a key of what it is made of
(``testbed.images.toolkit.cached``):

- the test image from Debian packages and PyPI (``testbed.images.workloads postgres-patroni``);
- the recipe users build (``examples/images/postgres-patroni/``), built as they build it: podman
  (on runc, ``testbed.real.machine.podman_runtime``) runs its Dockerfile, FROM the postgres test
  image (the official recipe made from Debian packages), since no registry can be reached here.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from testbed.images import workloads
from testbed.images.toolkit import BUILD_VERSION, ImageBuildError, Key, cached, need, pip_settings, say, tail
from testbed.real.machine import podman_runtime

from .builders import SECRET_ID, ulimits_below_own

RECIPE = workloads.EXAMPLE_RECIPES / "postgres-patroni"
RECIPE_NAME = "localhost/sharddb/postgres-patroni:15-4.1.5-recipe"
BASE_ARG = "POSTGRES_IMAGE"


@dataclass(frozen=True)
class PatroniImages:
    """The two archives: ``debian`` an OCI layout of one name, ``recipe`` a docker archive of one name."""

    debian: Path  # workloads.POSTGRES_PATRONI
    recipe: Path  # RECIPE_NAME

    @property
    def names(self) -> dict[str, Path]:
        return {workloads.POSTGRES_PATRONI: self.debian, RECIPE_NAME: self.recipe}


def build_command(base: str, ca_bundle: str, limits: tuple[str, ...] | None = None) -> list[str]:
    """podman's build of the recipe on runc: RUN steps in containers on the host's network, under limits it may set
    (``ulimits_below_own()`` unless ``limits`` are given)."""
    secret = ["--secret", f"id={SECRET_ID},src={ca_bundle}"] if ca_bundle else []
    return [
        "podman",
        "--runtime",
        podman_runtime(),
        "build",
        "--isolation",
        "oci",
        "--network",
        "host",
        "--pull=never",
        "--format",
        "docker",
        *(ulimits_below_own() if limits is None else limits),
        "--build-arg",
        f"{BASE_ARG}={base}",
        *secret,
        "-t",
        RECIPE_NAME,
        str(RECIPE),
    ]


def recipe_key(base_key: str) -> str:
    """The recipe image's key: its folder's files, its base's key and how podman is asked (less what is this
    machine's: the CA bundle's path and the limits, which change nothing in the image)."""
    key = Key()
    key.add("build", BUILD_VERSION)
    key.add("base", base_key)
    key.add("command", "\n".join(build_command(workloads.POSTGRES, "", limits=())[:-1]))
    for path in sorted(RECIPE.iterdir()):
        if path.is_file():
            key.add(f"recipe/{path.name}", path.read_bytes())
    return key.hex()


def _run(command: list[str], log: Path, what: str) -> None:
    with log.open("ab") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise ImageBuildError(f"{what} failed (exit {done.returncode}):\n{tail(log)}")


def _build_recipe(base_archive: Path, work: Path) -> str:
    """Writes work/image.tar: the base loaded into podman under its official name, the recipe built on it, saved."""
    need("podman", "apt-get install podman runc")
    need(podman_runtime(), f"apt-get install {podman_runtime()}")
    log = work / "build.log"
    tag = workloads.POSTGRES.rsplit(":", 1)[1]
    say(f"postgres-patroni recipe: podman build on {podman_runtime()} FROM {workloads.POSTGRES} (log: {log})")
    _run(["podman", "pull", "-q", f"oci-archive:{base_archive}:{tag}"], log, f"podman pull of {base_archive}")
    _run(build_command(workloads.POSTGRES, pip_settings()["SHARDDB_PIP_CERT"]), log, "podman build of the recipe")
    save = ["podman", "save", "--format", "docker-archive", "-o", str(work / "image.tar"), RECIPE_NAME]
    _run(save, log, "podman save")
    return RECIPE_NAME


def build_patroni_images() -> PatroniImages:
    """Both archives, from the cache or built now (many minutes cold: Debian, PyPI and podman; seconds cached)."""
    recipes = workloads.recipes_dir()
    debian = workloads.debian_archive(workloads.POSTGRES_PATRONI_IMAGE, recipes)
    base = workloads.debian_archive(workloads.POSTGRES_IMAGE, recipes)
    base_key = workloads.image_key(workloads.POSTGRES_IMAGE, recipes)
    recipe = cached("postgres-patroni-recipe", recipe_key(base_key), lambda work: _build_recipe(base, work))
    return PatroniImages(debian, recipe)


def main() -> int:
    """Builds what is missing and prints each archive's path and its image's name, one a line."""
    try:
        images = build_patroni_images()
    except ImageBuildError as error:
        say(str(error))
        return 1
    for name, path in images.names.items():
        print(path, name, sep="\t")
    return 0


if __name__ == "__main__":
    sys.exit(main())
