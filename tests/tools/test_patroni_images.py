"""How the Patroni recipe is built for the Patroni tier: as users build it, with podman on runc."""

from __future__ import annotations

import pytest

from tools.image import patroni
from tools.image.builders import SECRET_ID


def test_podman_builds_the_recipe_on_runc_with_run_steps_in_containers() -> None:
    command = patroni.build_command("docker.io/library/postgres:15", "")
    assert command[:4] == ["podman", "--runtime", "runc", "build"]
    assert command[command.index("--isolation") + 1] == "oci"
    assert command[-1] == str(patroni.RECIPE)


def test_the_recipe_is_built_on_the_postgres_test_image_never_pulled() -> None:
    command = patroni.build_command("docker.io/library/postgres:15", "")
    assert "--pull=never" in command
    assert f"{patroni.BASE_ARG}=docker.io/library/postgres:15" in command
    assert command[command.index("-t") + 1] == patroni.RECIPE_NAME


def test_its_containers_get_limits_below_the_callers_own() -> None:
    command = patroni.build_command("base", "")
    limits = [command[i + 1] for i, arg in enumerate(command) if arg == "--ulimit"]
    assert [limit.split("=")[0] for limit in limits] == ["nofile", "nproc"]


def test_the_ca_bundle_goes_in_only_as_the_build_secret_and_is_not_part_of_the_key() -> None:
    command = patroni.build_command("base", "/etc/ssl/ca.pem")
    assert command[command.index("--secret") + 1] == f"id={SECRET_ID},src=/etc/ssl/ca.pem"
    assert "--secret" not in patroni.build_command("base", "")
    assert patroni.recipe_key("k") == patroni.recipe_key("k") != patroni.recipe_key("other")


def test_the_key_is_the_same_whatever_limits_this_machine_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    before = patroni.recipe_key("k")
    monkeypatch.setattr(patroni, "ulimits_below_own", lambda: ("--ulimit", "nofile=7:7"))
    assert "nofile=7:7" in patroni.build_command("base", "")
    assert patroni.recipe_key("k") == before
