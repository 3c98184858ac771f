"""A ShardDB with ``spec.replication.members: 2`` on the production install: Patroni runs each shard on two nodes.

One shard, a primary and its synchronous standby, brought up by the real Metacontroller through
the hooks, on the Patroni image made from Debian's packages and PyPI (the Patroni tier's). The
passwords come from a Secret through ``spec.db.env`` as a user sets them: Patroni's two, and
``POSTGRES_PASSWORD`` for the default seed, which logs in through the shard's ``-primary`` Service
with it (the hooks refuse ``PGPASSWORD`` with members: Patroni's ``pg_basebackup`` would read it).

Then, in turn, the issue's steps: a rollout of ``dbImage`` (the standby first, one hand-over), a
drain of the primary's node, the primary pod deleted, the standby deleted, the primary's postmaster
killed. Through each, writers of the user's own count acknowledged commits, one through
``<name>-db-0-primary`` and one given every member's address with ``target_session_attrs=read-write``
(a table each), and a poller (``poller.py``) asks every address each member has had whether it
accepts writes, about every 100 ms, and writes on each that says it does. Then the deletion: the
cache gone before any member stops, and Patroni's ConfigMaps removed by the cleanup Job.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial

import pytest
import yaml

from testbed.images import workloads
from testbed.real.audit import Write

from ..support.examples import PASSWORD
from ..support.sharddbs import wait_until
from .conftest import Record, Report
from .installs import Install, Obj, cache_gone_before_shards, failed_calls
from .poller import LABEL as POLLER_LABEL
from .poller import Answer, Poller, both_primary, both_written, longest_wait
from .writers import LABEL, Outage, Target, Writers

NAMESPACE = "members"
NAME = "ha"
SHARD = f"{NAME}-db-0"
PRIMARY_SERVICE = f"{SHARD}-primary"
SECRET = f"{NAME}-db"
ROLE_LABEL = "mygroup.example.com/role"
MEMBERS = f"app.kubernetes.io/instance={NAME},app.kubernetes.io/component=db"
PATRONI_STATE = tuple(f"{SHARD}-{suffix}" for suffix in ("leader", "config", "sync", "failover"))
REPLICATION_PASSWORD = "installed-tier-replication"
POLLER = f"poller-{NAME}"


def sharddb() -> list[Obj]:
    """The Secret and the ShardDB, as a user writes them for a shard with a standby."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": NAMESPACE},
        "type": "Opaque",
        "stringData": {"superuser": PASSWORD, "replication": REPLICATION_PASSWORD},
    }

    def from_secret(variable: str, key: str) -> Obj:
        return {"name": variable, "valueFrom": {"secretKeyRef": {"name": SECRET, "key": key}}}

    spec = {
        "shards": 1,
        "dbImage": workloads.POSTGRES_PATRONI,
        "replication": {"members": 2},
        "db": {
            "env": [
                from_secret("PATRONI_SUPERUSER_PASSWORD", "superuser"),
                from_secret("PATRONI_REPLICATION_PASSWORD", "replication"),
                from_secret("POSTGRES_PASSWORD", "superuser"),  # the default seed's login
            ]
        },
        "cache": {"image": workloads.REDIS, "replicas": 1},
    }
    shard = {
        "apiVersion": "mygroup.example.com/v1alpha1",
        "kind": "ShardDB",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": spec,
    }
    return [secret, shard]


@pytest.fixture(scope="module")
def install(production: Install) -> Iterator[Install]:
    production.settled().kubectl("create", "namespace", NAMESPACE)
    yield production
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


def members(install: Install) -> list[Obj]:
    return install.active_pods(NAMESPACE, MEMBERS)


def role_of(pod: Obj) -> str:
    return str(pod["metadata"].get("labels", {}).get(ROLE_LABEL, ""))


def patroni_status(pod: Obj) -> Obj:
    """What Patroni wrote of its member in the pod's ``status`` annotation (state, replication_state, ...)."""
    try:
        found: Obj = json.loads(pod["metadata"].get("annotations", {}).get("status", "{}"))
    except json.JSONDecodeError:
        return {}
    return found


@dataclass(frozen=True)
class BroughtUp:
    """The ShardDB once Available: its member pods, its status, its primary Service's endpoints."""

    pods: list[Obj]
    status: Obj
    primary_endpoints: list[str]
    write: tuple[str, str]  # the phase and log of a pod that wrote through the primary Service
    seconds: float


def endpoints_of(install: Install, service: str) -> list[str]:
    """The pods the Service's EndpointSlices name as ready endpoints (``ready`` unset counts as ready)."""
    slices = install.get("endpointslices", "-n", NAMESPACE, "-l", f"kubernetes.io/service-name={service}")["items"]
    return sorted(
        endpoint.get("targetRef", {}).get("name", "")
        for each in slices
        for endpoint in each.get("endpoints") or []
        if endpoint.get("conditions", {}).get("ready", True)
    )


@pytest.fixture(scope="module")
def brought_up(install: Install) -> BroughtUp:
    began = time.monotonic()
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(sharddb()))
    wait_until(f"{NAME} Available", lambda: install.available(NAMESPACE, NAME), 300, every=1)
    seconds = time.monotonic() - began
    status = install.get("sharddb", "-n", NAMESPACE, NAME)["status"]
    write = install.run_pod(
        "write-through-primary",
        NAMESPACE,
        f"PGPASSWORD={PASSWORD} psql -XqAt -h {PRIMARY_SERVICE} -U postgres -d postgres "
        "-c 'create table if not exists probe (n int)' -c 'insert into probe values (1) returning n'",
    )
    return BroughtUp(members(install), status, endpoints_of(install, PRIMARY_SERVICE), write, seconds)


