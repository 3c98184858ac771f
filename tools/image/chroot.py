"""Start an image's entrypoint from its unpacked filesystem, where no container can start.

Run as root under ``unshare --mount --propagation private`` (see ``command``), so
the mounts stay in a namespace of the service's own: the filesystem read-only,
``/proc``, the host's ``/dev``, a scratch ``/tmp`` (the Deployment's emptyDir);
then ``chroot``, the image's working directory and user, no new privileges, and
``exec`` of the entrypoint with the image's environment. The host's network
and process table are shared: what this shows is the image's files, user and
read-only root, not a container's isolation.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_NO_NEW_PRIVS = 38


@dataclass(frozen=True)
class Launch:
    """Everything the launcher needs, passed as one JSON argument."""

    root: str
    uid: int
    gid: int
    workdir: str
    env: dict[str, str]
    command: list[str]

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> Launch:
        return cls(**json.loads(text))


def command(launch: Launch, unshare: str, python: str = sys.executable) -> list[str]:
    """The host command line that starts the service; its process becomes the service."""
    return [unshare, "--mount", "--propagation", "private", python, "-m", "tools.image.chroot", launch.to_json()]


def user_ids(user: str, passwd: str, group: str) -> tuple[int, int]:
    """``uid[:gid]`` or names, read from the image's own ``/etc/passwd`` and ``/etc/group``; root if unset."""
    name, _, group_name = user.partition(":")
    users = {f[0]: (int(f[2]), int(f[3])) for f in (line.split(":") for line in passwd.splitlines()) if len(f) > 3}
    groups = {f[0]: int(f[2]) for f in (line.split(":") for line in group.splitlines()) if len(f) > 2}
    if not name:
        return 0, 0
    if name.isdigit():
        uid = int(name)
        gid = next((g for u, g in users.values() if u == uid), uid)
    elif name in users:
        uid, gid = users[name]
    else:
        raise ValueError(f"user {name} is not in the image's /etc/passwd")
    if group_name:
        if group_name.isdigit():
            gid = int(group_name)
        elif group_name in groups:
            gid = groups[group_name]
        else:
            raise ValueError(f"group {group_name} is not in the image's /etc/group")
    return uid, gid


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def _enter(launch: Launch) -> None:
    root = launch.root
    for point in ("proc", "dev", "tmp"):
        os.makedirs(os.path.join(root, point), exist_ok=True)
    _mount("--bind", root, root)
    _mount("-o", "remount,bind,ro", root)
    _mount("-t", "proc", "proc", os.path.join(root, "proc"))
    _mount("--rbind", "/dev", os.path.join(root, "dev"))
    _mount("-t", "tmpfs", "-o", "mode=1777,nosuid,nodev,size=64m", "tmpfs", os.path.join(root, "tmp"))
    os.chroot(root)
    os.chdir(launch.workdir)
    os.setgroups([])
    os.setgid(launch.gid)
    os.setuid(launch.uid)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def main(argv: Sequence[str]) -> None:
    """Set up the root, drop to the image's user and become its entrypoint (with the image's environment only)."""
    launch = Launch.from_json(argv[0])
    if os.geteuid() != 0:
        sys.exit("image check: running an image's filesystem needs root (mounts and chroot)")
    _enter(launch)
    os.execvpe(launch.command[0], launch.command, launch.env)


def rootfs_user(root: Path, user: str) -> tuple[int, int]:
    """The image's user as numbers, from the files of its own root."""

    def read(name: str) -> str:
        path = root / "etc" / name
        return path.read_text() if path.is_file() else ""

    return user_ids(user, read("passwd"), read("group"))


if __name__ == "__main__":
    main(sys.argv[1:])
