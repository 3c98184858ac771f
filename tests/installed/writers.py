"""Clients of the user's own that write through every step and keep what the server acknowledged.

One pod per shard, beside the ShardDB, runs ``psql`` once per attempt (a new
connection each time, through the shard's DNS name) every 0.25 s: ``INSERT`` of the
next number. It prints ``ack N T`` when the server acknowledged the commit and
``fail N T`` when it did not (T is the client's clock). After a step the test reads
the log and the shard's table: every acknowledged number must be stored, and the
longest gap between acknowledgements is the client-visible outage.

One more pod writes to the cache through its Service (``SET`` with ``redis-cli``, as
often). A cache keeps nothing it promises to keep, so only its outage is measured.
"""

from __future__ import annotations

import functools
import itertools
import json
import time
from dataclasses import dataclass, field

from testbed.faults.outages import Outage as Outage  # the one bench/ha.py reads; modules take it from here
from testbed.images import workloads

from ..support.examples import PASSWORD
from ..support.sharddbs import wait_until
from .installs import Install, Obj

LABEL = "sharddb-test/writer"
TABLE = "acked"
CACHE = "cache"
# A new connection per attempt, each bounded: a connection to an address that went away fails in 2 s.
SHARD_SCRIPT = """
until psql -qAt -h "$HOST" -U postgres -c "create table if not exists $TABLE (n int primary key)" >/dev/null 2>&1
do sleep 0.5; done
echo ready
i=0
while true; do
  i=$((i + 1))
  if PGCONNECT_TIMEOUT=2 timeout 3 psql -qAt -h "$HOST" -U postgres -c "insert into $TABLE values ($i)" >/dev/null 2>&1
  then echo "ack $i $(date +%s.%N)"
  else echo "fail $i $(date +%s.%N)"
  fi
  sleep 0.25
done
"""
CACHE_SCRIPT = """
until [ "$(timeout 3 redis-cli -h "$HOST" ping 2>/dev/null)" = PONG ]; do sleep 0.5; done
echo ready
i=0
while true; do
  i=$((i + 1))
  if [ "$(timeout 3 redis-cli -h "$HOST" set "writer:$i" "$i" 2>/dev/null)" = OK ]
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


@dataclass(frozen=True)
class Target:
    """A database a writer writes to: the DNS name clients use, and the pod whose table holds the rows."""

    host: str
    pod: str


@dataclass
class Writers:
    """One writer per database in ``targets`` (and one against ``cache``, a Service name, if given)."""

    install: Install
    namespace: str
    name: str
    targets: tuple[Target, ...]
    cache: str | None = None
    node: str | None = None  # keep the writers on this node (out of a step that stops another)
    env: tuple[tuple[str, str], ...] = ()  # libpq's settings for every shard writer (PGTARGETSESSIONATTRS, ...)
    table: str = TABLE  # a table each for writers of one shard beside or after each other (numbers restart)
    started: bool = field(default=False, init=False)

    @classmethod
    def for_sharddb(
        cls, install: Install, namespace: str, sharddb: str, shards: int, node: str | None = None
    ) -> Writers:
        """A writer per shard through its stable DNS name, and one through the cache's Service."""
        targets = tuple(Target(f"{sharddb}-db-{i}.{sharddb}-db", f"{sharddb}-db-{i}") for i in range(shards))
        return cls(install, namespace, sharddb, targets, cache=f"{sharddb}-cache", node=node)

    def pod(self, writer: int | str) -> str:
        return f"writer-{self.name}-{writer}"

    @property
    def writers(self) -> list[int | str]:
        """Each writer by its index in ``targets``, and ``CACHE`` for the cache's."""
        return [*range(len(self.targets)), *([CACHE] if self.cache else [])]

    def _manifest(self, writer: int | str) -> Obj:
        host = self.cache if writer == CACHE else self.targets[int(writer)].host
        script, image = (CACHE_SCRIPT, workloads.REDIS) if writer == CACHE else (SHARD_SCRIPT, workloads.POSTGRES)
        spec: Obj = {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 999, "runAsGroup": 999},
            "containers": [
                {
                    "name": "writer",
                    "image": image,
                    "command": ["bash", "-c", script],
                    "env": [
                        {"name": "PGPASSWORD", "value": PASSWORD},
                        {"name": "HOST", "value": host},
                        {"name": "TABLE", "value": self.table},
                        *({"name": key, "value": value} for key, value in self.env if writer != CACHE),
                    ],
                }
            ],
        }
        if self.node:
            spec["nodeSelector"] = {"kubernetes.io/hostname": self.node}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.pod(writer), "namespace": self.namespace, "labels": {LABEL: self.name}},
            "spec": spec,
        }

    def start(self) -> None:
        self.launch()
        self.wait_writing()

    def launch(self) -> None:
        """Create the writer pods; ``wait_writing`` waits for them (other clients may start meanwhile)."""
        for writer in self.writers:
            self.install.kubectl("apply", "-f", "-", stdin=json.dumps(self._manifest(writer)))

    def wait_writing(self) -> None:
        for writer in self.writers:
            wait_until(f"{self.pod(writer)} writing", functools.partial(self.writing, writer), 120)
        self.started = True

    def writing(self, writer: int | str, within: float = 2.0) -> bool:
        """The writer has had a write acknowledged in the last ``within`` seconds."""
        return self.tally(writer).last_ack >= time.time() - within

    def acknowledged_after(self, moment: float) -> bool:
        """Every writer has had a write acknowledged after ``moment`` (its clock): an outage that began
        before it has ended, so the gaps measured from then on are closed."""
        return all(self.tally(writer).last_ack > moment for writer in self.writers)

    def wait_acknowledged(self) -> None:
        """Wait until every writer has a write acknowledged after now: call it once a step is over."""
        moment = time.time()
        wait_until(f"every writer of {self.name} acknowledged again", lambda: self.acknowledged_after(moment), 120)

    def log(self, writer: int | str) -> str:
        """What the writer printed so far; nothing while its container is still being created."""
        return self.install.kubectl("logs", "-n", self.namespace, self.pod(writer), check=False)

    def tally(self, writer: int | str, since: float | None = None) -> Tally:
        return tally(self.log(writer), since)

    def stored(self, shard: int) -> frozenset[int]:
        out = self.install.kubectl(
            "exec", "-n", self.namespace, self.targets[shard].pod, "-c", "db", "--",
            "psql", "-qAt", "-U", "postgres", "-c", f"select n from {self.table}",
        )  # fmt: skip
        return frozenset(int(line) for line in out.split())

    def lost(self, shard: int) -> frozenset[int]:
        """Acknowledged numbers the shard does not have: must always be empty."""
        return self.tally(shard).acked - self.stored(shard)

    def assert_none_lost(self) -> None:
        """Every commit any writer saw acknowledged is in its shard's table."""
        lost = {self.targets[shard].pod: sorted(self.lost(shard)) for shard in range(len(self.targets))}
        assert all(not numbers for numbers in lost.values()), f"acknowledged commits lost: {lost}"

    def outage(self, step: str, since: float, affected: list[int] | None = None) -> Outage:
        """The step as the clients saw it from ``since``: each shard writer's longest gap (and the cache's)."""
        gaps = {self.targets[i].pod: self.tally(i, since).longest_gap for i in range(len(self.targets))}
        chosen = range(len(self.targets)) if affected is None else affected
        cache = self.tally(CACHE, since).longest_gap if self.cache else None
        return Outage(step, gaps, tuple(self.targets[i].pod for i in chosen), cache)

    def stop(self) -> None:
        self.install.kubectl("delete", "pod", "-n", self.namespace, "-l", f"{LABEL}={self.name}", "--wait=false")
