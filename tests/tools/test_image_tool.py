"""``make image``'s parts that need no builder: which builder, what it is asked, and what counts as passing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tools.image.__main__ import ROOT, default_base, pip_ca_bundle
from tools.image.builders import Builder, ImageConfig, NoBuilderError, find_builder, ulimits_below_own
from tools.image.checks import PROBE, probe_checks
from tools.image.chroot import Launch, command, user_ids

PASSWD = "root:x:0:0:root:/root:/bin/bash\nnonroot:x:65532:65532::/home/nonroot:/sbin/nologin\n"
GROUP = "root:x:0:\nnonroot:x:65532:\nstaff:x:50:\n"


def on_path(*names: str) -> dict[str, str | None]:
    return {name: f"/usr/bin/{name}" for name in names}


def test_docker_is_used_only_when_its_engine_answers() -> None:
    found = on_path("docker", "podman")
    assert find_builder({}, found.get, lambda: True).name == "docker"
    assert find_builder({}, found.get, lambda: False).name == "podman"


def test_podman_comes_before_buildah() -> None:
    assert find_builder({}, on_path("buildah", "podman").get, lambda: False).name == "podman"
    assert find_builder({}, on_path("buildah").get, lambda: False).name == "buildah"


def test_builder_variable_picks_one_that_is_installed() -> None:
    assert find_builder({"BUILDER": "buildah"}, on_path("podman", "buildah").get, lambda: True).name == "buildah"
    with pytest.raises(NoBuilderError, match="BUILDER=buildah, but buildah is not on PATH"):
        find_builder({"BUILDER": "buildah"}, on_path("podman").get, lambda: True)
    with pytest.raises(NoBuilderError, match="expected one of docker, podman, buildah"):
        find_builder({"BUILDER": "kaniko"}, on_path("podman").get, lambda: True)


def test_no_builder_says_how_to_get_one() -> None:
    with pytest.raises(NoBuilderError, match=r"docker is installed, but no engine answers.*apt-get install podman"):
        find_builder({}, on_path("docker").get, lambda: False)


def test_extra_run_options_come_from_image_run_args() -> None:
    builder = find_builder({"IMAGE_RUN_ARGS": "--runtime runc --ulimit nproc=4096:4096"}, on_path("podman").get, bool)
    run = builder.run("img", "check", 8080)
    assert run[-5:] == ["--runtime", "runc", "--ulimit", "nproc=4096:4096", "img"]


def test_the_ca_bundle_goes_in_as_a_build_secret_only() -> None:
    build = Builder("podman").build("tag", "base", Path("/src"), Path("/etc/ssl/ca.pem"))
    assert build[build.index("--secret") + 1] == "id=pip-ca,src=/etc/ssl/ca.pem"
    assert [arg for arg in build if "ca.pem" in arg] == ["id=pip-ca,src=/etc/ssl/ca.pem"]
    assert "--secret" not in Builder("podman").build("tag", "base", Path("/src"), None)


def test_podman_and_buildah_build_without_a_container_runtime_and_keep_the_healthcheck() -> None:
    for name in ("podman", "buildah"):
        build = Builder(name).build("tag", "base", Path("/src"), None)
        assert build[build.index("--isolation") + 1] == "chroot"
        assert build[build.index("--format") + 1] == "docker"
    assert Builder("docker").build_env() == {"DOCKER_BUILDKIT": "1"}


def test_podman_runs_the_image_with_runc_where_runc_is_installed() -> None:
    """crun, podman's default, refuses a hybrid cgroup layout whose cgroup2 holds a controller."""
    run = find_builder({}, on_path("podman", "runc").get, bool).run("img", "check", 8080)
    assert run[:4] == ["podman", "--runtime", "runc", "run"]
    assert find_builder({"BUILDER": "podman"}, on_path("podman", "runc").get, bool).runtime == "runc"


def test_podman_keeps_its_own_runtime_where_runc_is_missing() -> None:
    assert find_builder({}, on_path("podman").get, bool).run("img", "check", 8080)[:2] == ["podman", "run"]


def test_the_container_runs_as_the_images_user_on_a_read_only_root() -> None:
    run = Builder("docker").run("img", "check", 9000)
    assert "--user" not in run, "the image's own USER is what is checked"
    assert {"--read-only", "--detach"} <= set(run)
    assert run[run.index("--tmpfs") + 1] == "/tmp"
    assert run[run.index("--cap-drop") + 1] == "ALL"
    assert run[run.index("--security-opt") + 1] == "no-new-privileges"
    assert {"SHARDDB_HOST=127.0.0.1", "SHARDDB_PORT=9000"} <= set(run)
    assert run[-1] == "img"


def test_buildah_images_are_run_from_their_filesystem() -> None:
    assert not Builder("buildah").runs_containers
    assert Builder("podman").runs_containers


def test_image_config_reads_docker_and_oci_keys() -> None:
    raw = {"User": "65532:65532", "Env": ["PATH=/opt/venv/bin:/usr/bin", "A=b=c"], "Entrypoint": ["python", "-m"]}
    config = ImageConfig.from_json(json.dumps({**raw, "Cmd": ["hooks"], "WorkingDir": "/app"}))
    assert config.command == ["python", "-m", "hooks"]
    assert config.environment == {"PATH": "/opt/venv/bin:/usr/bin", "A": "b=c"}
    assert (config.user, config.workdir) == ("65532:65532", "/app")
    assert ImageConfig.from_json("null").workdir == "/"


