"""The node's namespaces leave nothing behind: after a run, and after a run that was killed.

Each test starts a sandbox of its own inside this tier's (namespaces nest), so what
it checks for — a bridge, an iptables chain, a mount, a cgroup, a directory — is
looked for where the run would have left it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testbed.real import sandbox

from ..support.sharddbs import wait_until

# What a node does to its host if nothing stops it: a bridge, an iptables chain, files under
# the paths containerd and the kubelet write whatever they are told, a cgroup.
MESS = """set -e
ip link add sdbtest0 type bridge
iptables -t nat -N SHARDDB-TEST
mkdir -p /run/containerd/test /var/lib/kubelet/test /var/log/pods/test
echo "$SHARDDB_SANDBOX" > "$REPORT"
mkdir /sys/fs/cgroup/pids/"$SHARDDB_SANDBOX"/kubepods
"""


def sandboxed(script: str, report: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "testbed.real.sandbox", "--", "sh", "-c", script]
    return subprocess.Popen(command, env={**os.environ, "REPORT": str(report)})


def left_behind(name: str) -> list[str]:
    found = []
    if subprocess.run(["ip", "link", "show", "sdbtest0"], capture_output=True).returncode == 0:
        found.append("the bridge")
    if "SHARDDB-TEST" in subprocess.run(["iptables-save", "-t", "nat"], capture_output=True, text=True).stdout:
        found.append("the iptables chain")
    found += [
        path for path in ("/run/containerd/test", "/var/lib/kubelet/test", "/var/log/pods/test") if Path(path).exists()
    ]
    found += [str(h / name) for h in sandbox.hierarchies() if (h / name).exists()]
    if (Path(tempfile.gettempdir()) / name).exists():
        found.append("the run's directory")
    return found


def test_a_run_leaves_nothing_behind(tmp_path: Path) -> None:
    report = tmp_path / "name"
    assert sandboxed(MESS, report).wait(timeout=60) == 0
    name = report.read_text().strip()
    assert name.startswith(sandbox.RUN_PREFIX)
    assert left_behind(name) == []


def test_a_killed_run_is_swept_by_the_next(tmp_path: Path) -> None:
    report = tmp_path / "name"
    crashed = sandboxed(MESS + "sleep 600\n", report)
    wait_until("the run to start", lambda: report.exists() and report.read_text().strip(), 60)
    name = report.read_text().strip()
    crashed.send_signal(signal.SIGKILL)
    crashed.wait()
    time.sleep(1)
    left = left_behind(name)
    assert "the run's directory" in left, left  # a killed run cannot clean up: the next one must
    assert any(name in thing for thing in left if thing.startswith("/sys/fs/cgroup")), left
    assert not {"the bridge", "the iptables chain"} & set(left), "the namespaces outlived their run"
    assert sandboxed("true", tmp_path / "unused").wait(timeout=60) == 0
    assert left_behind(name) == []
