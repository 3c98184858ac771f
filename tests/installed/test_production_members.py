"""A ShardDB with ``spec.replication.members: 2`` on the production install: Patroni runs each shard on two nodes.

One shard, a primary and its synchronous standby, brought up by the real Metacontroller through
the hooks, on the Patroni image made from Debian's packages and PyPI (the Patroni tier's). The
passwords come from a Secret through ``spec.db.env`` as a user sets them: Patroni's two, and
``POSTGRES_PASSWORD`` for the default seed, which logs in through the shard's ``-primary`` Service
with it (no member reads that variable: the image's entrypoint starts Patroni, not the official
entrypoint; ``PGPASSWORD`` would be read by every libpq client in the member, Patroni's
``pg_basebackup`` and ``pg_rewind`` as the replication user included).

Then the step the issue's table calls "primary pod deleted": writers of the user's own count
acknowledged commits through ``<name>-db-0-primary`` while the primary pod is deleted, and a
poller asks each member ``pg_is_in_recovery()`` about every 100 ms (a new ``psql`` connection
per question, by the members' addresses and the recreated member's DNS name). Then the deletion:
the cache gone before any member stops, and Patroni's ConfigMaps removed by the cleanup Job.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml

from testbed.images import workloads

from ..support.examples import PASSWORD
from ..support.sharddbs import wait_until
from .conftest import Record, Report
from .installs import Install, Obj, cache_gone_before_shards
from .writers import Outage, Target, Writers

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
# One loop per address: a new connection each time, bounded, then ~100 ms of sleep. Each line:
# "<label> <asked at> <answered at> <answer>", the answer t, f or x (no answer).
POLL_SCRIPT = """
poll() {
  while true; do
    asked=$(date +%s.%N)
    answer=$(PGCONNECT_TIMEOUT=1 timeout 2 psql -XqAt -h "$2" -U postgres -d postgres \
      -c 'select pg_is_in_recovery()' 2>/dev/null) || answer=x
    echo "$1 $asked $(date +%s.%N) ${answer:-x}"
    sleep 0.1
  done
}
poll old "$OLD_IP" & poll other "$OTHER_IP" & poll old "$OLD_HOST" &
wait
"""


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


# --- the primary pod deleted -------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One ``pg_is_in_recovery()`` asked of a member: when, and what it said (t, f, or x for no answer)."""

    member: str
    asked: float
    answered: float
    answer: str


def answers(log: str) -> list[Answer]:
    out = []
    for line in log.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in ("old", "other"):
            out.append(Answer(parts[0], float(parts[1]), float(parts[2]), parts[3]))
    return out


def both_primary(polled: list[Answer]) -> list[tuple[Answer, Answer]]:
    """Pairs of answers ``f`` from the two members whose questions overlapped in time: two writable primaries."""
    said_f = [each for each in polled if each.answer == "f"]
    return [
        (one, two)
        for one, two in itertools.combinations(said_f, 2)
        if one.member != two.member and one.asked <= two.answered and two.asked <= one.answered
    ]


@dataclass(frozen=True)
class Failover:
    """The primary pod deleted under writers: who was primary, who is, what the writers and the poller saw."""

    old: str
    new: str
    outage: Outage
    acked: int
    lost: frozenset[int]
    polled: list[Answer]
    seconds_to_new_primary: float
    seconds_to_rejoined: float


def streaming_standby(pod: Obj) -> bool:
    status = patroni_status(pod)
    return (
        role_of(pod) == "replica"
        and status.get("state") == "running"
        and status.get("replication_state") == "streaming"
    )


def running_primary(pod: Obj) -> bool:
    return role_of(pod) == "primary" and patroni_status(pod).get("state") == "running"


def start_poller(install: Install, old: Obj, other: Obj) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": POLLER, "namespace": NAMESPACE},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 999, "runAsGroup": 999},
            "containers": [
                {
                    "name": "poller",
                    "image": workloads.POSTGRES,
                    "command": ["bash", "-c", POLL_SCRIPT],
                    "env": [
                        {"name": "PGPASSWORD", "value": PASSWORD},
                        {"name": "OLD_IP", "value": old["status"]["podIP"]},
                        {"name": "OTHER_IP", "value": other["status"]["podIP"]},
                        {"name": "OLD_HOST", "value": f"{old['metadata']['name']}.{SHARD}"},
                    ],
                }
            ],
        },
    }
    install.kubectl("apply", "-f", "-", stdin=json.dumps(pod))

    def polling() -> bool:
        seen = {
            (each.member, each.answer)
            for each in answers(install.kubectl("logs", "-n", NAMESPACE, POLLER, check=False))
        }
        return {("old", "f"), ("other", "t")} <= seen

    wait_until("the poller hearing the primary say f and the standby t", polling, 120)