def test_the_images_user_is_read_from_its_own_passwd_and_group() -> None:
    assert user_ids("65532:65532", PASSWD, GROUP) == (65532, 65532)
    assert user_ids("nonroot", PASSWD, GROUP) == (65532, 65532)
    assert user_ids("nonroot:staff", PASSWD, GROUP) == (65532, 50)
    assert user_ids("1234", PASSWD, GROUP) == (1234, 1234)
    assert user_ids("", PASSWD, GROUP) == (0, 0)
    with pytest.raises(ValueError, match="user nobody is not in the image's /etc/passwd"):
        user_ids("nobody", PASSWD, GROUP)


def test_the_chroot_launch_runs_in_a_private_mount_namespace() -> None:
    launch = Launch("/r", 65532, 65532, "/app", {"PATH": "/opt/venv/bin"}, ["python", "-m", "hooks"])
    line = command(launch, "/usr/bin/unshare", "/venv/python")
    assert line[:4] == ["/usr/bin/unshare", "--mount", "--propagation", "private"]
    assert line[4:7] == ["/venv/python", "-m", "tools.image.chroot"]
    assert Launch.from_json(line[7]) == launch


def test_the_default_base_is_the_dockerfiles() -> None:
    assert default_base((ROOT / "Dockerfile").read_text()).startswith("docker.io/library/python:3.11.")


def test_the_build_trusts_what_the_machines_pip_trusts(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    assert pip_ca_bundle({"PIP_CERT": str(bundle)}, {"global.cert": "/elsewhere"}) == bundle
    assert pip_ca_bundle({}, {"global.cert": str(bundle)}) == bundle
    assert pip_ca_bundle({}, {}) is None
    assert pip_ca_bundle({}, {"global.cert": str(tmp_path / "missing.pem")}) is None


def test_probe_reports_the_user_and_what_a_write_meets(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir(mode=0o500)
    proc = f"/proc/{os.getpid()}"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, proc, str(tmp_path), "/", "/missing"],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(done.stdout)
    assert set(report["uid"]) == {os.getuid()}
    assert report["writes"] == {"/": "written", "/missing": "ENOENT"}
    assert list(tmp_path.iterdir()) == [tmp_path / "ro"], "the probe leaves nothing behind"


def test_a_root_service_or_a_writable_root_fails() -> None:
    writes = {"/": "EROFS", "/app": "EROFS", "/tmp": "written"}
    good: dict[str, Any] = {"uid": [65532] * 4, "gid": [65532] * 4, "writes": writes}
    assert all(check.ok for check in probe_checks(good, 65532, 65532))
    as_root = {**good, "uid": [0] * 4, "gid": [0] * 4}
    assert [c.name for c in probe_checks(as_root, 0, 0) if not c.ok] == ["runs as the image's non-root user"]
    writable = {**good, "writes": {**good["writes"], "/app": "written"}}
    assert [c.name for c in probe_checks(writable, 65532, 65532) if not c.ok] == ["/app is read-only"]


def test_docker_and_podman_save_every_name_into_one_docker_archive() -> None:
    names = ["ghcr.io/example/sharddb-hooks:0.1.0", "ghcr.io/example/sharddb-hooks:dev"]
    archive = Path("/out/hooks.tar")
    assert Builder("docker").save(names, archive) == ["docker", "save", "-o", "/out/hooks.tar", *names]
    podman = Builder("podman").save(names, archive)
    assert podman[:2] == ["podman", "save"]
    assert podman[podman.index("--format") + 1] == "docker-archive"
    assert "--multi-image-archive" in podman
    assert podman[-2:] == names


def test_buildah_saves_one_name_and_says_so_for_more() -> None:
    archive = Path("/out/hooks.tar")
    assert Builder("buildah").save(["a:1"], archive) == ["buildah", "push", "a:1", "docker-archive:/out/hooks.tar:a:1"]
    with pytest.raises(NoBuilderError, match="one name per archive"):
        Builder("buildah").save(["a:1", "a:2"], archive)


def test_podman_runs_the_image_with_limits_below_its_callers_own() -> None:
    """Without CAP_SYS_RESOURCE the runtime cannot set podman's default of 1048576 open files."""
    run = find_builder({}, on_path("podman", "runc").get, bool).run("img", "check", 8080)
    limits = [run[i + 1] for i, arg in enumerate(run) if arg == "--ulimit"]
    assert [limit.split("=")[0] for limit in limits] == ["nofile", "nproc"]
    assert ulimits_below_own(lambda _which: (100, 100)) == ("--ulimit", "nofile=50:50", "--ulimit", "nproc=50:50")


def test_limits_given_in_image_run_args_replace_the_defaults() -> None:
    run = find_builder({"IMAGE_RUN_ARGS": "--ulimit nofile=64:64"}, on_path("podman").get, bool).run("i", "c", 1)
    assert run.count("--ulimit") == 1
