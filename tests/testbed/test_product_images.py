"""The product images' parts that need no build: names, keys, and Metacontroller's image held to its own sources.

Metacontroller's Dockerfile, release build (``.goreleaser.yaml``) and release manifests are
read from its source archive in shared/metacontroller beside the repository
(``testbed.images.product.metacontroller_source``); without it those tests fail, saying
where to put it. Building and running the images is the data tier's
(``tests/data/test_product_images.py``).
"""

from __future__ import annotations

import re
import shlex
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml

from testbed.images import product, toolkit
from testbed.images.product import MC_VERSION

from ..support.dockerfiles import dockerfile, last
from ..support.prerequisites import Prerequisite

SOURCE = Prerequisite(
    f"Metacontroller v{MC_VERSION}'s source archive (shared/metacontroller)",
    product.metacontroller_source,
    toolkit.ImageBuildError,
)
REPO = Path(__file__).resolve().parents[2]


def source_file(name: str) -> str:
    """One file of Metacontroller's source tree, read from the archive."""
    with tarfile.open(SOURCE.get(), "r:gz") as tar:
        member = tar.extractfile(f"metacontroller-{MC_VERSION}/{name}")
        assert member is not None
        return member.read().decode()


def mc_dockerfile() -> list[tuple[str, str]]:
    return dockerfile(source_file("Dockerfile"))


@pytest.mark.shared  # reads Metacontroller's source archive beside the clone
def test_the_binary_is_where_the_dockerfile_copies_it_and_the_command() -> None:
    copy = last(mc_dockerfile(), "COPY").split()
    config = product.metacontroller_config()
    assert copy[-1] == product.MC_BINARY
    assert config["Cmd"] == yaml.safe_load(last(mc_dockerfile(), "CMD"))


@pytest.mark.shared  # reads Metacontroller's source archive beside the clone
def test_the_image_runs_as_the_dockerfiles_user_with_its_ids() -> None:
    steps = mc_dockerfile()
    account = next(rest for word, rest in steps if word == "RUN" and "adduser" in rest)
    name, uid = product.MC_ACCOUNT[:2]
    assert f"addgroup -g {uid} -S {name}" in account
    assert f"adduser -D -u {uid} -g {name} -S {name} -G {name}" in account
    assert product.metacontroller_config()["User"] == last(steps, "USER") == f"{name}:{name}"


@pytest.mark.shared  # reads Metacontroller's source archive beside the clone
def test_the_image_adds_the_packages_the_dockerfile_adds() -> None:
    install = next(rest for word, rest in mc_dockerfile() if word == "RUN" and "apk add" in rest)
    added = shlex.split(install.split("apk add", 1)[1])
    assert {word for word in added if not word.startswith("-")} == set(product.MC_PACKAGES)


@pytest.mark.shared  # reads Metacontroller's source archive beside the clone
def test_the_binary_is_built_with_the_release_builds_settings() -> None:
    release = yaml.safe_load(source_file(".goreleaser.yaml"))
    build = release["builds"][0]
    assert build["main"] == product.MC_PACKAGE
    assert dict(item.split("=", 1) for item in build["env"]) == product.RELEASE_ENV
    wanted = set(re.findall(r"-X (main\.\w+)=", build["ldflags"][0]))
    ours = product.release_ldflags("abc", "2026-01-01T00:00:00Z")
    assert set(re.findall(r"-X (main\.\w+)=", ours)) == wanted
    assert "-X main.version=4.17.2 " in ours
    assert ours.endswith("-s -w")  # REMOVE_DEBUG_SYMBOLS of a build without DEBUG


