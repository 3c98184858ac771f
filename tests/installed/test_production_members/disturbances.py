"""The clients every disturbance runs under, and the three kinds of disturbance the steps are made of.

``start_clients`` starts a step's writers and pollers, ``Clients.seen`` reads them back into the one
check of both invariants (``tests/installed/invariants.py``). The kinds: the primary stopped
(``stop_primary``: the standby takes over and the old member streams again), a step that leaves the
primary where it is (``disturb``), and the primary's node lost (``lose_primarys_node``).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from testbed.real.audit import Write

from ...support import writable
from ...support.sharddbs import wait_until
from ..installs import Install, Obj
from ..invariants import Kept, Report, Seen
from ..poller import LABEL as POLLER_LABEL
from ..poller import Answer, Poller, longest_wait
from ..writers import LABEL, Target, Writers
from .shard import (
    NAME,
    NAMESPACE,
    PRIMARY_SERVICE,
    SHARD,
    leader_changes,
    members,
    patroni_says,
    primary_and_replica,
    running_primary,
    streaming_standby,
)

POLLER = f"poller-{NAME}"
# Every member's stable name, for a client that finds the primary itself (libpq tries each in turn).
EVERY_MEMBER = ",".join(f"{SHARD}-{member}.{SHARD}" for member in range(2))
READ_WRITE = (("PGTARGETSESSIONATTRS", "read-write"),)


# --- the clients: what they saw of a hand-over -----------------------------------------------------------


@dataclass(frozen=True)
class Clients:
    """A step's clients: a writer through ``-primary``, one given every member, and the pollers."""

    writers: Writers
    direct: Writers
    pollers: list[Poller]

    def seen(self, step: str, since: float, primary: str) -> Seen:
        """What they saw from ``since``, once the step is over: each writer's outage (a row of the session's
        table), then its commits read on ``primary`` (the primary now), and every poller's answers."""
        outage = self.writers.outage(step, since, [0])
        direct = self.direct.outage(f"{step}: a client given every member, read-write", since, [0])
        self.writers.targets = (Target(PRIMARY_SERVICE, primary),)  # the rows are read on the primary now
        self.direct.targets = (Target(EVERY_MEMBER, primary),)
        polled = [answer for poller in self.pollers for answer in poller.answers()]
        tried = [poller.tries() for poller in self.pollers]
        rows = prober_rows(self.writers.install, primary, since)
        return Seen(Kept.read(self.writers), Kept.read(self.direct), (outage, direct), polled, tried, rows)

    def stop(self) -> None:
        self.writers.stop()
        self.direct.stop()
        for poller in self.pollers:
            poller.stop()


def probed_a_write(poller: Poller) -> bool:
    return any(each.outcome == "ok" for each in poller.tries())


def prober_rows(install: Install, primary: str, since: float) -> frozenset[tuple[str, str]]:
    """(member, sent) of the probers' rows on ``primary`` sent from a minute before ``since`` (the table is the
    tier's, each step's probers adding to it)."""
    query = f"SELECT member || ' ' || sent FROM {writable.TABLE} WHERE sent >= {since - 60:.6f}"
    out = install.kubectl("exec", "-n", NAMESPACE, primary, "-c", "db", "--", "psql", "-U", "postgres", "-XqAtc", query)
    return frozenset((parts[0], parts[1]) for parts in (line.split() for line in out.splitlines()) if len(parts) == 2)