def primary_and_replica(pods: list[Obj]) -> tuple[str, str]:
    roles = {role_of(pod): pod["metadata"]["name"] for pod in pods}
    return roles.get("primary", ""), roles.get("replica", "")


def test_a_shard_with_two_members_runs_one_pod_labelled_primary_and_one_replica(brought_up: BroughtUp) -> None:
    assert sorted(role_of(pod) for pod in brought_up.pods) == ["primary", "replica"], brought_up.pods


def test_the_two_members_of_a_shard_run_on_different_nodes(brought_up: BroughtUp) -> None:
    nodes = [pod["spec"].get("nodeName") for pod in brought_up.pods]
    assert len(nodes) == 2
    assert len(set(nodes)) == 2, nodes


def test_the_status_names_the_shards_primary_and_its_synchronous_standby(brought_up: BroughtUp) -> None:
    primary, replica = primary_and_replica(brought_up.pods)
    shards = brought_up.status["replication"]["shards"]
    assert [(each["shard"], each.get("primary"), each.get("syncStandby")) for each in shards] == [
        (0, primary, replica)
    ], shards


def test_the_primary_service_reaches_only_the_primary(brought_up: BroughtUp) -> None:
    primary, _ = primary_and_replica(brought_up.pods)
    assert brought_up.primary_endpoints == [primary]


def test_a_write_through_the_primary_service_commits(brought_up: BroughtUp) -> None:
    assert brought_up.write == ("Succeeded", "1\n"), brought_up.write


# --- what the clients saw of a hand-over --------------------------------------------------------------


def streaming_standby(pod: Obj) -> bool:
    status = patroni_status(pod)
    return (
        role_of(pod) == "replica"
        and status.get("state") == "running"
        and status.get("replication_state") == "streaming"
    )


def running_primary(pod: Obj) -> bool:
    return role_of(pod) == "primary" and patroni_status(pod).get("state") == "running"


def leader_changes(install: Install) -> int:
    """How many times the shard's primary changed, by Patroni's own history (on its ``-config`` ConfigMap)."""
    found = install.get("configmap", "-n", NAMESPACE, f"{SHARD}-config")
    history = json.loads(found["metadata"].get("annotations", {}).get("history") or "[]")
    return len(history)


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


def patroni_says(install: Install, pod: str, since: float) -> str:
    """What ``pod``'s Patroni logged of roles from ``since`` on, each line timed from it: its side of a hand-over."""
    log = install.kubectl("logs", "-n", NAMESPACE, pod, "-c", "db", "--timestamps", check=False)
    words = ("leader", "promot", "demot", "shut", "lock", "following", "failsafe", "dcs")
    picked: list[tuple[float, str, int]] = []
    for line in log.splitlines():
        stamp, _, text = line.partition(" ")
        try:
            at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        if text.startswith((" ", "\t", "Traceback")):
            continue  # a traceback's lines: its last line says what failed
        said = text.strip().split(": ", 1)[-1]  # without Patroni's own timestamp and level
        if at >= since - 1 and any(word in said.lower() for word in words):
            if picked and picked[-1][1] == said:
                picked[-1] = (picked[-1][0], said, picked[-1][2] + 1)  # a line Patroni repeats every loop
            else:
                picked.append((at - since, said, 1))
    return " | ".join(f"{at:+.1f} {said[:110]}{f' (x{n})' if n > 1 else ''}" for at, said, n in picked[:10])


# Every member's stable name, for a client that finds the primary itself (libpq tries each in turn).
EVERY_MEMBER = ",".join(f"{SHARD}-{member}.{SHARD}" for member in range(2))
READ_WRITE = (("PGTARGETSESSIONATTRS", "read-write"),)


@dataclass(frozen=True)
class Clients:
    """A step's clients: a writer through ``-primary``, one given every member, and the pollers."""

    writers: Writers
    direct: Writers
    pollers: list[Poller]

    def stop(self) -> None:
        self.writers.stop()
        self.direct.stop()
        for poller in self.pollers:
            poller.stop()


def start_clients(
    install: Install, label: str, pods: list[Obj], *, cache: bool = False, node: str | None = None, beside: str = ""
) -> Clients:
    """The step's clients, their pods created together: a writer through ``-primary`` (and the cache's, if
    ``cache``), a writer given every member's address with ``target_session_attrs=read-write`` (it does not wait
    for the Service to follow the role label), and a poller on every member's address (another on ``beside``,
    if given); each writing, and each poller hearing the primary say f and the standby t. ``node``: where they run."""
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
    return Clients(writers, direct, pollers)


def watched(polled: list[Answer]) -> str:
    """How often each member was asked, and the longest wait between two questions to it."""
    seen = sorted({each.member for each in polled})
    counts = {member: sum(1 for each in polled if each.member == member) for member in seen}
    return ", ".join(f"{m} {counts[m]} times (longest wait {longest_wait(polled, m):.2f} s)" for m in seen)


# --- a busy shard: what Patroni's loop costs Metacontroller and the hooks ---------------------------------

BUSY_SECONDS = 30


@dataclass(frozen=True)
class Busy:
    """A quiet spell under a writer: the member pods' patches by Patroni and the syncs of the ShardDB."""

    seconds: float
    patches: int  # of member pods, by Patroni's account (its role label and status annotation)
    syncs: float  # sync calls answered 200 or 304
    failed: dict[str, float]


