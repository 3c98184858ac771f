"""The machine check names each missing prerequisite in one line, with how to get it, on layouts this machine lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.real import machine


def cgroup_tree(root: Path, layout: str, controllers: str = "") -> Path:
    """A fake ``/sys/fs/cgroup`` as the kernel mounts it for ``layout``."""
    if layout == "v2":
        root.mkdir(parents=True)
        (root / "cgroup.controllers").write_text(controllers + "\n")
        return root
    for name in ("cpu", "memory", "pids", "systemd"):
        (root / name).mkdir(parents=True)
        (root / name / "cgroup.procs").write_text("")
    if layout == "hybrid":
        (root / "unified").mkdir()
        (root / "unified" / "cgroup.controllers").write_text(controllers + "\n")
    return root


def only(*programs: str) -> machine.Which:
    return lambda program: f"/usr/bin/{program}" if program in programs else None


@pytest.mark.parametrize(
    ("layout", "controllers", "expected"),
    [
        ("v1", "", machine.Cgroups("v1", ())),
        ("hybrid", "", machine.Cgroups("hybrid", ())),
        ("hybrid", "hugetlb", machine.Cgroups("hybrid", ("hugetlb",))),
        ("v2", "cpuset cpu io memory pids", machine.Cgroups("v2", ("cpuset", "cpu", "io", "memory", "pids"))),
    ],
)
def test_the_cgroup_layout_is_read_from_the_mounted_tree(
    tmp_path: Path, layout: str, controllers: str, expected: machine.Cgroups
) -> None:
    assert machine.read_cgroups(cgroup_tree(tmp_path / "cgroup", layout, controllers)) == expected


def test_a_hybrid_layout_without_runc_is_one_line_naming_runc_and_why_crun_will_not_do(tmp_path: Path) -> None:
    cgroups = machine.read_cgroups(cgroup_tree(tmp_path / "cgroup", "hybrid", "hugetlb"))
    [missing] = machine.check_cgroups(cgroups, only("crun", "podman"))
    line = str(missing)
    assert "\n" not in line
    assert "apt-get install runc" in line
    assert "crun refuses hybrid cgroups, cgroup2 holding hugetlb" in line


@pytest.mark.parametrize(
    ("layout", "controllers"), [("v1", ""), ("hybrid", ""), ("hybrid", "hugetlb"), ("v2", "memory")]
)
def test_runc_serves_every_layout(tmp_path: Path, layout: str, controllers: str) -> None:
    cgroups = machine.read_cgroups(cgroup_tree(tmp_path / "cgroup", layout, controllers))
    assert machine.check_cgroups(cgroups, only("runc", "crun")) == []
    assert machine.podman_runtime() == "runc"


def test_a_v2_layout_without_runc_does_not_blame_crun(tmp_path: Path) -> None:
    cgroups = machine.read_cgroups(cgroup_tree(tmp_path / "cgroup", "v2", "memory"))
    [missing] = machine.check_cgroups(cgroups, only("crun"))
    assert "crun" not in str(missing)
    assert "apt-get install runc" in str(missing)


def test_missing_debian_packages_are_one_line_of_apt_get_install() -> None:
    found = machine.check_packages(lambda package: package not in {"mmdebstrap", "ipset"})
    assert [str(m) for m in found] == [
        "machine: Debian packages ipset mmdebstrap: apt-get install ipset mmdebstrap (.ci/run installs them)"
    ]
    assert machine.check_packages(lambda _package: True) == []


def test_the_package_list_is_what_ci_installs() -> None:
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert "python3 -m testbed.real.machine --debian-packages" in ci


def test_no_root_says_how_and_that_make_unit_needs_none() -> None:
    [missing] = machine.check_root(1000)
    assert "sudo make test" in str(missing)
    assert "make unit needs no root" in str(missing)
    assert machine.check_root(0) == []


def test_an_old_go_is_named_with_its_version(monkeypatch: pytest.MonkeyPatch) -> None:
    class Said:
        stdout = "go1.25.3\n"

    monkeypatch.setattr("subprocess.run", lambda *_args, **_kwargs: Said())
    found = machine.check_toolchains(only("go", "kubectl", "gcc", "git", "make"))
    assert [str(m) for m in found] == ["machine: go go1.25.3: Go >= 1.26.4 is needed (https://go.dev/dl)"]


def test_missing_programs_are_each_named() -> None:
    found = machine.check_toolchains(only("go-is-not-here"))
    assert {m.what for m in found} == {"go", "kubectl", "gcc", "git", "make"}


def test_a_kernel_without_overlay_or_namespaces_is_named(tmp_path: Path) -> None:
    (tmp_path / "net").touch()
    found = machine.check_kernel("nodev\tcgroup\nnodev\ttmpfs\n", tmp_path)
    assert {m.what for m in found} == {"overlay filesystem", "pid namespaces", "mnt namespaces"}
    assert machine.check_kernel("nodev\toverlay\n", Path("/proc/self/ns")) == []


def test_shared_beside_the_clone_is_checked_file_by_file(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    [missing] = machine.check_shared(tmp_path)
    assert "metacontroller/metacontroller-crds-v1.yaml" in missing.what
    assert "images" not in missing.what.split("lacks ")[1]


def test_too_little_disk_is_named_with_what_is_free(tmp_path: Path) -> None:
    [missing] = machine.check_disk([tmp_path / "not" / "made" / "yet"], minimum_gib=10**6)
    assert missing.what.endswith(f"free at {tmp_path}")
    assert machine.check_disk([tmp_path], minimum_gib=0) == []


def test_the_command_prints_one_line_per_missing_prerequisite(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    said = [machine.Missing("runc on cgroup hybrid", "apt-get install runc"), machine.Missing("root", "sudo make test")]
    monkeypatch.setattr(machine, "check", lambda: (machine.Cgroups("hybrid", ("hugetlb",)), said))
    assert machine.main([]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "machine: runc on cgroup hybrid: apt-get install runc",
        "machine: root: sudo make test",
        "machine: 2 prerequisite(s) missing; make unit needs none of them",
    ]
