"""Real stack: namespaces of its own for a real node, so a run never touches the host it runs on.

``python -m testbed.real.sandbox -- COMMAND...`` runs COMMAND (the data tier's pytest)
as the only child of a fresh PID, network and mount namespace: its own loopback,
its own bridge and iptables rules, and private mounts over the paths that
containerd, the CNI plugins and the kubelet write whatever their configuration
says (``/run``, ``/var/log``, and an overlay on ``/var/lib`` whose writes land in
the run's directory). When COMMAND ends, the PID namespace ends with it and the
kernel kills every process left in it (containerd's shims, containers); the run's
cgroups, the one thing outside the namespaces, are removed here, as are those of
earlier runs that died before they could do it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
RUN_PREFIX = "sharddb-node-"
# Set for COMMAND: the run's name (its cgroup's name too) and its directory.
RUN_ENV = "SHARDDB_SANDBOX"
DIR_ENV = "SHARDDB_SANDBOX_DIR"
TOOLS = {
    "unshare": "util-linux",
    "ip": "iproute2",
    "iptables": "iptables",
    "containerd": "containerd",
    "runc": "runc",
    "ctr": "containerd",
    "nsenter": "util-linux",
    "ipset": "ipset",
    "docker-registry": "docker-registry",
}
CNI_BIN = Path("/usr/lib/cni")
_PR_SET_PDEATHSIG = 1


class SandboxError(RuntimeError):
    """The node cannot run here; the message says what is missing and what to do."""


def inside() -> bool:
    """True in a process started by this module's COMMAND (the namespaces exist)."""
    return bool(os.environ.get(RUN_ENV)) and os.getpid() != 1 and Path(os.environ.get(DIR_ENV, "/nonexistent")).is_dir()


def run_name() -> str:
    return os.environ[RUN_ENV]


def run_dir() -> Path:
    return Path(os.environ[DIR_ENV])


def check_host() -> None:
    """Root and the node's programs; each missing piece named with its Debian package."""
    if os.geteuid() != 0:
        raise SandboxError(
            "the data tier runs a real node (containerd, runc, the kubelet) in namespaces of its own, "
            "which needs root: run `sudo make data` (or `sudo make test`); `make unit` needs no root"
        )
    missing = sorted({package for tool, package in TOOLS.items() if shutil.which(tool) is None})
    if not (CNI_BIN / "bridge").exists():
        missing.append("containernetworking-plugins")
    if missing:
        raise SandboxError(
            f"the data tier's node needs {', '.join(missing)}: apt-get install {' '.join(missing)} "
            "(.ci/run installs them)"
        )


# --- cgroups: the one thing a run leaves outside its namespaces -------------------------------------