@pytest.fixture(scope="module")
def busy(install: Install, brought_up: BroughtUp) -> Busy:
    _ = brought_up
    primary, _standby = primary_and_replica(members(install))
    writers = Writers(install, NAMESPACE, f"{NAME}-busy", (Target(PRIMARY_SERVICE, primary),), table="acked_busy")
    writers.start()
    before = install.hook_calls()
    mark = install.stack.audit.mark()
    began = time.monotonic()
    time.sleep(BUSY_SECONDS)
    after = install.hook_calls()
    seconds = time.monotonic() - began
    patroni = f"system:serviceaccount:{NAMESPACE}:{NAME}-patroni"
    writes = install.stack.audit.since(mark, namespace=NAMESPACE)
    patches = sum(1 for w in writes if w.resource == "pods" and w.verb == "patch" and w.user == patroni)
    writers.stop()
    syncs = sum(after[key] - before.get(key, 0.0) for key in ("sync 200", "sync 304") if key in after)
    return Busy(seconds, patches, syncs, failed_calls(before, after))


def test_a_busy_shard_is_synced_only_as_patroni_patches_its_member_pods(busy: Busy, report: Report) -> None:
    """Each member's pod is patched when its WAL position moves (at most once a loop), and each patch
    requeues the ShardDB: a sync answered at once, with nothing to write. Nothing else drives syncs."""
    report(
        f"under a writer for {busy.seconds:.0f} s: {busy.patches} patches of member pods by Patroni, "
        f"{busy.syncs:.0f} syncs of the ShardDB"
    )
    assert busy.failed == {}
    assert busy.patches > 0
    assert busy.syncs <= busy.patches + 2  # and at most the resync and a status write's own event


# --- a planned switchover, as the runbook asks Patroni for one -------------------------------------------


def switch_over(install: Install, pod: Obj) -> str:
    """``patronictl switchover`` in the primary's pod, with docs/runbooks/switchover.md's flags."""
    old = pod["metadata"]["name"]
    candidate = next(p["metadata"]["name"] for p in members(install) if p["metadata"]["name"] != old)
    install.kubectl(
        "exec", "-n", NAMESPACE, old, "-c", "db", "--", "patronictl", "-c", "/etc/patroni/patroni.yml",
        "switchover", SHARD, "--leader", old, "--candidate", candidate, "--force",
    )  # fmt: skip
    return ""


@pytest.fixture(scope="module")
def switched(install: Install, busy: Busy) -> HandOver:
    _ = busy  # after the quiet spell
    changes = leader_changes(install)
    step = stop_primary(
        install,
        "planned switchover (`patronictl switchover`), 2 members",
        "switchover",
        lambda pod: switch_over(install, pod),
        recreated=False,
    )
    return replace(step, done=f"history +{leader_changes(install) - changes}; ")


def test_a_switchover_moves_the_primary_once(switched: HandOver, report: Report) -> None:
    report_hand_over(report, "switchover", switched)
    assert switched.new != switched.old
    assert switched.done == "history +1; "


def test_no_acknowledged_commit_is_lost_in_a_switchover(switched: HandOver, outages: Record) -> None:
    outages(switched.outage)
    outages(switched.direct)
    assert switched.acked > 0
    assert switched.lost == frozenset()


def test_no_two_members_accept_writes_at_once_during_a_switchover(switched: HandOver) -> None:
    assert {each.answer for each in switched.polled if each.member == switched.new} >= {"t", "f"}, "no hand-over seen"
    assert both_primary(switched.polled) == []
    assert both_written(switched.polled) == []


# --- a rollout of dbImage: the standby first, one hand-over ---------------------------------------------


@dataclass(frozen=True)
class Rolled:
    """A rollout of ``dbImage`` under writers and the poller."""

    before: tuple[str, str]  # the primary and the standby before
    after: str  # the primary after
    evicted: list[str]  # the members the rollout Job evicted, in order
    changes: int  # primary changes Patroni's history gained
    images: list[str]
    outage: Outage
    acked: int
    lost: frozenset[int]
    polled: list[Answer]
    moments: str
    seconds: float
    jobs_left: list[str]
    direct: Outage  # the client given every member's address
    lost_by_any: frozenset[int]  # -1: the direct client had nothing acknowledged


