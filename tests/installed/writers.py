"""Clients of the user's own that write through every step and keep what the server acknowledged.

One pod per shard, beside the ShardDB, runs ``psql`` once per attempt (a new
connection each time, through the shard's DNS name) every 0.25 s: ``INSERT`` of the
next number. It prints ``ack N T`` when the server acknowledged the commit and
``fail N T`` when it did not (T is the client's clock). After a step the test reads
the log and the shard's table: every acknowledged number must be stored, and the
longest gap between acknowledgements is the client-visible outage.
"""

from __future__ import annotations

import functools
import itertools
import json
import time
from dataclasses import dataclass

from testbed import images

from ..data.cluster import PASSWORD
from ..e2e.sharddbs import wait_until
from .installs import Install

LABEL = "sharddb-test/writer"
TABLE = "acked"
# A new connection per attempt, each bounded: a connection to an address that went away fails in 2 s.
SCRIPT = f"""
until psql -qAt -h "$HOST" -U postgres -c 'create table if not exists {TABLE} (n int primary key)' >/dev/null 2>&1
do sleep 0.5; done
echo ready
i=0
while true; do
  i=$((i + 1))
  if PGCONNECT_TIMEOUT=2 timeout 3 psql -qAt -h "$HOST" -U postgres -c "insert into {TABLE} values ($i)" >/dev/null 2>&1
  then echo "ack $i $(date +%s.%N)"
  else echo "fail $i $(date +%s.%N)"
  fi
  sleep 0.25
done
"""


@dataclass(frozen=True)
class Tally:
    """What one writer saw: the numbers acknowledged, the attempts failed, the longest wait, the last ack."""

    acked: frozenset[int]
    failed: int
    longest_gap: float
    last_ack: float


def tally(log: str, since: float | None = None) -> Tally:
    """Read a writer's log. From ``since`` on (its clock), count failures and the longest wait for an ack,
    the wait from ``since`` to the first ack after it included: an outage that begins with the step counts."""
    acked: set[int] = set()
    failed = 0
    times: list[float] = [] if since is None else [since]
    last = 0.0
    for line in log.splitlines():
        word, _, rest = line.partition(" ")
        if word not in ("ack", "fail"):
            continue
        number, _, stamp = rest.partition(" ")
        at = float(stamp)
        counted = since is None or at >= since
        if word == "ack":
            acked.add(int(number))
            last = max(last, at)
            if counted:
                times.append(at)
        elif counted:
            failed += 1
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    return Tally(frozenset(acked), failed, max(gaps, default=0.0), last)


@dataclass
class Writers:
    """One writer per shard of ``sharddb`` in ``namespace``."""

    install: Install
    namespace: str
    sharddb: str
    shards: int

    def pod(self, shard: int) -> str:
        return f"writer-{self.sharddb}-{shard}"

    def start(self) -> None:
        for shard in range(self.shards):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": self.pod(shard), "namespace": self.namespace, "labels": {LABEL: self.sharddb}},
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 1,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 999, "runAsGroup": 999},
                    "containers": [
                        {
                            "name": "writer",
                            "image": images.POSTGRES,
                            "command": ["bash", "-c", SCRIPT],
                            "env": [
                                {"name": "PGPASSWORD", "value": PASSWORD},
                                {"name": "HOST", "value": f"{self.sharddb}-db-{shard}.{self.sharddb}-db"},
                            ],
                        }
                    ],
                },
            }
            self.install.kubectl("apply", "-f", "-", stdin=json.dumps(pod))
        for shard in range(self.shards):
            wait_until(f"{self.pod(shard)} writing", functools.partial(self.writing, shard), 120)

    def writing(self, shard: int, within: float = 2.0) -> bool:
        """The writer has had a commit acknowledged in the last ``within`` seconds."""
        return self.tally(shard).last_ack >= time.time() - within

    def log(self, shard: int) -> str:
        """What the writer printed so far; nothing while its container is still being created."""
        return self.install.kubectl("logs", "-n", self.namespace, self.pod(shard), check=False)

    def tally(self, shard: int, since: float | None = None) -> Tally:
        return tally(self.log(shard), since)

    def stored(self, shard: int) -> frozenset[int]:
        pod = f"{self.sharddb}-db-{shard}"
        out = self.install.kubectl(
            "exec", "-n", self.namespace, pod, "-c", "db", "--",
            "psql", "-qAt", "-U", "postgres", "-c", f"select n from {TABLE}",
        )  # fmt: skip
        return frozenset(int(line) for line in out.split())

    def lost(self, shard: int) -> frozenset[int]:
        """Acknowledged numbers the shard does not have: must always be empty."""
        return self.tally(shard).acked - self.stored(shard)

    def stop(self) -> None:
        self.install.kubectl("delete", "pod", "-n", self.namespace, "-l", LABEL, "--wait=false")