@pytest.mark.shared  # reads Metacontroller's source archive beside the clone
def test_the_image_is_named_as_the_release_manifests_run_it() -> None:
    statefulset = yaml.safe_load(source_file("manifests/production/metacontroller.yaml"))
    container = statefulset["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == product.METACONTROLLER
    assert container["command"] == [product.MC_BINARY]


@pytest.mark.shared  # reads Metacontroller's source archive beside the clone
def test_the_labels_are_the_release_builds() -> None:
    release = yaml.safe_load(source_file(".goreleaser.yaml"))
    labels = product.metacontroller_config("c0ffee", "2026-01-01T00:00:00Z")["Labels"]
    wanted = release["dockers_v2"][0]["labels"]
    assert set(labels) == set(wanted)
    assert labels["org.opencontainers.image.version"] == f"v{MC_VERSION}"
    assert labels["org.opencontainers.image.revision"] == "c0ffee"


def test_the_root_file_system_puts_the_binary_in_usr_bin_and_adds_the_account(tmp_path: Path) -> None:
    command = product.metacontroller_mmdebstrap(tmp_path / "metacontroller", ["deb http://m.example/d x main"])
    assert f"--customize-hook=copy-in {tmp_path / 'metacontroller'} /usr/bin" in command
    account = next(arg for arg in command if arg.startswith("--essential-hook="))
    assert " ".join(product.MC_ACCOUNT) in account
    assert "--include=ca-certificates" in command
    assert command[-3:] == [toolkit.SUITE, "-", "deb http://m.example/d x main"]


def test_a_missing_source_archive_says_where_to_put_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SHARDDB_METACONTROLLER_SRC", raising=False)
    monkeypatch.setenv("SHARDDB_SHARED", str(tmp_path))
    where = re.escape("place shared/metacontroller/metacontroller-v4.17.2.tar.gz")
    with pytest.raises(toolkit.ImageBuildError, match=where):
        product.metacontroller_source()


def test_another_archive_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    other = tmp_path / "other.tar.gz"
    with tarfile.open(other, "w:gz") as tar:
        tar.add(__file__, arcname="x")
    monkeypatch.setenv("SHARDDB_METACONTROLLER_SRC", str(other))
    with pytest.raises(toolkit.ImageBuildError, match=re.escape("is not Metacontroller v4.17.2's source")):
        product.metacontroller_source()


def test_the_key_changes_with_the_compiler() -> None:
    sha = product.MC_TAR_SHA256
    assert product.metacontroller_key(sha, "go1.26.8") == product.metacontroller_key(sha, "go1.26.8")
    assert product.metacontroller_key(sha, "go1.26.8") != product.metacontroller_key(sha, "go1.27.0")


@pytest.mark.parametrize("overlay", ["production", "dev"])
def test_the_hooks_image_carries_the_name_each_overlay_runs(overlay: str) -> None:
    kustomization = yaml.safe_load((REPO / "metacontroller" / "overlays" / overlay / "kustomization.yaml").read_text())
    pinned = [f"{entry['name']}:{entry['newTag']}" for entry in kustomization["images"]]
    assert pinned
    assert set(pinned) <= set(product.HOOKS_NAMES)


def test_the_hooks_image_has_a_third_tag_to_roll_to() -> None:
    assert len(set(product.HOOKS_NAMES)) == 3
    assert f"{product.HOOKS_REPOSITORY}:0.1.1" in product.HOOKS_NAMES


def fake_repo(root: Path) -> Path:
    for name in product.HOOKS_INPUTS:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    (root / "hooks" / "__pycache__").mkdir(parents=True)
    (root / "hooks" / "app.py").write_text("print('hooks')\n")
    return root


def test_the_hooks_key_follows_the_hooks_package_but_not_its_bytecode(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(product, "ROOT", fake_repo(tmp_path))
    before = product.hooks_key()
    (tmp_path / "hooks" / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    assert product.hooks_key() == before
    (tmp_path / "hooks" / "app.py").write_text("print('changed')\n")
    assert product.hooks_key() != before


def test_the_hooks_key_follows_the_base_and_the_dockerfile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(product, "ROOT", fake_repo(tmp_path))
    before = product.hooks_key()
    assert product.hooks_key("localhost/python:3.11") != before
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    assert product.hooks_key() != before