@pytest.fixture(scope="module")
def rolled(install: Install, switched: HandOver) -> Rolled:
    _ = switched  # after the switchover
    pods = members(install)
    primary, standby = primary_and_replica(pods)
    assert primary, [pod["metadata"]["name"] for pod in pods]
    assert standby, [pod["metadata"]["name"] for pod in pods]
    changes = leader_changes(install)
    clients = start_clients(install, "rollout", pods, cache=True)
    writers, direct, poller = clients.writers, clients.direct, clients.pollers[0]
    mark = install.stack.audit.mark()
    since = time.time()
    began = time.monotonic()
    patch = json.dumps({"spec": {"dbImage": workloads.POSTGRES_PATRONI_ROLLOUT}})
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", patch)

    def rolled_out() -> bool:
        now = members(install)
        poller.watch(now)
        images = {pod["spec"]["containers"][0]["image"] for pod in now}
        roles = sorted(
            "primary" if running_primary(pod) else "standby" if streaming_standby(pod) else "?" for pod in now
        )
        return images == {workloads.POSTGRES_PATRONI_ROLLOUT} and roles == ["primary", "standby"]

    wait_until("both members on the new image, a primary and a streaming standby", rolled_out, 400, every=0.5)
    wait_until(f"{NAME} Available", lambda: install.available(NAMESPACE, NAME), 120, every=1)
    seconds = time.monotonic() - began

    def rollout_jobs() -> list[str]:
        return [
            j["metadata"]["name"]
            for j in install.get("jobs", "-n", NAMESPACE)["items"]
            if "-rollout-" in j["metadata"]["name"]
        ]

    wait_until("the rollout Job gone once every member rolled", lambda: not rollout_jobs(), 120, every=1)
    writers.wait_acknowledged()
    time.sleep(2)  # the poller asks every member once more after the writers are back
    writes = install.stack.audit.since(mark, namespace=NAMESPACE)
    evicted = [w.name for w in writes if w.resource == "pods" and w.subresource == "eviction" and w.code in (200, 201)]
    now = members(install)
    after, _ = primary_and_replica(now)
    outage = writers.outage("rollout of `dbImage`, 2 members (the standby first, one hand-over)", since, [0])
    moments = hand_over(writes, primary, since, writers.log(0))
    moments += f"; the new primary's Patroni, from the step's start: {patroni_says(install, after, since)}"
    direct_outage = direct.outage(f"{outage.step}: a client given every member, read-write", since, [0])
    writers.targets = (Target(PRIMARY_SERVICE, after),)  # the rows are read on the new primary
    direct.targets = (Target(EVERY_MEMBER, after),)
    acked = writers.tally(0).acked
    done = Rolled(
        (primary, standby),
        after,
        evicted,
        leader_changes(install) - changes,
        sorted(pod["spec"]["containers"][0]["image"] for pod in now),
        outage,
        len(acked),
        writers.lost(0),
        poller.answers(),
        moments,
        seconds,
        rollout_jobs(),
        direct_outage,
        writers.lost(0) | direct.lost(0) if direct.tally(0).acked else frozenset({-1}),
    )
    writers.stop()
    direct.stop()
    poller.stop()
    return done


def test_a_rollout_evicts_the_standby_first_and_the_primary_last(rolled: Rolled) -> None:
    assert rolled.evicted == [rolled.before[1], rolled.before[0]]


def test_a_rollout_moves_the_primary_once(rolled: Rolled, report: Report) -> None:
    report(
        f"rollout {rolled.before[0]} -> {rolled.after} in {rolled.seconds:.1f} s; {rolled.moments}; "
        f"polled {watched(rolled.polled)}"
    )
    assert rolled.changes == 1
    assert rolled.after == rolled.before[1]


def test_a_rollout_runs_every_member_on_the_new_image(rolled: Rolled) -> None:
    assert rolled.images == [workloads.POSTGRES_PATRONI_ROLLOUT] * 2


def test_the_rollout_job_is_gone_once_every_member_rolled(rolled: Rolled) -> None:
    assert rolled.jobs_left == []


def test_no_acknowledged_commit_is_lost_in_a_rollout(rolled: Rolled, outages: Record) -> None:
    outages(rolled.outage)
    outages(rolled.direct)
    assert rolled.acked > 0
    assert rolled.lost == frozenset()
    assert rolled.lost_by_any == frozenset()


def test_no_two_members_accept_writes_at_once_during_a_rollout(rolled: Rolled) -> None:
    assert {each.answer for each in rolled.polled if each.member == rolled.after} >= {"t", "f"}, "no hand-over seen"
    assert both_primary(rolled.polled) == []
    assert both_written(rolled.polled) == []


# --- the primary stopped: its pod deleted, its node drained --------------------------------------------


@dataclass(frozen=True)
class HandOver:
    """The primary stopped under writers: who was primary, who is, what the writers and the poller saw."""

    old: str
    new: str
    outage: Outage
    acked: int
    lost: frozenset[int]
    polled: list[Answer]
    seconds_to_new_primary: float
    seconds_to_rejoined: float
    moments: str
    done: str  # what the step's action said of itself
    direct: Outage  # the client given every member's address
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
    writers, direct, poller = clients.writers, clients.direct, clients.pollers[0]
    mark = install.stack.audit.mark()
    since = time.time()
    began = time.monotonic()
    done = act(pods[old_name])
    if label == "drain":
        done += f"pods evicted or deleted (s from the drain's start): {disruptions(install, mark, since)}; "

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
    polled = poller.answers()
    writes = install.stack.audit.since(mark, namespace=NAMESPACE)
    moments = hand_over(writes, old_name, since, writers.log(0))
    moments += f"; the new primary's Patroni, from the step's start: {patroni_says(install, other_name, since)}"
    outage = writers.outage(step, since, [0])
    direct_outage = direct.outage(f"{step}: a client given every member, read-write", since, [0])
    writers.targets = (Target(PRIMARY_SERVICE, other_name),)  # the rows are read on the new primary
    direct.targets = (Target(EVERY_MEMBER, other_name),)
    acked = writers.tally(0).acked
    lost = writers.lost(0) | (direct.lost(0) if direct.tally(0).acked else frozenset({-1}))
    writers.stop()
    direct.stop()
    poller.stop()
    return HandOver(
        old_name,
        other_name,
        outage,
        len(acked),
        lost,
        polled,
        to_new,
        to_rejoined,
        moments,
        done,
        direct_outage,
        jobs_created(writes),
    )


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