def start_clients(
    install: Install, label: str, pods: list[Obj], *, cache: bool = False, node: str | None = None, beside: str = ""
) -> Clients:
    """The step's clients, their pods created together: a writer through ``-primary`` (and the cache's, if
    ``cache``), a writer given every member's address with ``target_session_attrs=read-write`` (it does not wait
    for the Service to follow the role label), and a poller on every member's address (another on ``beside``,
    if given); each writing, and each poller hearing the primary say f and the standby t. ``node``: where they run."""
    # ``label`` names the clients' pods and the writers' table: a word both a pod name and SQL take as it is.
    assert label.isalnum(), f"a step's label is one word, not {label!r}"
    assert label.islower(), f"a step's label is lowercase, not {label!r}"
    primary, standby = primary_and_replica(pods)
    assert primary, f"no primary to start from: {[pod['metadata']['name'] for pod in pods]}"
    assert standby, f"no replica to start from: {[pod['metadata']['name'] for pod in pods]}"
    writers = Writers(
        install,
        NAMESPACE,
        f"{NAME}-{label}",
        (Target(PRIMARY_SERVICE, primary),),
        cache=f"{NAME}-cache" if cache else None,
        node=node,
        table=f"acked_{label}",
    )
    target = (Target(EVERY_MEMBER, primary),)
    name = f"{NAME}-{label}-direct"
    direct = Writers(install, NAMESPACE, name, target, node=node, env=READ_WRITE, table=f"acked_{label}_direct")
    pollers = [Poller(install, NAMESPACE, f"{POLLER}-{label}", PRIMARY_SERVICE, node)]
    if beside:
        pollers.append(Poller(install, NAMESPACE, f"{POLLER}-{label}-beside", PRIMARY_SERVICE, beside))
    writers.launch()
    direct.launch()
    for poller in pollers:
        poller.launch()
    writers.wait_writing()
    direct.wait_writing()
    addresses = {pod["metadata"]["name"]: pod["status"]["podIP"] for pod in pods}
    wanted = {(primary, "f"), (standby, "t")}
    for poller in pollers:
        poller.wait_running(addresses)
        wait_until(f"{poller.name} hearing the primary say f and the standby t", partial(poller.hearing, wanted), 120)
        wait_until(f"{poller.name}'s prober with a write acknowledged", partial(probed_a_write, poller), 60)
    return Clients(writers, direct, pollers)


def watched(polled: list[Answer]) -> str:
    """How often each member was asked, and the longest wait between two questions to it."""
    seen = sorted({each.member for each in polled})
    counts = {member: sum(1 for each in polled if each.member == member) for member in seen}
    return ", ".join(f"{m} {counts[m]} times (longest wait {longest_wait(polled, m):.2f} s)" for m in seen)


def hand_over(writes: list[Write], stopped: str, since: float, writer_log: str) -> str:
    """Where a hand-over's client time went, from the audit log and the writer: the longest gap between two
    acknowledged writes, and the ``-primary`` EndpointSlice's writes, in seconds after the old primary was
    told to stop (its eviction or deletion)."""
    told = [
        w.at.timestamp()
        for w in writes
        if w.name == stopped and w.resource == "pods" and w.verb in ("create", "delete")
    ]
    zero = min(told, default=since)
    slices = [
        w.at.timestamp() - zero
        for w in writes
        if w.resource == "endpointslices" and w.name.startswith(f"{PRIMARY_SERVICE}-") and w.at.timestamp() >= zero
    ]
    lines = [line.split() for line in writer_log.splitlines() if line.startswith(("ack ", "fail "))]
    acks = sorted(float(parts[2]) - zero for parts in lines if parts[0] == "ack")
    gaps = [(later - earlier, earlier, later) for earlier, later in itertools.pairwise(acks) if later > -1]
    _, begun, ended = max(gaps, default=(0.0, float("nan"), float("nan")))
    failed = [f"{float(parts[2]) - zero:+.1f}" for parts in lines if parts[0] == "fail"]
    failed = [when for when in failed if begun <= float(when) <= ended]
    told_at = f"{stopped} told to stop at 0 ({zero - since:+.1f} s from the step's start); " if stopped else ""
    return (
        f"{told_at}-primary's EndpointSlice at "
        f"{', '.join(f'{t:+.1f}' for t in slices[:4]) or 'never'}; the writer's longest gap from {begun:+.1f} "
        f"to {ended:+.1f} (attempts failed at {', '.join(failed) or 'none'})"
    )


def jobs_created(writes: list[Write]) -> list[str]:
    """The Jobs created among ``writes``: a member stopping is no rollout, and asks for none."""
    return [w.name for w in writes if w.resource == "jobs" and w.verb == "create" and w.namespace == NAMESPACE]


# --- the primary stopped: the standby takes over, the old member streams again ----------------------------


@dataclass(frozen=True)
class HandOver:
    """The primary stopped under writers and the poller: who was primary, who is, what the clients saw."""

    old: str
    new: str
    seen: Seen
    seconds_to_new_primary: float
    seconds_to_rejoined: float
    moments: str
    done: str  # what the step's action said of itself
    jobs: list[str]  # Jobs created in the namespace during the step


