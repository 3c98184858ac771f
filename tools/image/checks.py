"""What ``make image`` holds the running image to: it serves, it answers a sync, as a non-root
user, on a read-only root filesystem.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A ShardDB as Metacontroller first sends it: no children yet.
SYNC_REQUEST = {
    "controller": {"metadata": {"name": "sharddb"}},
    "parent": {
        "apiVersion": "mygroup.example.com/v1alpha1",
        "kind": "ShardDB",
        "metadata": {"name": "demo", "namespace": "default", "uid": "0c1e5f39-image-check", "generation": 1},
        "spec": {"shards": 3, "dbImage": "postgres:16", "cache": {"image": "redis:7"}},
    },
    "children": {},
    "related": {},
    "finalizing": False,
}

# Run by the image's own python inside a container (``/proc/1`` is the service, ``/`` its root),
# or by the host's against ``/proc/<pid>`` and ``/proc/<pid>/root``: the service's user and
# group, and what a write in each folder given meets.
PROBE = """
import errno, json, os, sys
proc, root = sys.argv[1], sys.argv[2]
ids = {}
with open(os.path.join(proc, "status")) as status:
    for line in status:
        key, _, value = line.partition(":")
        if key in ("Uid", "Gid"):
            ids[key.lower()] = [int(part) for part in value.split()]
writes = {}
for folder in sys.argv[3:]:
    target = os.path.join(root, folder.lstrip("/"), ".sharddb-image-probe")
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as error:
        writes[folder] = errno.errorcode.get(error.errno, str(error.errno))
    else:
        os.unlink(target)
        writes[folder] = "written"
print(json.dumps({**ids, "writes": writes}))
"""

# Folders a write is tried in, and the answer expected: the root and the code are read-only;
# /tmp is the scratch space the Deployment mounts (an emptyDir).
WRITES = {"/": "EROFS", "/app": "EROFS", "/tmp": "written"}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def probe_checks(report: dict[str, Any], uid: int, gid: int) -> list[Check]:
    """The probe's findings against the image's user (not root) and ``WRITES``."""
    uids, gids = report.get("uid", []), report.get("gid", [])
    user_ok = bool(uids) and set(uids) == {uid} and set(gids) == {gid} and uid != 0
    checks = [Check("runs as the image's non-root user", user_ok, f"uid {uids}, gid {gids}; image user {uid}:{gid}")]
    for folder, expected in WRITES.items():
        got = report.get("writes", {}).get(folder)
        what = "writable scratch" if expected == "written" else "read-only"
        checks.append(Check(f"{folder} is {what}", got == expected, f"a write there: {got} (expected {expected})"))
    return checks


def _request(url: str, body: bytes | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    headers = {"content-type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=body, headers=headers, method="POST" if body is not None else "GET")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def wait_until_serving(base: str, alive: Callable[[], bool], timeout: float = 60.0) -> str | None:
    """None once ``/healthz`` answers; else why not (the service died, or the time ran out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            return "the service exited"
        try:
            status, _ = _request(f"{base}/healthz", timeout=2.0)
        except OSError:
            status = 0
        if status == 200:
            return None
        time.sleep(0.3)
    return f"/healthz did not answer 200 within {timeout:.0f}s"


def http_checks(base: str) -> list[Check]:
    """``/healthz`` answers 200, and ``/sync`` a first answer: Provisioning, with the shard StatefulSet."""
    status, _ = _request(f"{base}/healthz")
    checks = [Check("GET /healthz answers 200", status == 200, f"status {status}")]
    status, body = _request(f"{base}/sync", json.dumps(SYNC_REQUEST).encode())
    try:
        answer = json.loads(body)
    except ValueError:
        answer = {}
    kinds = sorted(f"{c.get('kind')}/{c.get('metadata', {}).get('name')}" for c in answer.get("children", []))
    phase = answer.get("status", {}).get("phase")
    ok = status == 200 and phase == "Provisioning" and "StatefulSet/demo-db" in kinds
    checks.append(Check("POST /sync answers a new ShardDB", ok, f"status {status}, phase {phase}, children {kinds}"))
    return checks