def report_hand_over(report: Report, what: str, step: HandOver) -> None:
    report(
        f"{what} {step.old} -> {step.new}: {step.done}primary after {step.seconds_to_new_primary:.1f} s, "
        f"old one streaming after {step.seconds_to_rejoined:.1f} s; {step.moments}; polled {watched(step.polled)}"
    )


def drain_node(install: Install, pod: Obj) -> str:
    """``kubectl drain`` of the primary's node as a person runs it (the writers and poller left out), then
    uncordon: the evicted member's volume is on that node (node-bound), so it returns only there."""
    node = pod["spec"]["nodeName"]
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
    return f"{node} drained in {time.monotonic() - began:.1f} s; "


@pytest.fixture(scope="module")
def drained(install: Install, rolled: Rolled) -> HandOver:
    _ = rolled  # after the rollout
    return stop_primary(
        install,
        "drain of the primary's node, 2 members (node-bound volumes)",
        "drain",
        lambda pod: drain_node(install, pod),
    )


def test_draining_the_primarys_node_makes_the_standby_primary(drained: HandOver, report: Report) -> None:
    report_hand_over(report, "drain", drained)
    assert drained.new != drained.old


def test_no_acknowledged_commit_is_lost_when_the_primarys_node_is_drained(drained: HandOver, outages: Record) -> None:
    outages(drained.outage)
    outages(drained.direct)
    assert drained.acked > 0
    assert drained.lost == frozenset()


def test_no_two_members_accept_writes_at_once_during_a_drain(drained: HandOver) -> None:
    assert {each.answer for each in drained.polled if each.member == drained.new} >= {"t", "f"}, "no hand-over seen"
    assert both_primary(drained.polled) == []
    assert both_written(drained.polled) == []


def delete_pod(install: Install, pod: Obj) -> str:
    install.kubectl("delete", "pod", "-n", NAMESPACE, pod["metadata"]["name"], "--wait=false")
    return ""


@pytest.fixture(scope="module")
def failover(install: Install, drained: HandOver) -> HandOver:
    _ = drained  # after the drain
    return stop_primary(
        install,
        "primary pod deleted, 2 members (Patroni hands over as it stops)",
        "failover",
        lambda pod: delete_pod(install, pod),
    )


def test_deleting_the_primary_pod_makes_the_standby_primary(failover: HandOver) -> None:
    assert failover.new != failover.old


def test_a_failover_starts_no_rollout_job(failover: HandOver) -> None:
    assert failover.jobs == []


def test_after_the_failover_the_primary_service_reaches_the_new_primary(install: Install, failover: HandOver) -> None:
    assert endpoints_of(install, PRIMARY_SERVICE) == [failover.new]


def test_no_acknowledged_commit_is_lost_when_the_primary_pod_is_deleted(failover: HandOver, outages: Record) -> None:
    outages(failover.outage)
    outages(failover.direct)
    assert failover.acked > 0
    assert failover.lost == frozenset()


def test_the_two_members_never_both_answer_that_they_accept_writes(failover: HandOver, report: Report) -> None:
    report_hand_over(report, "failover", failover)
    polled = failover.polled
    assert {each.answer for each in polled if each.member == failover.new} >= {"t", "f"}, "the poller saw no failover"
    assert both_primary(polled) == []
    assert both_written(polled) == []


# --- a standby deleted, the primary's postmaster killed: no hand-over asked ----------------------------


@dataclass(frozen=True)
class Disturbed:
    """A step that leaves the primary where it is, under writers and the poller."""

    primary: str
    changes: int  # primary changes Patroni's history gained
    outage: Outage
    direct: Outage
    acked: int
    lost: frozenset[int]
    polled: list[Answer]
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
        roles = sorted("primary" if running_primary(p) else "standby" if streaming_standby(p) else "?" for p in now)
        ready = all(
            c.get("status") == "True" for p in now for c in p["status"].get("conditions", []) if c["type"] == "Ready"
        )
        return roles == ["primary", "standby"] and ready

    time.sleep(1)  # the step takes effect (a pod marked for deletion, a process gone) before "back" is asked
    wait_until("a running primary and a streaming standby again", back, 300, every=0.5)
    seconds = time.monotonic() - began
    writers.wait_acknowledged()
    direct.wait_acknowledged()
    time.sleep(2)  # the poller asks every member once more after the writers are back
    now_primary, _ = primary_and_replica(members(install))
    outage = writers.outage(step, since, [0])
    direct_outage = direct.outage(f"{step}: a client given every member, read-write", since, [0])
    writers.targets = (Target(PRIMARY_SERVICE, now_primary),)
    direct.targets = (Target(EVERY_MEMBER, now_primary),)
    acked = writers.tally(0).acked
    lost = writers.lost(0) | (direct.lost(0) if direct.tally(0).acked else frozenset({-1}))
    polled = poller.answers()
    writes = install.stack.audit.since(mark)
    moments = f"{hand_over(writes, '', since, writers.log(0))}; {readiness_marked(writes, since)}"
    for each in (writers, direct, poller):
        each.stop()
    return Disturbed(
        now_primary,
        leader_changes(install) - changes,
        outage,
        direct_outage,
        len(acked),
        lost,
        polled,
        seconds,
        since,
        moments,
        jobs_created(writes),
    )


def jobs_created(writes: list[Write]) -> list[str]:
    """The Jobs created among ``writes``: a member stopping is no rollout, and asks for none."""
    return [w.name for w in writes if w.resource == "jobs" and w.verb == "create" and w.namespace == NAMESPACE]