def stop_primary(
    install: Install, step: str, label: str, act: Callable[[Obj], str], *, recreated: bool = True
) -> HandOver:
    """``act`` on the primary pod while writers and the poller watch; then wait for the standby to lead and the
    old member to stream again (in a pod made anew, if ``recreated``)."""
    pods = {pod["metadata"]["name"]: pod for pod in members(install)}
    old_name, other_name = primary_and_replica(list(pods.values()))
    assert old_name, f"no primary to start from: {list(pods)}"
    assert other_name, f"no replica to start from: {list(pods)}"
    old_uid = pods[old_name]["metadata"]["uid"]
    clients = start_clients(install, label, list(pods.values()), cache=True)
    writers, poller = clients.writers, clients.pollers[0]
    mark = install.stack.audit.mark()
    since = time.time()
    began = time.monotonic()
    done = act(pods[old_name])

    def by_name() -> dict[str, Obj]:
        now = members(install)
        poller.watch(now)
        return {pod["metadata"]["name"]: pod for pod in now}

    wait_until(
        f"{other_name} the running primary", lambda: running_primary(by_name().get(other_name, {"metadata": {}})), 120
    )
    to_new = time.monotonic() - began

    def rejoined() -> bool:
        pod = by_name().get(old_name)
        return pod is not None and (pod["metadata"]["uid"] != old_uid or not recreated) and streaming_standby(pod)

    wait_until(f"{old_name} back as a streaming standby", rejoined, 300)
    to_rejoined = time.monotonic() - began
    writers.wait_acknowledged()
    time.sleep(2)  # the poller asks both members once more after the writers are back
    writes = install.stack.audit.since(mark, namespace=NAMESPACE)
    moments = hand_over(writes, old_name, since, writers.log(0))
    moments += f"; the new primary's Patroni, from the step's start: {patroni_says(install, other_name, since)}"
    seen = clients.seen(step, since, other_name)
    clients.stop()
    return HandOver(old_name, other_name, seen, to_new, to_rejoined, moments, done, jobs_created(writes))


def report_hand_over(report: Report, what: str, step: HandOver) -> None:
    report(
        f"{what} {step.old} -> {step.new}: {step.done}primary after {step.seconds_to_new_primary:.1f} s, "
        f"old one streaming after {step.seconds_to_rejoined:.1f} s; {step.moments}; polled {watched(step.seen.polled)}"
    )


# --- a step that leaves the primary where it is: no hand-over asked ----------------------------------------


@dataclass(frozen=True)
class Disturbed:
    """A step that leaves the primary where it is, under writers and the poller."""

    primary: str
    changes: int  # primary changes Patroni's history gained
    seen: Seen
    seconds: float  # until the primary runs and the standby streams again
    since: float  # when the step began (the epoch)
    moments: str  # the writer's longest gap, and what the control plane wrote meanwhile
    jobs: list[str]  # Jobs created in the namespace during the step


def disturb(
    install: Install, step: str, label: str, act: Callable[[Obj, Obj], None], replaced: str | None = None
) -> Disturbed:
    """``act`` on (primary, standby) while writers and the poller watch; then wait for both to run as before
    (``replaced``: "standby" when its pod is made anew)."""
    pods = {pod["metadata"]["name"]: pod for pod in members(install)}
    primary, standby = primary_and_replica(list(pods.values()))
    assert primary, f"no primary to start from: {list(pods)}"
    assert standby, f"no replica to start from: {list(pods)}"
    replaced = standby if replaced == "standby" else None
    changes = leader_changes(install)
    clients = start_clients(install, label, list(pods.values()))
    writers, direct, poller = clients.writers, clients.direct, clients.pollers[0]
    mark = install.stack.audit.mark()
    since = time.time()
    began = time.monotonic()
    act(pods[primary], pods[standby])

    uids = {name: pod["metadata"]["uid"] for name, pod in pods.items()}

    def back() -> bool:
        now = members(install)
        poller.watch(now)
        if any(p["metadata"].get("deletionTimestamp") for p in now):
            return False  # a member still stopping shows what it was, not what it is
        if replaced and {p["metadata"]["name"]: p["metadata"]["uid"] for p in now}.get(replaced) == uids[replaced]:
            return False
        return is_whole(now)

    time.sleep(1)  # the step takes effect (a pod marked for deletion, a process gone) before "back" is asked
    wait_until("a running primary and a streaming standby again", back, 300, every=0.5)
    seconds = time.monotonic() - began
    writers.wait_acknowledged()
    direct.wait_acknowledged()
    time.sleep(2)  # the poller asks every member once more after the writers are back
    now_primary, _ = primary_and_replica(members(install))
    seen = clients.seen(step, since, now_primary)
    writes = install.stack.audit.since(mark)
    moments = f"{hand_over(writes, '', since, writers.log(0))}; {readiness_marked(writes, since)}"
    clients.stop()
    changed = leader_changes(install) - changes
    return Disturbed(now_primary, changed, seen, seconds, since, moments, jobs_created(writes))


