"""A client of the user's own that asks every member of a shard, about every 100 ms, whether it accepts writes.

One pod runs a loop per member address: a new ``psql`` connection per question (bounded by a 2 s
timeout), ``select pg_is_in_recovery()``, and, when the member says ``f`` (a primary), an ``INSERT``
in the same session. Each line it prints: ``<member> <asked> <answered> <answer> <write>``, where the
answer is ``t``, ``f`` or ``x`` (no answer) and the write ``w`` (committed), ``-`` (not tried) or
``x`` (failed, or hung past the timeout: a synchronous primary cut off from its standby).

Members are added while it runs (``add``: a member's new address once its pod is re-created), so a
rollout or a failover is watched on every address a member has had. Two members that both say ``f``
in overlapping questions, or both commit a write, are two writable primaries.

Beside it in the pod, the prober of ``tests/support/writable.py`` writes to the same addresses through
one session each, in lockstep: its runs of acknowledged writes, compared, miss no overlap a question
now and then could fall between (``tries``).
"""

from __future__ import annotations

import itertools
import json
import shlex
from dataclasses import dataclass, field

from testbed.images import workloads

from ..support import writable
from ..support.examples import PASSWORD
from ..support.sharddbs import wait_until
from .installs import Install, Obj

LABEL = "sharddb-test/poller"  # left out of drains, as a client on another machine would be
TABLE = "poller_writes"
TARGETS = "/tmp/targets"
PROBER = "prober"
SCRIPT = f"""
until PGCONNECT_TIMEOUT=2 psql -XqAt -h "$PRIMARY" -U postgres -d postgres \\
  -c 'create table if not exists {TABLE} (member text, at timestamptz default now())' >/dev/null 2>&1; do
  sleep 0.5
done
poll() {{
  while true; do
    asked=$(date +%s.%N)
    out=$(PGCONNECT_TIMEOUT=2 timeout 2 psql -XqAt -h "$2" -U postgres -d postgres \\
      -c 'select pg_is_in_recovery()' \\
      -c "insert into {TABLE} (member) select '$1' where not pg_is_in_recovery() returning 1" 2>/dev/null)
    answered=$(date +%s.%N)
    answer=$(printf '%s\\n' "$out" | sed -n 1p); write=$(printf '%s\\n' "$out" | sed -n 2p)
    case "$answer" in t) write=-;; f) [ "$write" = 1 ] && write=w || write=x;; *) answer=x write=-;; esac
    echo "$1 $asked $answered $answer $write"
    sleep 0.1
  done
}}
touch {TARGETS}
seen=" "
while true; do
  while read -r member host; do
    case "$seen" in *" $member@$host "*) ;; *) seen="$seen$member@$host "; poll "$member" "$host" & ;; esac
  done < {TARGETS}
  sleep 0.2
done
"""


@dataclass(frozen=True)
class Answer:
    """One question asked of a member: when, what it said (t, f, x), and whether its write committed (w, -, x)."""

    member: str
    asked: float
    answered: float
    answer: str
    write: str


def answers(log: str) -> list[Answer]:
    out = []
    for line in log.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[3] in ("t", "f", "x"):
            out.append(Answer(parts[0], float(parts[1]), float(parts[2]), parts[3], parts[4]))
    return out


def _overlapping(picked: list[Answer]) -> list[tuple[Answer, Answer]]:
    return [
        (one, two)
        for one, two in itertools.combinations(picked, 2)
        if one.member != two.member and one.asked <= two.answered and two.asked <= one.answered
    ]


def both_primary(polled: list[Answer]) -> list[tuple[Answer, Answer]]:
    """Two members answering ``f`` to questions that overlapped in time."""
    return _overlapping([each for each in polled if each.answer == "f"])


def both_written(polled: list[Answer]) -> list[tuple[Answer, Answer]]:
    """Two members committing a write in questions that overlapped in time."""
    return _overlapping([each for each in polled if each.write == "w"])


def longest_wait(polled: list[Answer], member: str) -> float:
    """The longest time between two questions to ``member``: how closely it was watched."""
    asked = sorted(each.asked for each in polled if each.member == member)
    return max((b - a for a, b in itertools.pairwise(asked)), default=0.0)


@dataclass
class Poller:
    """The poller pod of ``namespace``; ``primary`` is a Service that reaches the shard's primary (for its table)."""

    install: Install
    namespace: str
    name: str
    primary: str
    node: str | None = None  # keep the poller on this node (beside a member, or out of a step that stops one)
    added: set[tuple[str, str]] = field(default_factory=set)

    def launch(self) -> None:
        """Create the pod; it makes its table through ``primary`` before it asks anything."""
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": {LABEL: self.name}},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "securityContext": {"runAsNonRoot": True, "runAsUser": 999, "runAsGroup": 999},
                "containers": [
                    {
                        "name": "poller",
                        "image": workloads.POSTGRES,
                        "command": ["bash", "-c", SCRIPT],
                        "env": [{"name": "PGPASSWORD", "value": PASSWORD}, {"name": "PRIMARY", "value": self.primary}],
                        "volumeMounts": [{"name": "targets", "mountPath": "/tmp"}],
                    },
                    {
                        "name": PROBER,
                        "image": workloads.POSTGRES,
                        "command": ["bash", "-c", writable.SCRIPT],
                        "env": [{"name": "PGPASSWORD", "value": PASSWORD}],
                        "volumeMounts": [{"name": "targets", "mountPath": "/tmp"}],
                    },
                ],
                "volumes": [{"name": "targets", "emptyDir": {}}],
            },
        }
        if self.node:
            pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": self.node}
        self.install.kubectl("apply", "-f", "-", stdin=json.dumps(pod))

    def wait_running(self, members: dict[str, str]) -> None:
        """Once the pod runs, poll ``members`` (name → address)."""
        wait_until(
            f"{self.name} running",
            lambda: self.install.get("pod", "-n", self.namespace, self.name)["status"].get("phase") == "Running",
            120,
        )
        for member, host in members.items():
            self.add(member, host)

    def add(self, member: str, host: str) -> None:
        """Poll ``member`` at ``host`` too (once per pair)."""
        if (member, host) in self.added or not host:
            return
        line = shlex.quote(f"{member} {host}")
        script = f"echo {line} >> {TARGETS} && echo {line} >> {writable.TARGETS}"
        self.install.kubectl("exec", "-n", self.namespace, self.name, "-c", "poller", "--", "sh", "-c", script)
        self.added.add((member, host))

    def watch(self, pods: list[Obj]) -> None:
        """Poll each pod's current address (a re-created member's new one included)."""
        for pod in pods:
            self.add(pod["metadata"]["name"], pod.get("status", {}).get("podIP", ""))

    def answers(self) -> list[Answer]:
        return answers(self.install.kubectl("logs", "-n", self.namespace, self.name, "-c", "poller", check=False))

    def tries(self) -> list[writable.Try]:
        """The prober's tries, on this pod's clock: compare them with no other pod's."""
        log = self.install.kubectl("logs", "-n", self.namespace, self.name, "-c", PROBER, check=False)
        return writable.tries(log)

    def hearing(self, wanted: set[tuple[str, str]]) -> bool:
        """The poller has heard each (member, answer) in ``wanted``."""
        return wanted <= {(each.member, each.answer) for each in self.answers()}

    def stop(self) -> None:
        self.install.kubectl("delete", "pod", "-n", self.namespace, self.name, "--wait=false")