def readiness_marked(writes: list[Write], since: float) -> str:
    """Node and pod status written by anyone but a kubelet (the node controller marking them not ready), in
    seconds from ``since``: what takes a pod out of its Services with no change of its own."""
    marked = [
        f"{w.at.timestamp() - since:+.1f} {w.resource}/{w.name}"
        for w in writes
        if w.subresource == "status" and w.resource in ("nodes", "pods") and not w.user.startswith("system:node:")
    ]
    return f"node and pod status written by the control plane: {', '.join(marked[:12]) or 'none'}"


@pytest.fixture(scope="module")
def standby_deleted(install: Install, failover: HandOver) -> Disturbed:
    _ = failover  # after the failover

    def delete_standby(_: Obj, standby: Obj) -> None:
        delete_pod(install, standby)

    return disturb(install, "standby pod deleted, 2 members (writes go on)", "standby", delete_standby, "standby")


def test_deleting_the_standby_moves_no_primary(standby_deleted: Disturbed, report: Report) -> None:
    report(f"standby deleted: back in {standby_deleted.seconds:.1f} s; polled {watched(standby_deleted.polled)}")
    assert standby_deleted.changes == 0


def test_a_standby_made_anew_starts_no_rollout_job(standby_deleted: Disturbed) -> None:
    assert standby_deleted.jobs == []


def test_no_acknowledged_commit_is_lost_when_the_standby_is_deleted(
    standby_deleted: Disturbed, outages: Record
) -> None:
    outages(standby_deleted.outage)
    outages(standby_deleted.direct)
    assert standby_deleted.acked > 0
    assert standby_deleted.lost == frozenset()


def test_no_two_members_accept_writes_at_once_when_the_standby_is_deleted(standby_deleted: Disturbed) -> None:
    assert both_primary(standby_deleted.polled) == []
    assert both_written(standby_deleted.polled) == []


def kill_postmaster(install: Install, pod: Obj) -> None:
    """SIGKILL to the primary's postmaster (its pid is the first line of ``postmaster.pid``), as the OOM killer."""
    pid_file = "/var/lib/postgresql/data/pgdata/postmaster.pid"
    name = pod["metadata"]["name"]
    install.kubectl("exec", "-n", NAMESPACE, name, "-c", "db", "--", "sh", "-c", f'kill -KILL "$(head -1 {pid_file})"')


@pytest.fixture(scope="module")
def postmaster_killed(install: Install, standby_deleted: Disturbed) -> Disturbed:
    _ = standby_deleted  # after the standby's step

    def kill(primary: Obj, _: Obj) -> None:
        kill_postmaster(install, primary)

    return disturb(install, "primary's postmaster SIGKILLed, 2 members", "postmaster", kill)


def test_a_killed_postmaster_loses_no_acknowledged_commit(postmaster_killed: Disturbed, outages: Record) -> None:
    outages(postmaster_killed.outage)
    outages(postmaster_killed.direct)
    assert postmaster_killed.acked > 0
    assert postmaster_killed.lost == frozenset()


def test_no_two_members_accept_writes_at_once_when_the_postmaster_is_killed(
    postmaster_killed: Disturbed, report: Report
) -> None:
    report(
        f"postmaster killed: primary changes {postmaster_killed.changes}; polled {watched(postmaster_killed.polled)}"
    )
    assert both_primary(postmaster_killed.polled) == []
    assert both_written(postmaster_killed.polled) == []


# --- the API server down: the primary keeps serving (Patroni's failsafe mode) ------------------------

API_DOWN_SECONDS = 30


@pytest.fixture(scope="module")
def api_server_down(install: Install, postmaster_killed: Disturbed) -> Disturbed:
    """The API server stopped for 30 s and started again on its data, as a control plane's outage."""
    _ = postmaster_killed  # after the postmaster's step
    plane = install.stack.control_plane

    def outage(_: Obj, __: Obj) -> None:
        plane.kill("kube-apiserver")
        time.sleep(API_DOWN_SECONDS)
        plane.restart("kube-apiserver")

    return disturb(install, f"API server down {API_DOWN_SECONDS} s, 2 members", "apiserver", outage)


def test_with_the_api_server_down_the_primary_stays_primary(
    install: Install, api_server_down: Disturbed, report: Report
) -> None:
    said = patroni_says(install, api_server_down.primary, api_server_down.since)
    report(
        f"API server down: primary changes {api_server_down.changes}; {api_server_down.moments}; its Patroni: {said}"
    )
    assert api_server_down.changes == 0
    assert "failsafe" in said, "the primary's Patroni never said it kept leading in failsafe mode"


def test_no_acknowledged_commit_is_lost_while_the_api_server_is_down(
    api_server_down: Disturbed, outages: Record
) -> None:
    outages(api_server_down.outage)
    outages(api_server_down.direct)
    assert api_server_down.acked > 0
    assert api_server_down.lost == frozenset()


def test_no_two_members_accept_writes_at_once_while_the_api_server_is_down(api_server_down: Disturbed) -> None:
    assert both_primary(api_server_down.polled) == []
    assert both_written(api_server_down.polled) == []


# --- the primary's node cut off from its peers and the API server, then powered off -------------------


@dataclass(frozen=True)
class NodeLost:
    """The primary's node lost under writers and pollers kept on another node, then back."""

    old: str
    new: str
    node: str
    outage: Outage
    direct: Outage
    acked: int
    lost: frozenset[int]
    polled: list[Answer]  # every poller's, the one beside the old primary included
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