def readiness_marked(writes: list[Write], since: float) -> str:
    """Node and pod status written by anyone but a kubelet (the node controller marking them not ready), in
    seconds from ``since``: what takes a pod out of its Services with no change of its own."""
    marked = [
        f"{w.at.timestamp() - since:+.1f} {w.resource}/{w.name}"
        for w in writes
        if w.subresource == "status" and w.resource in ("nodes", "pods") and not w.user.startswith("system:node:")
    ]
    return f"node and pod status written by the control plane: {', '.join(marked[:12]) or 'none'}"


# --- the primary's node lost: cut off from its peers and the API server, or powered off -------------------


@dataclass(frozen=True)
class NodeLost:
    """The primary's node lost under writers and pollers kept on another node, then back."""

    old: str
    new: str
    node: str
    seen: Seen  # its answers are every poller's, the one beside the old primary included
    seconds_to_new_primary: float
    seconds_to_rejoined: float
    since: float
    old_patroni: str  # what the old primary's Patroni logged (nothing when its node lost power)


def last_said_primary(polled: list[Answer], member: str, since: float) -> float | None:
    """When ``member`` last answered ``f`` (a primary) to a question asked after ``since``."""
    said = [a.answered for a in polled if a.member == member and a.answer == "f" and a.asked >= since]
    return max(said, default=None)


def first_said_primary(polled: list[Answer], member: str, since: float) -> float | None:
    """When ``member`` was first asked a question after ``since`` that it answered ``f``."""
    said = [a.asked for a in polled if a.member == member and a.answer == "f" and a.asked >= since]
    return min(said, default=None)


def is_whole(now: list[Obj]) -> bool:
    """A running primary and a streaming standby, every member Ready: with two synchronous members, Ready is the
    primary or its synchronous standby (``/read-only-sync``), so the standby is the one Patroni may promote."""
    roles = sorted("primary" if running_primary(p) else "standby" if streaming_standby(p) else "?" for p in now)
    ready = all(
        c.get("status") == "True" for p in now for c in p["status"].get("conditions", []) if c["type"] == "Ready"
    )
    return roles == ["primary", "standby"] and ready


def whole(install: Install) -> bool:
    """``is_whole``, and the standby is in the leader's failsafe topology (the ``failsafe`` annotation of the shard's
    ``-leader`` ConfigMap, rewritten each leader loop): with failsafe mode on, a standby missing from it silently
    leaves the leader race ("not the healthiest node"), so a step that loses the primary before the leader's next
    loop has written it there would find nothing promoted (seen on the Patroni tier, beside this one)."""
    pods = members(install)
    _, standby = primary_and_replica(pods)
    return is_whole(pods) and standby in failsafe_topology(install)


def failsafe_topology(install: Install) -> dict[str, str]:
    """The members the leader last wrote in its failsafe topology, by name; empty before it has."""
    leader = install.get("configmap", "-n", NAMESPACE, f"{NAME}-db-0-leader")
    written = (leader.get("metadata", {}).get("annotations") or {}).get("failsafe")
    topology: dict[str, str] = json.loads(written) if written else {}
    return topology


