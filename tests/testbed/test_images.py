"""The test images' parts that need no build: cache keys, configs against the official recipes, the archive.

The recipes are read from shared/images beside the repository (``testbed.images.workloads.recipes_dir``);
the tests that compare against them are marked ``shared`` (outside ``make unit``), and without
the folder they fail, saying where to put shared/.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import shlex
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from testbed.images import toolkit, workloads

from ..support.dockerfiles import dockerfile, last
from ..support.prerequisites import Prerequisite

RECIPES = Prerequisite("the official images' recipes (shared/images)", workloads.recipes_dir, toolkit.ImageBuildError)
# The source tarball's URL and checksum say nothing about Debian's redis-server binary.
DROPPED_ENV = {"REDIS_DOWNLOAD_URL", "REDIS_DOWNLOAD_SHA"}
BASE_ENV = {"PATH": toolkit.DEFAULT_PATH}  # what debian:bookworm-slim sets


def recipe(folder: str) -> list[tuple[str, str]]:
    return dockerfile((RECIPES.get() / folder / "Dockerfile").read_text())


def env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    """The ENV values in order, ``$VAR`` and ``${VAR}`` expanded as Docker does, from the base image's."""
    values = dict(BASE_ENV)

    def expand(value: str) -> str:
        return re.sub(r"\$\{?(\w+)\}?", lambda match: values.get(match.group(1), ""), value)

    for word, rest in instructions:
        if word != "ENV":
            continue
        legacy = "=" not in rest.split()[0]  # ENV NAME value, as the recipes write it
        pairs = [rest.split(None, 1)] if legacy else [item.split("=", 1) for item in shlex.split(rest)]
        for name, value in pairs:
            values[name] = expand(value)
    return values


def config_env(config: dict[str, Any]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in config["Env"])


def fake_recipes(root: Path) -> Path:
    for image in (workloads.POSTGRES_IMAGE, workloads.REDIS_IMAGE):
        folder = root / image.recipe
        folder.mkdir(parents=True)
        for name in image.files:
            (folder / name).write_text(f"{name} of {image.name}\n")
    return root


