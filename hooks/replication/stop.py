"""The members' stop order: when a whole shard stops, its primary stops last, so no standby is promoted.

A deletion or a hibernation scales each shard's StatefulSet to zero, and the StatefulSet controller
deletes every member at once. Each member's kubelet runs the preStop hook (the user's
``drainCommand``) before it sends SIGTERM, and a Patroni is only out of the race for the leader lock
once it got SIGTERM. So a primary whose drain ends first stops and releases its lock while a standby,
still draining, runs its loop: that standby is promoted mid-teardown (a new timeline, and on waking,
a shard whose members disagree on history).

Every member's preStop is therefore this script, with the user's drain command (if any) as its
arguments. It runs the drain, then, only when the member holds its shard's leader lock and its
StatefulSet is at zero replicas (a whole-shard stop, never a single pod's eviction, deletion or a
rollout), waits until no other member of the shard has a pod, at most until ``RESERVE_SECONDS`` of the
grace period are left for its own shutdown. Then SIGTERM follows: Patroni stops PostgreSQL and
releases its lock with no member left to take it. Standbys, and every member outside a whole-shard
stop, go on at once, as before.

It decides nothing: which member leads is Patroni's lock. Where it cannot tell (the API server
unreachable), it stops at once: a standby then needs the same API server to take the lock.
"""

from __future__ import annotations

from typing import Any

from .. import names
from .incluster import CLIENT

# What the primary keeps of its grace period for its own stop (a fast shutdown and its checkpoint).
RESERVE_SECONDS = 15

SCRIPT = (
    CLIENT
    + f"""
import subprocess, time
began = time.monotonic()
scope, drain = sys.argv[1], sys.argv[2:]
if drain:
    try:
        code = subprocess.call(drain)
    except OSError as error:  # a drain command that cannot run still leaves the order to keep
        code = error
    if code:
        print("stop order: the drain command ended with " + str(code), file=sys.stderr)
# One call in the common case (a pod stopping alone: a hand-over waits on it), two in a whole-shard stop.
try:
    if call("GET", "/apis/apps/v1/namespaces/" + NAMESPACE + "/statefulsets/" + scope)["spec"].get("replicas") != 0:
        sys.exit(0)
    lock = call("GET", "/api/v1/namespaces/" + NAMESPACE + "/configmaps/" + scope + "-leader")
except Exception as error:
    print("stop order: unknown (" + str(error) + "); stopping now", file=sys.stderr)
    sys.exit(0)
if (lock["metadata"].get("annotations") or {{}}).get("leader") != ME:
    sys.exit(0)
grace = int(os.environ.get("SHARDDB_DRAIN_SECONDS", "60"))
deadline = began + grace - min({RESERVE_SECONDS}, grace / 2)
selector = urllib.parse.quote("{names.SCOPE_LABEL}=" + scope)
others = ["?"]
while time.monotonic() < deadline:
    try:
        others = [p["metadata"]["name"] for p in call("GET", PODS + "?labelSelector=" + selector)["items"]]
    except Exception as error:
        print("stop order: " + str(error) + "; stopping now", file=sys.stderr)
        sys.exit(0)
    others = [name for name in others if name != ME]
    if not others:
        print("stop order: every other member has stopped; the primary stops last")
        sys.exit(0)
    time.sleep(1)
print("stop order: " + ", ".join(others) + " still running; the primary stops now", file=sys.stderr)
"""
)


def pre_stop(parent: str, shard: int, drain: list[str] | None) -> dict[str, Any]:
    """A member's preStop hook: the stop order, around the user's drain command when there is one."""
    command = ["python3", "-c", SCRIPT.strip(), names.shard_name(parent, shard), *(drain or [])]
    return {"preStop": {"exec": {"command": command}}}