def lose_primarys_node(install: Install, step: str, label: str, *, power: bool) -> NodeLost:
    """The primary's node cut off (``power``: and its power cut), while writers and a poller on the standby's
    node watch and, when only cut off, a poller beside the old primary too; back once the standby leads."""
    pods = {pod["metadata"]["name"]: pod for pod in members(install)}
    old, other = primary_and_replica(list(pods.values()))
    assert old, f"no primary to start from: {list(pods)}"
    assert other, f"no replica to start from: {list(pods)}"
    assert install.stack.cluster is not None
    node = install.stack.cluster.node(pods[old]["spec"]["nodeName"])
    elsewhere = pods[other]["spec"]["nodeName"]
    # When only cut off, a poller beside the old primary too: what the cut-off side could still write.
    clients = start_clients(install, label, list(pods.values()), node=elsewhere, beside="" if power else node.name)
    writers, direct, pollers = clients.writers, clients.direct, clients.pollers
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
    time.sleep(2)  # the pollers ask every member once more
    polled = [answer for poller in pollers for answer in poller.answers()]
    old_patroni = "" if power else patroni_says(install, old, since)
    outage = writers.outage(step, since, [0])
    direct_outage = direct.outage(f"{step}: a client given every member, read-write", since, [0])
    writers.targets = (Target(PRIMARY_SERVICE, other),)  # the rows are read on the new primary
    direct.targets = (Target(EVERY_MEMBER, other),)
    acked = writers.tally(0).acked
    lost = writers.lost(0) | (direct.lost(0) if direct.tally(0).acked else frozenset({-1}))
    clients.stop()
    return NodeLost(
        old, other, node.name, outage, direct_outage, len(acked), lost, polled, to_new, to_rejoined, since, old_patroni
    )


def report_node_lost(report: Report, what: str, step: NodeLost) -> None:
    last = last_said_primary(step.polled, step.old, step.since)
    first = first_said_primary(step.polled, step.new, step.since)
    report(
        f"{what} ({step.node}) {step.old} -> {step.new}: primary after {step.seconds_to_new_primary:.1f} s, old one "
        f"streaming after {step.seconds_to_rejoined:.1f} s; {step.old} last said f at "
        f"{'never' if last is None else f'{last - step.since:+.1f} s'}, {step.new} first at "
        f"{'never' if first is None else f'{first - step.since:+.1f} s'}; old primary's Patroni: "
        f"{step.old_patroni or '-'}; polled {watched(step.polled)}"
    )


@pytest.fixture(scope="module")
def cut_off(install: Install, api_server_down: Disturbed) -> NodeLost:
    _ = api_server_down  # after the API server's step
    return lose_primarys_node(
        install, "primary's node cut off from its peers and the API server, 2 members", "cut", power=False
    )


def test_a_primary_cut_off_is_replaced_by_its_standby_with_no_person_acting(cut_off: NodeLost, report: Report) -> None:
    report_node_lost(report, "cut off", cut_off)
    assert cut_off.new != cut_off.old


def test_a_primary_cut_off_stops_taking_writes_before_its_standby_takes_over(cut_off: NodeLost) -> None:
    last = last_said_primary(cut_off.polled, cut_off.old, cut_off.since)
    first = first_said_primary(cut_off.polled, cut_off.new, cut_off.since)
    assert last is not None, "the poller beside the old primary never heard it say f after the cut"
    assert first is not None, "the new primary was never heard saying f"
    assert last < first


def test_no_acknowledged_commit_is_lost_when_the_primarys_node_is_cut_off(cut_off: NodeLost, outages: Record) -> None:
    outages(cut_off.outage)
    outages(cut_off.direct)
    assert cut_off.acked > 0
    assert cut_off.lost == frozenset()


def test_no_two_members_accept_writes_at_once_when_the_primarys_node_is_cut_off(cut_off: NodeLost) -> None:
    assert both_primary(cut_off.polled) == []
    assert both_written(cut_off.polled) == []


@pytest.fixture(scope="module")
def powered_off(install: Install, cut_off: NodeLost) -> NodeLost:
    _ = cut_off  # after the cut
    return lose_primarys_node(install, "primary's node powered off, 2 members", "power", power=True)


def test_a_primary_whose_node_loses_power_is_replaced_by_its_standby_with_no_person_acting(
    powered_off: NodeLost, report: Report
) -> None:
    report_node_lost(report, "powered off", powered_off)
    assert powered_off.new != powered_off.old


def test_no_acknowledged_commit_is_lost_when_the_primarys_node_loses_power(
    powered_off: NodeLost, outages: Record
) -> None:
    outages(powered_off.outage)
    outages(powered_off.direct)
    assert powered_off.acked > 0
    assert powered_off.lost == frozenset()


def test_no_two_members_accept_writes_at_once_when_the_primarys_node_loses_power(powered_off: NodeLost) -> None:
    assert both_primary(powered_off.polled) == []
    assert both_written(powered_off.polled) == []


# --- hibernation and wake: the teardown's order, no failover while stopping, the data and roles kept ----


@dataclass(frozen=True)
class Slept:
    """The ShardDB hibernated under a writer, then woken."""

    cache_gone: list[float]
    members_stopped: list[float]
    changes_while_stopping: int  # primary changes Patroni's history gained while the members stopped
    left_running: list[str]  # member pods once Hibernated (none)
    seconds_to_sleep: float
    seconds_to_wake: float
    acked: int
    lost: frozenset[int]
    role_kept: str  # what the woken primary says of the role made before the sleep