@pytest.fixture(scope="module")
def failover(install: Install, brought_up: BroughtUp) -> Iterator[Failover]:
    pods = {pod["metadata"]["name"]: pod for pod in brought_up.pods}
    old_name, other_name = primary_and_replica(brought_up.pods)
    assert old_name, f"no primary to start from: {list(pods)}"
    assert other_name, f"no replica to start from: {list(pods)}"
    old_uid = pods[old_name]["metadata"]["uid"]
    writers = Writers(install, NAMESPACE, NAME, (Target(PRIMARY_SERVICE, old_name),), cache=f"{NAME}-cache")
    writers.start()
    start_poller(install, pods[old_name], pods[other_name])
    since = time.time()
    began = time.monotonic()
    install.kubectl("delete", "pod", "-n", NAMESPACE, old_name, "--wait=false")

    def by_name() -> dict[str, Obj]:
        return {pod["metadata"]["name"]: pod for pod in members(install)}

    wait_until(
        f"{other_name} the running primary", lambda: running_primary(by_name().get(other_name, {"metadata": {}})), 120
    )
    to_new = time.monotonic() - began

    def rejoined() -> bool:
        pod = by_name().get(old_name)
        return pod is not None and pod["metadata"]["uid"] != old_uid and streaming_standby(pod)

    wait_until(f"{old_name} back as a streaming standby", rejoined, 300)
    to_rejoined = time.monotonic() - began
    writers.wait_acknowledged()
    time.sleep(2)  # the poller asks both members once more after the writers are back
    polled = answers(install.kubectl("logs", "-n", NAMESPACE, POLLER))
    outage = writers.outage("primary pod deleted, 2 members (Patroni hands over as it stops)", since, [0])
    writers.targets = (Target(PRIMARY_SERVICE, other_name),)  # the rows are read on the new primary
    acked = writers.tally(0).acked
    lost = writers.lost(0)
    yield Failover(old_name, other_name, outage, len(acked), lost, polled, to_new, to_rejoined)
    writers.stop()
    install.kubectl("delete", "pod", "-n", NAMESPACE, POLLER, "--wait=false")


def test_deleting_the_primary_pod_makes_the_standby_primary(failover: Failover) -> None:
    assert failover.new != failover.old


def test_after_the_failover_the_primary_service_reaches_the_new_primary(install: Install, failover: Failover) -> None:
    assert endpoints_of(install, PRIMARY_SERVICE) == [failover.new]


def test_no_acknowledged_commit_is_lost_when_the_primary_pod_is_deleted(failover: Failover, outages: Record) -> None:
    outages(failover.outage)
    assert failover.acked > 0
    assert failover.lost == frozenset()


def test_the_two_members_never_both_answer_that_they_accept_writes(failover: Failover, report: Report) -> None:
    polled = failover.polled
    asked = {member: [each.asked for each in polled if each.member == member] for member in ("old", "other")}
    every = {member: max((b - a for a, b in itertools.pairwise(times)), default=0.0) for member, times in asked.items()}
    report(
        f"failover {failover.old} -> {failover.new}: primary after {failover.seconds_to_new_primary:.1f} s, "
        f"old one streaming after {failover.seconds_to_rejoined:.1f} s; pg_is_in_recovery() asked "
        f"{len(asked['old'])} times of the old member, {len(asked['other'])} of the other, longest wait "
        f"between two questions {every}"
    )
    assert {each.answer for each in polled if each.member == "other"} >= {"t", "f"}, "the poller saw no failover"
    assert both_primary(polled) == []


# --- the deletion ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deleted:
    cache_gone: list[float]
    members_stopped: list[float]
    cleanup_jobs_created: list[str]
    patroni_state_left: list[str]


@pytest.fixture(scope="module")
def deleted(install: Install, failover: Failover) -> Deleted:
    """The ShardDB deleted once the failover step is over (its members as the failover left them)."""
    assert failover.new in {pod["metadata"]["name"] for pod in members(install)}
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