def tar_of(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return out.getvalue()


def file_member(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def device_member(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    return info


def read(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.extractfile(name)
    assert member is not None
    return member.read()


def blob_path(digest: str) -> str:
    return f"blobs/sha256/{digest.removeprefix('sha256:')}"


def test_the_cache_key_changes_when_a_recipe_file_changes(tmp_path: Path) -> None:
    recipes = fake_recipes(tmp_path)
    before = workloads.image_key(workloads.POSTGRES_IMAGE, recipes)
    (recipes / "postgres-15" / "docker-entrypoint.sh").write_text("changed\n")
    assert workloads.image_key(workloads.POSTGRES_IMAGE, recipes) != before


def test_the_cache_key_is_the_same_for_the_same_inputs(tmp_path: Path) -> None:
    recipes = fake_recipes(tmp_path)
    assert workloads.image_key(workloads.REDIS_IMAGE, recipes) == workloads.image_key(workloads.REDIS_IMAGE, recipes)


def test_the_cache_folder_follows_the_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SHARDDB_IMAGE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert toolkit.cache_root() == tmp_path / "xdg" / "sharddb" / "images"
    monkeypatch.setenv("SHARDDB_IMAGE_CACHE", str(tmp_path / "mine"))
    assert toolkit.cache_root() == tmp_path / "mine"


def test_missing_recipes_say_where_to_put_shared(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SHARDDB_IMAGES_RECIPES", str(tmp_path))
    with pytest.raises(toolkit.ImageBuildError, match="place shared/ beside the repository"):
        workloads.recipes_dir()


@pytest.mark.shared
def test_postgres_runs_the_recipes_entrypoint_command_and_stop_signal() -> None:
    steps, config = recipe("postgres-15"), workloads.postgres_config()
    assert config["Entrypoint"] == json.loads(last(steps, "ENTRYPOINT"))
    assert config["Cmd"] == json.loads(last(steps, "CMD"))
    assert config["StopSignal"] == last(steps, "STOPSIGNAL")


@pytest.mark.shared
def test_postgres_exposes_and_mounts_what_the_recipe_declares() -> None:
    steps, config = recipe("postgres-15"), workloads.postgres_config()
    assert set(config["ExposedPorts"]) == {f"{port}/tcp" for port in last(steps, "EXPOSE").split()}
    assert set(config["Volumes"]) == set(last(steps, "VOLUME").split())


@pytest.mark.shared
def test_postgres_sets_every_variable_of_the_recipe() -> None:
    wanted = env(recipe("postgres-15"))
    given = config_env(workloads.postgres_config({"GOSU_VERSION": "1.14", "PG_VERSION": "15.20-0+deb12u1"}))
    versions = {name for name, _, _ in workloads.POSTGRES_IMAGE.versions}
    assert set(given) == set(wanted)
    assert {name: value for name, value in given.items() if name not in versions} == {
        name: value for name, value in wanted.items() if name not in versions
    }


@pytest.mark.shared
def test_redis_config_matches_the_recipe() -> None:
    steps, config = recipe("redis-7.0"), workloads.redis_config({"GOSU_VERSION": "1.14", "REDIS_VERSION": "7.0.15"})
    assert config["Entrypoint"] == json.loads(last(steps, "ENTRYPOINT"))
    assert config["Cmd"] == json.loads(last(steps, "CMD"))
    assert config["WorkingDir"] == last(steps, "WORKDIR")
    assert set(config["ExposedPorts"]) == {f"{port}/tcp" for port in last(steps, "EXPOSE").split()}
    assert set(config["Volumes"]) == set(last(steps, "VOLUME").split())
    assert set(config_env(config)) == set(env(steps)) - DROPPED_ENV


def test_version_variables_name_debians_versions() -> None:
    installed = {"gosu": "1.14-1+b10", "redis-server": "5:7.0.15-1~deb12u10", "postgresql-15": "15.20-0+deb12u1"}
    assert workloads.env_versions(workloads.REDIS_IMAGE, installed) == {
        "GOSU_VERSION": "1.14",
        "REDIS_VERSION": "7.0.15",
    }
    assert workloads.env_versions(workloads.POSTGRES_IMAGE, installed)["PG_VERSION"] == "15.20-0+deb12u1"


def test_pause_version_is_the_makefiles_tag_and_the_module_version() -> None:
    assert workloads.pause_version("REGISTRY ?= x\nTAG ?= 3.10.1\n") == f"v3.10.1-{workloads.KUBE_VERSION}"


def test_pause_runs_as_nobody_with_the_binary_as_entrypoint() -> None:
    config = workloads.pause_config()
    assert (config["User"], config["Entrypoint"]) == ("65535:65535", ["/pause"])


def test_mirrors_come_from_the_machines_apt_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
        "Types: deb\nURIs: http://mirror.example/security\nSuites: bookworm-security\nComponents: main\n"
    )
    (tmp_path / "sources.list.d" / "other.list").write_text(
        "deb [arch=amd64] https://elsewhere.example/apt stable main\n"
    )
    assert toolkit.debian_sources("bookworm", tmp_path) == [
        "deb http://mirror.example/debian bookworm main",
        "deb http://mirror.example/debian bookworm-updates main",
        "deb http://mirror.example/security bookworm-security main",
    ]


def test_mirrors_fall_back_to_deb_debian_org(tmp_path: Path) -> None:
    assert toolkit.debian_sources("bookworm", tmp_path)[0] == "deb http://deb.debian.org/debian bookworm main"


def test_a_layer_carries_no_device_nodes(tmp_path: Path) -> None:
    source = tar_of((device_member("./dev/null"), b""), (file_member("./etc/hostname"), b"x\n"))
    layer, _ = toolkit.write_layer(io.BytesIO(source), tmp_path / "layer.tar.gz")
    with tarfile.open(layer.path, "r:gz") as tar:
        assert tar.getnames() == ["./etc/hostname"]


def test_the_archive_names_one_manifest_once_per_ref(tmp_path: Path) -> None:
    layer, _ = toolkit.write_layer(io.BytesIO(tar_of((file_member("a"), b"a"))), tmp_path / "layer.tar.gz")
    toolkit.write_archive(
        tmp_path / "image.tar", layer, workloads.redis_config(), (workloads.REDIS, workloads.REDIS_ROLLOUT), "t"
    )
    with tarfile.open(tmp_path / "image.tar") as tar:
        manifests = json.loads(read(tar, "index.json"))["manifests"]
    assert [entry["annotations"]["io.containerd.image.name"] for entry in manifests] == [
        workloads.REDIS,
        workloads.REDIS_ROLLOUT,
    ]
    assert len({entry["digest"] for entry in manifests}) == 1


def test_the_config_names_the_uncompressed_layer_and_the_manifest_the_gzip_blob(tmp_path: Path) -> None:
    layer, _ = toolkit.write_layer(io.BytesIO(tar_of((file_member("a"), b"a"))), tmp_path / "layer.tar.gz")
    toolkit.write_archive(tmp_path / "image.tar", layer, workloads.pause_config(), (workloads.PAUSE,), "t")
    with tarfile.open(tmp_path / "image.tar") as tar:
        index = json.loads(read(tar, "index.json"))
        manifest = json.loads(read(tar, blob_path(index["manifests"][0]["digest"])))
        config = json.loads(read(tar, blob_path(manifest["config"]["digest"])))
        compressed = read(tar, blob_path(manifest["layers"][0]["digest"]))
    assert manifest["layers"][0]["size"] == len(compressed)
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(gzip.decompress(compressed)).hexdigest()}"]


# --- mariadb and memcached: recipes of this repository's own (none in shared/images) ----------


def test_mariadb_runs_its_entrypoint_as_root_with_sigterm_as_the_stop_signal() -> None:
    config = workloads.mariadb_config()
    assert (config["Entrypoint"], config["Cmd"]) == (["docker-entrypoint.sh"], ["mariadbd"])
    assert "User" not in config  # the entrypoint switches to mysql (uid 999) with gosu
    assert "StopSignal" not in config  # SIGTERM: mariadbd's normal shutdown
    assert (set(config["ExposedPorts"]), set(config["Volumes"])) == ({"3306/tcp"}, {"/var/lib/mysql"})


def test_memcached_runs_as_memcache_on_its_port() -> None:
    config = workloads.memcached_config({"MEMCACHED_VERSION": "1.6.18"})
    assert (config["User"], config["Entrypoint"], config["Cmd"]) == (
        "memcache",
        ["docker-entrypoint.sh"],
        ["memcached"],
    )
    assert set(config["ExposedPorts"]) == {"11211/tcp"}
    assert "MEMCACHED_VERSION=1.6.18" in config["Env"]


def test_the_mariadb_and_memcached_accounts_are_the_official_images_ids() -> None:
    assert workloads.MARIADB_IMAGE.account[:3] == ("mysql", "999", "/var/lib/mysql")
    assert workloads.MEMCACHED_IMAGE.account[:2] == ("memcache", "11211")


@pytest.mark.parametrize("image", [workloads.MARIADB_IMAGE, workloads.MEMCACHED_IMAGE], ids=lambda image: image.name)
def test_an_image_with_its_recipe_in_this_repository_needs_no_shared_folder(
    image: workloads.DebianImage, tmp_path: Path
) -> None:
    assert image.recipe_folder(tmp_path) == toolkit.HOOKS / image.recipe
    assert workloads.image_key(image, tmp_path) == workloads.image_key(image, tmp_path / "elsewhere")
    for name in image.files:
        assert (toolkit.HOOKS / image.recipe / name).is_file()


def test_the_mariadb_run_folder_is_made_after_finish_empties_run(tmp_path: Path) -> None:
    command = workloads.mmdebstrap_command(
        workloads.MARIADB_IMAGE, tmp_path, ["deb http://mirror.example/debian bookworm main"]
    )
    hooks = [arg for arg in command if arg.startswith("--customize-hook=")]
    assert [hook.split()[1].rsplit("/", 1)[-1] for hook in hooks] == ["mariadb.sh", "finish.sh", "run-dir.sh"]
    assert hooks[-1].endswith('"$1" mysqld mysql 1777')


def test_an_image_without_a_later_hook_ends_with_finish(tmp_path: Path) -> None:
    recipes = fake_recipes(tmp_path)
    command = workloads.mmdebstrap_command(
        workloads.REDIS_IMAGE, recipes, ["deb http://mirror.example/debian bookworm main"]
    )
    assert [arg for arg in command if arg.startswith("--customize-hook=")][-1].split()[1].endswith("finish.sh")
    assert workloads.REDIS_IMAGE.after == ()


def test_mariadb_version_is_debians_whole_version() -> None:
    installed = {"gosu": "1.14-1+b10", "mariadb-server": "1:10.11.19-0+deb12u1"}
    assert workloads.env_versions(workloads.MARIADB_IMAGE, installed) == {
        "GOSU_VERSION": "1.14",
        "MARIADB_VERSION": "10.11.19-0+deb12u1",
    }


@pytest.mark.parametrize(
    ("shell", "script"),
    [("bash", "mariadb-10.11/docker-entrypoint.sh"), ("sh", "memcached-1.6/docker-entrypoint.sh")],
)
def test_the_repositorys_own_entrypoints_parse(shell: str, script: str) -> None:
    done = subprocess.run([shell, "-n", str(toolkit.HOOKS / script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