def phase(install: Install) -> str:
    return str(install.get("sharddb", "-n", NAMESPACE, NAME).get("status", {}).get("phase", ""))


def psql_on(install: Install, pod: str, statement: str) -> str:
    """``psql`` as the superuser on the member's own socket (trust there, as the rendered pg_hba says)."""
    return install.kubectl(
        "exec", "-n", NAMESPACE, pod, "-c", "db", "--", "psql", "-XqAt", "-U", "postgres", "-c", statement
    ).strip()


@pytest.fixture(scope="module")
def slept(install: Install, powered_off: NodeLost) -> Slept:
    _ = powered_off  # after the node steps
    primary, _standby = primary_and_replica(members(install))
    assert primary, [pod["metadata"]["name"] for pod in members(install)]
    psql_on(install, primary, "CREATE ROLE sleeper LOGIN")
    writers = Writers(install, NAMESPACE, f"{NAME}-sleep", (Target(PRIMARY_SERVICE, primary),), table="acked_sleep")
    writers.start()
    changes = leader_changes(install)
    mark = install.stack.audit.mark()
    began = time.monotonic()
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", '{"spec":{"hibernated":true}}')
    wait_until(f"{NAME} Hibernated", lambda: phase(install) == "Hibernated", 300, every=1)
    to_sleep = time.monotonic() - began
    changes_while_stopping = leader_changes(install) - changes
    left = [pod["metadata"]["name"] for pod in members(install)]
    cache_gone, stopped = cache_gone_before_shards(install.stack.audit.since(mark, namespace=NAMESPACE), NAME)
    began = time.monotonic()
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", '{"spec":{"hibernated":false}}')
    wait_until(f"{NAME} Available again", lambda: install.available(NAMESPACE, NAME), 300, every=1)

    def serving() -> bool:
        roles = sorted(
            "primary" if running_primary(p) else "standby" if streaming_standby(p) else "?" for p in members(install)
        )
        return roles == ["primary", "standby"]

    wait_until("a running primary and a streaming standby after the wake", serving, 300, every=1)
    to_wake = time.monotonic() - began
    writers.wait_acknowledged()
    woken, _ = primary_and_replica(members(install))
    writers.targets = (Target(PRIMARY_SERVICE, woken),)
    acked = writers.tally(0).acked
    lost = writers.lost(0)
    writers.stop()
    role = psql_on(install, woken, "SELECT rolname FROM pg_roles WHERE rolname = 'sleeper'")
    return Slept(cache_gone, stopped, changes_while_stopping, left, to_sleep, to_wake, len(acked), lost, role)


def test_hibernating_removes_the_cache_before_any_member_stops(slept: Slept, report: Report) -> None:
    report(f"hibernated in {slept.seconds_to_sleep:.1f} s, woken in {slept.seconds_to_wake:.1f} s")
    assert slept.cache_gone, "no cache pod was removed by a kubelet"
    assert slept.members_stopped, "no member pod was stopped"
    assert max(slept.cache_gone) < min(slept.members_stopped)


def test_hibernating_stops_every_member_with_no_failover(slept: Slept) -> None:
    assert slept.left_running == []
    assert slept.changes_while_stopping == 0


def test_a_woken_shard_has_every_acknowledged_commit(slept: Slept) -> None:
    assert slept.acked > 0
    assert slept.lost == frozenset()


def test_a_woken_shard_keeps_its_database_roles(slept: Slept) -> None:
    assert slept.role_kept == "sleeper"


# --- the deletion ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deleted:
    cache_gone: list[float]
    members_stopped: list[float]
    cleanup_jobs_created: list[str]
    patroni_state_left: list[str]


@pytest.fixture(scope="module")
def deleted(install: Install, slept: Slept) -> Deleted:
    """The ShardDB deleted once the last step is over (its members as that step left them)."""
    _ = slept  # after the wake
    assert len(members(install)) == 2
    mark = install.stack.audit.mark()
    install.kubectl("-n", NAMESPACE, "delete", "sharddb", NAME, "--wait=false")
    wait_until(
        f"{NAME} gone", lambda: not install.kubectl("-n", NAMESPACE, "get", "sharddb", NAME, check=False), 300, every=1
    )
    writes = install.stack.audit.since(mark, namespace=NAMESPACE)
    cache_gone, stopped = cache_gone_before_shards(writes, NAME)
    jobs = [w.name for w in writes if w.resource == "jobs" and w.verb == "create"]
    config_maps = install.get("configmaps", "-n", NAMESPACE)["items"]
    left = sorted(cm["metadata"]["name"] for cm in config_maps if cm["metadata"]["name"] in PATRONI_STATE)
    return Deleted(cache_gone, stopped, jobs, left)


def test_deleting_it_removes_the_cache_before_any_member_pod_stops(deleted: Deleted) -> None:
    assert deleted.cache_gone, "no cache pod was removed by a kubelet"
    assert deleted.members_stopped, "no member pod was stopped"
    assert max(deleted.cache_gone) < min(deleted.members_stopped)


def test_deleting_it_runs_the_patroni_cleanup_job(deleted: Deleted) -> None:
    assert deleted.cleanup_jobs_created == [f"{NAME}-patroni-cleanup"]


def test_deleting_it_leaves_none_of_patronis_config_maps(deleted: Deleted) -> None:
    assert deleted.patroni_state_left == []