def lose_primarys_node(install: Install, step: str, label: str, *, power: bool) -> NodeLost:
    """The primary's node cut off (``power``: and its power cut), while writers and a poller on the standby's
    node watch and, when only cut off, a poller beside the old primary too; back once the standby leads and the
    old primary is its synchronous standby again.

    It starts only from a whole shard: a standby that streams but is not yet synchronous is rightly never
    promoted (the installed tier once cut power 17 s after the previous step's rejoin, before Patroni had
    named the rejoined standby synchronous, and the shard waited for its old primary)."""
    wait_until("a primary and its synchronous standby, both Ready", lambda: whole(install), 120, every=0.5)
    pods = {pod["metadata"]["name"]: pod for pod in members(install)}
    old, other = primary_and_replica(list(pods.values()))
    assert old, f"no primary to start from: {list(pods)}"
    assert other, f"no replica to start from: {list(pods)}"
    assert install.stack.cluster is not None
    node = install.stack.cluster.node(pods[old]["spec"]["nodeName"])
    elsewhere = pods[other]["spec"]["nodeName"]
    # When only cut off, a poller beside the old primary too: what the cut-off side could still write.
    clients = start_clients(install, label, list(pods.values()), node=elsewhere, beside="" if power else node.name)
    writers, direct = clients.writers, clients.direct
    since = time.time()
    began = time.monotonic()
    if power:
        node.shut_down()
    else:
        node.cut()
    try:

        def new_primary() -> bool:
            now = {pod["metadata"]["name"]: pod for pod in members(install)}
            return running_primary(now.get(other, {"metadata": {}}))

        wait_until(f"{other} the running primary, no person acting", new_primary, 120, every=0.5)
        to_new = time.monotonic() - began
        writers.wait_acknowledged()
        direct.wait_acknowledged()
    finally:
        if power:
            node.restore()
        else:
            node.mend()
        wait_until(f"{node.name} Ready", lambda: install.node_ready(node.name) == "True", 180)

    def rejoined() -> bool:
        now = {pod["metadata"]["name"]: pod for pod in members(install)}
        return streaming_standby(now.get(old, {"metadata": {}})) and running_primary(now.get(other, {"metadata": {}}))

    wait_until(f"{old} back as a streaming standby", rejoined, 300, every=0.5)
    to_rejoined = time.monotonic() - began
    wait_until(f"{old} the synchronous standby, both members Ready", lambda: whole(install), 120, every=0.5)
    time.sleep(2)  # the pollers ask every member once more
    old_patroni = "" if power else patroni_says(install, old, since)
    seen = clients.seen(step, since, other)
    clients.stop()
    return NodeLost(old, other, node.name, seen, to_new, to_rejoined, since, old_patroni)


def report_node_lost(report: Report, what: str, step: NodeLost) -> None:
    polled = step.seen.polled
    last = last_said_primary(polled, step.old, step.since)
    first = first_said_primary(polled, step.new, step.since)
    report(
        f"{what} ({step.node}) {step.old} -> {step.new}: primary after {step.seconds_to_new_primary:.1f} s, old one "
        f"streaming after {step.seconds_to_rejoined:.1f} s; {step.old} last said f at "
        f"{'never' if last is None else f'{last - step.since:+.1f} s'}, {step.new} first at "
        f"{'never' if first is None else f'{first - step.since:+.1f} s'}; old primary's Patroni: "
        f"{step.old_patroni or '-'}; polled {watched(polled)}"
    )


# --- a drain, as a person runs it -----------------------------------------------------------------------------


def disruptions(install: Install, mark: int, since: float) -> str:
    """Every pod evicted or deleted anywhere from ``mark`` on, and its answer, in seconds from ``since``."""
    writes = install.stack.audit.since(mark, ok=False)
    picked = [
        f"{w.at.timestamp() - since:+.1f} {w.verb}{'/' + w.subresource if w.subresource else ''} "
        f"{w.namespace}/{w.name} {w.code}"
        for w in writes
        if w.resource == "pods" and (w.subresource == "eviction" or w.verb == "delete")
    ]
    return "; ".join(picked[:20])


def drain_node(install: Install, pod: Obj) -> str:
    """``kubectl drain`` of the primary's node as a person runs it (the writers and poller left out), then
    uncordon: the evicted member's volume is on that node (node-bound), so it returns only there. Says how long
    it took and every pod evicted or deleted meanwhile."""
    node = pod["spec"]["nodeName"]
    mark = install.stack.audit.mark()
    since = time.time()
    began = time.monotonic()
    command = [
        "drain",
        node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        f"--pod-selector=!{LABEL},!{POLLER_LABEL}",
    ]
    try:
        result = install.stack.control_plane.kubectl().run(*command, "--timeout=300s", timeout=330)
        assert result.returncode == 0, f"kubectl drain {node} failed: {result.stderr.strip()}"
    finally:
        install.kubectl("uncordon", node)
    drained = f"{node} drained in {time.monotonic() - began:.1f} s; "
    return f"{drained}pods evicted or deleted (s from the drain's start): {disruptions(install, mark, since)}; "