def hierarchies() -> list[Path]:
    """The mounted cgroup hierarchies (v1 controllers, the named systemd one, or the v2 root)."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return [CGROUP_ROOT]
    return sorted(
        p for p in CGROUP_ROOT.iterdir() if p.is_dir() and not p.is_symlink() and (p / "cgroup.procs").exists()
    )


def make_cgroups(name: str) -> None:
    for hierarchy in hierarchies():
        (hierarchy / name).mkdir(exist_ok=True)


def remove_cgroups(name: str, timeout: float = 30.0) -> None:
    """Kill what is still inside, then remove the tree deepest first."""
    deadline = time.monotonic() + timeout
    for hierarchy in hierarchies():
        top = hierarchy / name
        if not top.is_dir():
            continue
        groups = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
        groups.append(top)
        for group in groups:
            while True:
                _kill_members(group)
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SandboxError(f"could not remove cgroup {group}") from None
                    time.sleep(0.1)


def kill_cgroups(name: str) -> int:
    """SIGKILL every process in the tree, which stays (a machine's power cut); how many were signalled."""
    killed = 0
    for hierarchy in hierarchies():
        top = hierarchy / name
        if top.is_dir():
            for group in (top, *(p for p in top.rglob("*") if p.is_dir())):
                killed += _kill_members(group)
    return killed


def _kill_members(group: Path) -> int:
    killed = 0
    with contextlib.suppress(OSError):
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
                killed += 1
    return killed


def _pid_namespace() -> int:
    return os.stat("/proc/self/ns/pid").st_ino


def new_run_name() -> str:
    """Names the run's cgroups and directory by its owner: PID namespace and PID, so only its peers judge it."""
    return f"{RUN_PREFIX}{_pid_namespace()}-{os.getpid()}"


def sweep_orphans() -> None:
    """Cgroups and directories of runs whose owner is gone (a crashed or killed run).

    Only runs started from this PID namespace are judged: another namespace's PIDs mean nothing here.
    """
    names = {p.name for hierarchy in hierarchies() for p in hierarchy.glob(f"{RUN_PREFIX}*")}
    names |= {p.name for p in Path(tempfile.gettempdir()).glob(f"{RUN_PREFIX}*")}
    for name in names:
        namespace, _, pid = name.removeprefix(RUN_PREFIX).partition("-")
        if not (namespace.isdigit() and pid.isdigit()) or int(namespace) != _pid_namespace():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # its owner still runs: another run on this machine
        except ProcessLookupError:
            pass
        remove_cgroups(name)
        _remove_tree(Path(tempfile.gettempdir()) / name)


def _remove_tree(path: Path) -> None:
    """A run directory; an overlay's work dir can hold entries only root may remove, which we are."""
    shutil.rmtree(path, ignore_errors=True)


# --- outside: set up, run, clean up ----------------------------------------------------------------


def run(command: list[str]) -> int:
    check_host()
    sweep_orphans()
    name = new_run_name()
    directory = Path(tempfile.gettempdir()) / name
    directory.mkdir(mode=0o755)
    make_cgroups(name)
    try:
        # Killed with this process, and the namespaces' first process with it (so every process in them).
        unshare = ["unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--net", "--mount", "--propagation", "private"]
        unshare.append("--mount-proc")
        inner = [sys.executable, "-m", "testbed.real.sandbox", "--init", name, str(directory), "--", *command]
        process = subprocess.Popen([*unshare, *inner], preexec_fn=_die_with_parent)
        try:
            return process.wait()
        except KeyboardInterrupt:
            process.send_signal(signal.SIGINT)
            return process.wait()
    finally:
        remove_cgroups(name)
        _remove_tree(directory)


# --- inside: PID 1 of the namespaces ------------------------------------------------------------------


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


MS_BIND = 4096


def mount(source: str, target: str, fstype: str, options: str = "", flags: int = 0) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.mount(source.encode(), target.encode(), fstype.encode(), flags, options.encode() or None)
    if result != 0:
        error = ctypes.get_errno()
        raise SandboxError(f"mount {fstype} on {target} failed: {os.strerror(error)}")


def sysctl(key: str, value: str) -> None:
    path = Path("/proc/sys") / key.replace(".", "/")
    with contextlib.suppress(FileNotFoundError):
        path.write_text(value)


def prepare(directory: Path) -> None:
    """Loopback up, private mounts, forwarding; all of it vanishes with the namespaces."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    mount("tmpfs", "/run", "tmpfs", "mode=755")
    mount("tmpfs", "/var/log", "tmpfs", "mode=755")
    upper, work = directory / "var-lib" / "upper", directory / "var-lib" / "work"
    upper.mkdir(parents=True)
    work.mkdir(parents=True)
    mount("overlay", "/var/lib", "overlay", f"lowerdir=/var/lib,upperdir={upper},workdir={work}")
    for path in ("/run/netns", "/var/log/containers", "/var/log/pods", "/var/lib/kubelet", "/var/lib/cni"):
        Path(path).mkdir(parents=True, exist_ok=True)
    sysctl("net.ipv4.ip_forward", "1")
    sysctl("net.bridge.bridge-nf-call-iptables", "1")
    sysctl("net.bridge.bridge-nf-call-ip6tables", "1")


def init(name: str, directory: Path, command: list[str]) -> int:
    """Run COMMAND, reap every orphan that reparents to us, pass on SIGINT and SIGTERM."""
    prepare(directory)
    # Temporary files in the run's own directory: gone with it, and out of sight of runs outside
    # the namespaces, which judge /tmp's leftovers by PIDs that mean nothing across them.
    scratch = directory / "tmp"
    scratch.mkdir()
    env = {**os.environ, RUN_ENV: name, DIR_ENV: str(directory), "TMPDIR": str(scratch)}
    child = subprocess.Popen(command, env=env)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda number, _frame: child.send_signal(number))
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return child.returncode if child.returncode is not None else 1
        except InterruptedError:
            continue
        if pid == child.pid:
            return os.waitstatus_to_exitcode(status)


def main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["--init"]:
            name, directory, separator, *command = argv[1:]
            assert separator == "--"
            return init(name, Path(directory), command)
        command = argv[1:] if argv[:1] == ["--"] else argv
        if not command:
            print("usage: python -m testbed.real.sandbox -- COMMAND [ARGS...]", file=sys.stderr)
            return 2
        return run(command)
    except SandboxError as error:
        print(f"sandbox: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
