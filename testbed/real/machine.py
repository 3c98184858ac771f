"""Real stack: its prerequisites, what ``make test`` needs of the machine, checked in seconds before any build.

Every tier below depends on something the repository cannot carry: toolchains, Debian packages,
root, kernel features, a cgroup layout its container runtime accepts, and ``../shared`` beside the
clone. Each missing piece is one line saying what and how to get it, so a fresh machine learns it
at once, not after eleven minutes of builds. Standard library only: it runs before the venv exists.

``python -m testbed.real.machine`` checks everything; ``--debian-packages`` prints only the Debian
packages still to install (what ``.ci/run`` hands to apt-get).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CGROUP_ROOT = Path("/sys/fs/cgroup")
GO_MINIMUM = (1, 26, 4)
PYTHON_MINIMUM = (3, 11)
# The node's programs and the images' builders, and what else the tiers run (see docs/development/tests.md).
DEBIAN_PACKAGES = (
    "containerd",  # the data and installed tiers' nodes
    "runc",  # their containers, and podman's (see podman_runtime)
    "containernetworking-plugins",
    "iptables",  # kube-proxy
    "conntrack",
    "ipset",  # kube-router
    "docker-registry",  # the cluster's registry mirror
    "mmdebstrap",  # the test images and the stand-in Python base, from Debian packages
    "podman",  # make image, and the data tier's run of the product images
    "wrk",  # the benchmark's smoke run
    "postgresql",  # the default seed command against a real server (tests/shipped/test_defaults.py)
    "libc6-dev",  # the pause image's static build
    "util-linux",  # unshare, nsenter
    "iproute2",  # ip: the nodes' namespaces, bridge and veths
    "openssl",  # the README's certificate steps, run by the installed tier
)
SHARED_FILES = (
    "metacontroller/metacontroller-crds-v1.yaml",
    "metacontroller/metacontroller-v4.17.2.tar.gz",
    "fixtures/metacontroller-v4.17.2",
    "images",
)
# Go modules and build cache (about 5 GB), images, the nodes' writable layers and podman's vfs store.
FREE_GIB_MINIMUM = 20


@dataclass(frozen=True)
class Cgroups:
    """How this machine mounts cgroups: ``v1``, ``hybrid`` (v1 plus a cgroup2 at ``unified``) or ``v2``."""

    layout: str
    unified_controllers: tuple[str, ...]

    def describe(self) -> str:
        if self.layout == "v1":
            return "v1 cgroups"
        held = ", ".join(self.unified_controllers) or "no controller"
        return f"{self.layout} cgroups, cgroup2 holding {held}"


def read_cgroups(root: Path = CGROUP_ROOT) -> Cgroups:
    """The layout read from the mounted tree; a test hands it a fake one."""
    if (root / "cgroup.controllers").is_file():
        return Cgroups("v2", tuple((root / "cgroup.controllers").read_text().split()))
    unified = root / "unified" / "cgroup.controllers"
    if unified.is_file():
        return Cgroups("hybrid", tuple(unified.read_text().split()))
    return Cgroups("v1", ())


def podman_runtime() -> str:
    """The OCI runtime the suite gives podman: runc, whatever the layout.

    crun (podman's default) refuses a hybrid layout whose cgroup2 holds a controller ("cgroups in
    hybrid mode not supported"); runc runs on v1, hybrid and v2, and is the runtime containerd
    already runs every pod of the nodes with, so one runtime serves every container of the suite.
    """
    return "runc"


@dataclass(frozen=True)
class Missing:
    """One prerequisite not met: what, and how to get it."""

    what: str
    how: str

    def __str__(self) -> str:
        return f"machine: {self.what}: {self.how}"


Which = Callable[[str], "str | None"]
Installed = Callable[[str], bool]


def dpkg_installed(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False)
    return done.returncode == 0 and "install ok installed" in done.stdout


def missing_packages(installed: Installed = dpkg_installed, packages: Sequence[str] = DEBIAN_PACKAGES) -> list[str]:
    return [package for package in packages if not installed(package)]


def _version(text: str) -> tuple[int, ...]:
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(part or 0) for part in found.groups()) if found else ()


def check_toolchains(which: Which = shutil.which) -> list[Missing]:
    found: list[Missing] = []
    if sys.version_info < PYTHON_MINIMUM:
        found.append(Missing(f"Python {sys.version.split()[0]}", "Python 3.11 or newer runs the hooks and the suite"))
    go = which("go")
    if go is None:
        found.append(Missing("go", "Go >= 1.26.4 builds the test stack (https://go.dev/dl, or Debian's golang)"))
    else:
        said = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False).stdout
        if _version(said) < GO_MINIMUM:
            found.append(
                Missing(f"go {said.strip() or 'of unknown version'}", "Go >= 1.26.4 is needed (https://go.dev/dl)")
            )
    for program, how in (
        (
            "kubectl",
            "kubectl renders the overlays and drives the cluster tiers (https://kubernetes.io/docs/tasks/tools/)",
        ),
        ("gcc", "apt-get install gcc (the pause image and Go's cgo)"),
        ("git", "apt-get install git (the upgrade tests check out an older release)"),
        ("make", "apt-get install make"),
    ):
        if which(program) is None:
            found.append(Missing(program, how))
    return found


def check_packages(installed: Installed = dpkg_installed) -> list[Missing]:
    lacking = missing_packages(installed)
    if not lacking:
        return []
    return [
        Missing(f"Debian packages {' '.join(lacking)}", f"apt-get install {' '.join(lacking)} (.ci/run installs them)")
    ]


def check_root(euid: int) -> list[Missing]:
    if euid == 0:
        return []
    return [
        Missing(
            "root",
            "the data and installed tiers run real nodes in namespaces of their own: sudo make test "
            "(make unit needs no root)",
        )
    ]


def check_cgroups(cgroups: Cgroups, which: Which = shutil.which) -> list[Missing]:
    """The runtime the suite chose must be there; the layout says why crun would not do."""
    runtime = podman_runtime()
    if which(runtime) is not None:
        return []
    why = "containerd's pods and podman's containers run with it"
    if cgroups.layout == "hybrid" and cgroups.unified_controllers:
        why += f"; podman's default crun refuses {cgroups.describe()}"
    return [Missing(f"{runtime} on {cgroups.describe()}", f"apt-get install {runtime} ({why})")]


def check_kernel(filesystems: str, namespaces: Path = Path("/proc/self/ns")) -> list[Missing]:
    found: list[Missing] = []
    if not re.search(r"\boverlay\b", filesystems):
        found.append(
            Missing(
                "overlay filesystem", "the nodes mount overlays (containerd's snapshots, /var/lib): modprobe overlay"
            )
        )
    for kind in ("pid", "net", "mnt"):
        if not (namespaces / kind).exists():
            found.append(
                Missing(
                    f"{kind} namespaces", "the nodes run in namespaces of their own: a kernel with CONFIG_NAMESPACES"
                )
            )
    return found


def probe_network(which: Which = shutil.which) -> list[Missing]:
    """A bridge, a veth pair and iptables' nat table in a throwaway network namespace, as each node makes them."""
    unshare = which("unshare")
    if unshare is None or which("ip") is None or which("iptables") is None:
        return []  # named by the packages' check
    script = (
        "ip link add sharddb0 type bridge && ip link add sharddb1 type veth peer name sharddb2 && iptables -t nat -S"
    )
    done = subprocess.run(
        [unshare, "--net", "sh", "-c", script], capture_output=True, text=True, check=False, timeout=30
    )
    if done.returncode == 0:
        return []
    said = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
    return [
        Missing("bridge, veth or iptables nat in a network namespace", f"{said} (modprobe bridge veth iptable_nat)")
    ]


def check_shared(shared: Path) -> list[Missing]:
    lacking = [name for name in SHARED_FILES if not (shared / name).exists()]
    if not lacking:
        return []
    return [
        Missing(
            f"{shared} lacks {', '.join(lacking)}",
            "place shared/ beside the clone (Metacontroller's CRDs and source, recorded requests, image recipes)",
        )
    ]


def check_disk(paths: Sequence[Path], minimum_gib: int = FREE_GIB_MINIMUM) -> list[Missing]:
    found: list[Missing] = []
    for path in paths:
        existing = next((p for p in (path, *path.parents) if p.exists()), Path("/"))
        free = shutil.disk_usage(existing).free / 2**30
        if free < minimum_gib:
            found.append(
                Missing(
                    f"{free:.0f} GiB free at {existing}",
                    f"the builds and nodes need about {minimum_gib} GiB: free some",
                )
            )
    return found


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sharddb"


def check(shared: Path = ROOT.parent / "shared") -> tuple[Cgroups, list[Missing]]:
    cgroups = read_cgroups()
    found = [
        *check_root(os.geteuid()),
        *check_toolchains(),
        *check_packages(),
        *check_cgroups(cgroups),
        *check_kernel(Path("/proc/filesystems").read_text()),
        *check_shared(shared),
        *check_disk(sorted({cache_root(), Path("/tmp")})),
    ]
    if os.geteuid() == 0:
        found += probe_network()
    return cgroups, found


def main(argv: list[str]) -> int:
    if argv == ["--debian-packages"]:
        print(" ".join(missing_packages()))
        return 0
    if argv:
        print("usage: python -m testbed.real.machine [--debian-packages]", file=sys.stderr)
        return 2
    cgroups, found = check()
    for missing in found:
        print(missing, file=sys.stderr)
    if found:
        print(f"machine: {len(found)} prerequisite(s) missing; make unit needs none of them", file=sys.stderr)
        return 1
    print(f"machine: ready ({cgroups.describe()}; podman runs with {podman_runtime()})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
