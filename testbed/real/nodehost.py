"""Real stack: the namespaces one real node lives in, as kind gives each node a container of its own.

``unshare --net --mount --uts -- python -m testbed.real.nodehost NAME DIRECTORY`` makes
the node's network, mount and UTS namespaces; this process sets them up and then
holds them open until it is killed. Every program of the node (containerd, the
kubelet, kube-proxy, the network policy agent) enters them with ``nsenter``:

- its own loopback, forwarding on, bridged traffic through iptables (kube-proxy
  and the policy agent see pod-to-pod packets);
- its own ``/run`` and ``/var/log`` (tmpfs) and an overlay on ``/var/lib`` whose
  writes land in DIRECTORY: the kubelet's pods, the CNI's state and the node's
  local volumes are this node's alone, as on separate machines;
- its hostname, NAME, and an empty ``/etc/resolv.conf``: it resolves no name beyond the cluster.

It runs inside ``testbed.real.sandbox``'s namespaces, so nothing here reaches the host.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

from testbed.real.sandbox import MS_BIND, mount, sysctl

READY_FILE = "namespaces.ready"


def prepare(name: str, directory: Path) -> None:
    """Loopback, sysctls, private mounts and hostname; gone with the namespaces."""
    mount("tmpfs", "/run", "tmpfs", "mode=755")
    mount("tmpfs", "/var/log", "tmpfs", "mode=755")
    upper, work = directory / "var-lib" / "upper", directory / "var-lib" / "work"
    upper.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    mount("overlay", "/var/lib", "overlay", f"lowerdir=/var/lib,upperdir={upper},workdir={work}")
    for path in ("/run/netns", "/var/log/containers", "/var/log/pods", "/var/lib/kubelet", "/var/lib/cni"):
        Path(path).mkdir(parents=True, exist_ok=True)
    for key in ("net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables"):
        sysctl(key, "1")
    # No nameserver beyond the cluster: containerd resolves registries through the cluster's mirror only.
    resolv = directory / "host-resolv.conf"
    resolv.write_text("")
    mount(str(resolv), "/etc/resolv.conf", "", flags=MS_BIND)
    socket.sethostname(name)


def main(argv: list[str]) -> int:
    name, directory = argv[0], Path(argv[1])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    prepare(name, directory)
    (directory / READY_FILE).write_text("ready\n")
    signal.signal(signal.SIGTERM, lambda _number, _frame: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
