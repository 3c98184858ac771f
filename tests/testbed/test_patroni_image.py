"""The Patroni images' parts that need no build: the recipe users build, and the test image held to it."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from hooks.replication.config import PATRONI_VERSION
from testbed.images import toolkit, workloads

from ..support.dockerfiles import dockerfile, last

RECIPE = workloads.EXAMPLE_RECIPES / "postgres-patroni"
IMAGE = workloads.POSTGRES_PATRONI_IMAGE
ENTRYPOINT = RECIPE / "patroni-entrypoint.sh"


def steps() -> list[tuple[str, str]]:
    return dockerfile((RECIPE / "Dockerfile").read_text())


def pins() -> dict[str, str]:
    lines = [line.split("#")[0].strip() for line in (RECIPE / "requirements.txt").read_text().splitlines()]
    return dict(line.split("==", 1) for line in lines if line)


def test_the_recipe_pins_every_package_and_patroni_is_the_version_the_hooks_render_for() -> None:
    lines = [line.split("#")[0].strip() for line in (RECIPE / "requirements.txt").read_text().splitlines()]
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.+-]+", line) for line in lines if line)
    assert pins()["patroni"] == PATRONI_VERSION


def test_the_recipe_runs_as_postgres_by_number_and_stops_on_patronis_signal() -> None:
    assert last(steps(), "USER") == "999:999"
    assert last(steps(), "STOPSIGNAL") == "SIGTERM"


def test_the_test_image_runs_as_the_recipe_says() -> None:
    config = workloads.postgres_patroni_config()
    assert config["User"] == last(steps(), "USER")
    assert config["StopSignal"] == last(steps(), "STOPSIGNAL")
    assert config["Entrypoint"] == json.loads(last(steps(), "ENTRYPOINT"))
    assert "Cmd" not in config, "the recipe's ENTRYPOINT drops the base image's CMD"
    assert set(config["ExposedPorts"]) == {f"{port}/tcp" for port in last(steps(), "EXPOSE").split()}


def test_the_test_image_puts_patronis_venv_first_on_path_as_the_recipe_does() -> None:
    env = dict(item.split("=", 1) for item in workloads.postgres_patroni_config()["Env"])
    base = dict(item.split("=", 1) for item in workloads.postgres_config()["Env"])
    assert last(steps(), "ENV") == "PATH=/opt/patroni/bin:${PATH}"
    assert env["PATH"] == f"/opt/patroni/bin:{base['PATH']}"
    assert {"PIP_DISABLE_PIP_VERSION_CHECK", "PYTHONDONTWRITEBYTECODE"} <= set(env)


def test_the_test_image_makes_the_postgres_image_then_the_recipes_steps(tmp_path: Path) -> None:
    command = workloads.mmdebstrap_command(IMAGE, tmp_path, ["deb http://mirror.example/debian bookworm main"])
    hooks = [arg.split()[1].rsplit("/", 1)[-1] for arg in command if arg.startswith("--customize-hook=")]
    assert hooks == ["postgres.sh", "patroni.sh", "finish.sh"]
    assert set(workloads.POSTGRES_IMAGE.packages) < set(IMAGE.packages)


def test_the_test_images_key_follows_the_recipes_files(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe"
    shutil.copytree(RECIPE, recipe)
    image = dataclasses.replace(IMAGE, then_recipe=recipe)
    (tmp_path / IMAGE.recipe).mkdir()  # the official postgres recipe's folder, empty here
    before = workloads.image_key(image, tmp_path)
    (recipe / "requirements.txt").write_text("patroni==0.0.0\n")
    assert workloads.image_key(image, tmp_path) != before


def test_pip_in_the_chroot_gets_only_the_machines_ca_bundle_and_index(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("x")
    env = {"PIP_CERT": str(bundle), "REQUESTS_CA_BUNDLE": "/elsewhere.pem", "PIP_FIND_LINKS": "/opt/wheels"}
    assert toolkit.pip_settings(env, tmp_path / "absent.conf") == {
        "SHARDDB_PIP_CERT": str(bundle),
        "SHARDDB_PIP_INDEX_URL": "",
    }
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\ncert = {bundle}\nindex-url = https://pypi.example/simple\n")
    assert toolkit.pip_settings({}, conf) == {
        "SHARDDB_PIP_CERT": str(bundle),
        "SHARDDB_PIP_INDEX_URL": "https://pypi.example/simple",
    }


def entrypoint(tmp_path: Path, *args: str, config: str | None) -> subprocess.CompletedProcess[str]:
    """The entrypoint under sh, with a stand-in ``patroni`` that prints what it was given."""
    (tmp_path / "patroni").write_text('#!/bin/sh\necho "patroni $*"\n')
    (tmp_path / "patroni").chmod(0o755)
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}"}
    if config is not None:
        env["PATRONI_CONFIG_FILE"] = config
    return subprocess.run(["sh", str(ENTRYPOINT), *args], env=env, capture_output=True, text=True, check=False)


def test_the_entrypoint_hands_patroni_its_configuration_file(tmp_path: Path) -> None:
    config = tmp_path / "patroni.yml"
    config.write_text("{}")
    done = entrypoint(tmp_path, config=str(config))
    assert (done.returncode, done.stdout) == (0, f"patroni {config}\n")


def test_the_entrypoint_refuses_to_start_without_its_configuration_file(tmp_path: Path) -> None:
    unset, missing = entrypoint(tmp_path, config=None), entrypoint(tmp_path, config=str(tmp_path / "absent.yml"))
    assert (unset.returncode, missing.returncode) == (64, 66)
    assert "PATRONI_CONFIG_FILE is not set" in unset.stderr
    assert "absent.yml" in missing.stderr
    assert "patroni" not in unset.stdout + missing.stdout


def test_the_entrypoint_runs_a_command_it_is_given_instead(tmp_path: Path) -> None:
    done = entrypoint(tmp_path, "echo", "patronictl list", config=None)
    assert (done.returncode, done.stdout) == (0, "patronictl list\n")
