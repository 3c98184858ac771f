"""One ShardDB's whole life on a real node, with the default seed, drain and flush commands: no row lost.

The ShardDB is ``examples/sharddb.yaml`` on the test images. The tests run in
file order, each one promise, each one step further in the ShardDB's life:
bring-up, rows in every shard, self-healing, a rollout of both images,
hibernation and wake, a scale from 3 to 5 shards, deletion with a client's
session open, and a re-creation on the kept claims. Rows are checked after every
step that could lose them; stops are checked in PostgreSQL's and Redis's own logs.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import datetime
from typing import Any

from testbed.images import workloads
from testbed.real.audit import tally
from testbed.stack import Stack

from ..support.examples import example
from ..support.sharddbs import ShardDBs, wait_until
from .cluster import Cluster, assert_cache_gone_before_shards
from .conftest import RESYNC_SECONDS, Report

NAME = "demo"
# Half of it for a smart stop, then a fast one: short, so a held session costs the test seconds, not minutes.
DRAIN_SECONDS = 20
CLEAN_START = "database system was shut down at"
CRASH_START = ("database system was interrupted", "not properly shut down", "automatic recovery in progress")
Obj = dict[str, Any]


def shard(i: int) -> str:
    return f"{NAME}-db-{i}"


def shards(sharddbs: ShardDBs) -> list[str]:
    return sorted(pod["metadata"]["name"] for pod in sharddbs.pods(NAME, "db"))


def rows(cluster: Cluster, pod: str) -> list[str]:
    return cluster.sql(pod, "SELECT shard || ':' || n FROM orders ORDER BY n").split()


def write_rows(cluster: Cluster, i: int) -> None:
    cluster.sql(
        shard(i),
        "CREATE TABLE orders (n int PRIMARY KEY, shard text NOT NULL); "
        f"INSERT INTO orders SELECT n, '{shard(i)}' FROM generate_series(1, 100) AS n",
    )


def expected(i: int) -> list[str]:
    return [f"{shard(i)}:{n}" for n in range(1, 101)]


def all_settled(sharddbs: ShardDBs, count: int, image: str) -> bool:
    pods = sharddbs.pods(NAME, "db")
    return len(pods) == count and all(
        p["spec"]["containers"][0]["image"] == image
        and not p["metadata"].get("deletionTimestamp")
        and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        for p in pods
    )


def assert_clean_stop(lines: list[str], pod: str) -> None:
    """The stop signal after the drain (the image's SIGINT: a fast shutdown) ran to its end; no kill cut it short."""
    text = "\n".join(lines)
    assert "received fast shutdown request" in text, f"{pod} was not stopped by its stop signal:\n{text[-2000:]}"
    assert "database system is shut down" in text, f"{pod} did not finish its shutdown:\n{text[-2000:]}"


def stopped_at(lines: list[str]) -> datetime:
    """When PostgreSQL logged its shutdown request (its log lines begin with their time)."""
    line = next(line for line in lines if "shutdown request" in line)
    return datetime.strptime(" ".join(line.split()[:2]), "%Y-%m-%d %H:%M:%S.%f")


def assert_clean_start(cluster: Cluster, pod: str) -> None:
    text = cluster.logs(pod, "db")
    assert CLEAN_START in text, f"{pod} did not start from a clean shutdown:\n{text[-2000:]}"
    assert not any(words in text for words in CRASH_START), f"{pod} needed crash recovery:\n{text[-2000:]}"


def test_bring_up_seeds_every_shard_by_its_dns_name(
    stack: Stack, sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    documents = example(NAME, cluster.namespace)
    documents[1]["spec"]["drainGracePeriodSeconds"] = DRAIN_SECONDS
    mark = stack.audit.mark()
    began = time.monotonic()
    cluster.apply(documents)
    available = sharddbs.available(NAME, timeout=300)
    seconds = time.monotonic() - began
    assert available["status"]["readyShards"] == 3
    seed = cluster.logs(sharddbs.items("Pod", f"job-name={NAME}-seed-3")[0]["metadata"]["name"], "seed")
    for i in range(3):
        assert f"seed: {shard(i)}.{NAME}-db:5432 accepts connections" in seed, seed
        assert f"seed: logged in to {shard(i)}.{NAME}-db as postgres" in seed, seed
    assert sharddbs.child("Job", f"{NAME}-seed-3")["status"].get("succeeded") == 1
    tail = settled(stack, cluster, mark=stack.audit.mark())
    report(f"applied to Available in {seconds:.1f} s, {cost(stack, cluster, mark)}; after Available: {tail}")
    # A bring-up's sync fails nowhere either; the idle window below is judged apart, so a failure names its time.
    events = said(cluster)
    assert events == [], events


def test_an_idle_sharddb_costs_no_write_beside_a_real_kubelet(stack: Stack, cluster: Cluster, report: Report) -> None:
    """Probes, status reports and resyncs keep coming; none of them makes Metacontroller write, not even an event.

    The only event Metacontroller writes on a ShardDB is a failed sync's ``SyncError``: one in the window
    would mean a hook refused some real pod status, and would fail every sync that sees it. The window is
    read off the audit log, so an event left from the bring-up is not counted against it.
    """
    mark = stack.audit.mark()
    time.sleep(2.5 * RESYNC_SECONDS)
    attempts = stack.metacontroller_writes(mark, namespace=cluster.namespace, ok=False)
    report(f"idle {2.5 * RESYNC_SECONDS:.0f} s: {len(attempts)} Metacontroller writes, events included")
    assert attempts == [], ([str(w) for w in attempts], said(cluster))


def test_the_cache_answers_through_its_service(sharddbs: ShardDBs, cluster: Cluster) -> None:
    # As clients do: retry while kube-proxy writes the new Service's rules (a second at most).
    ping = (
        f"for try in 1 2 3 4 5 6 7 8 9 10; do redis-cli -h {NAME}-cache -p 6379 PING && exit 0; sleep 1; done; exit 1"
    )
    cluster.client("cache-client", workloads.REDIS, ping)
    pod = wait_until("the cache client to finish", lambda: _finished(cluster, "cache-client"), 120)
    assert pod["status"]["phase"] == "Succeeded", cluster.logs("cache-client", "client")
    assert cluster.logs("cache-client", "client").strip().splitlines()[-1] == "PONG"
    assert sharddbs.get(NAME)["status"]["cacheReady"] is True


def test_rows_written_to_every_shard_are_read_back(cluster: Cluster) -> None:
    for i in range(3):
        write_rows(cluster, i)
    for i in range(3):
        assert rows(cluster, shard(i)) == expected(i)


def test_a_deleted_shard_pod_comes_back_on_its_volume_with_its_rows(sharddbs: ShardDBs, cluster: Cluster) -> None:
    before = cluster.pod(shard(1))
    assert before is not None
    cluster.kubectl("delete", "pod", shard(1), "--wait=false")
    wait_until(
        "a new demo-db-1",
        lambda: (p := cluster.pod(shard(1))) and p["metadata"]["uid"] != before["metadata"]["uid"],
        120,
    )
    cluster.ready(shard(1))
    assert rows(cluster, shard(1)) == expected(1)
    sharddbs.available(NAME, timeout=120)


def test_a_killed_database_process_restarts_on_its_volume_with_its_rows(
    stack: Stack, sharddbs: ShardDBs, cluster: Cluster
) -> None:
    pod = cluster.pod(shard(2))
    assert pod is not None
    container = pod["status"]["containerStatuses"][0]
    assert stack.node is not None
    pid = stack.node.task_pid(container["containerID"])
    os.kill(pid, signal.SIGKILL)  # as the kernel's OOM killer would
    wait_until(
        "demo-db-2 restarted by the kubelet",
        lambda: (p := cluster.pod(shard(2))) and p["status"]["containerStatuses"][0]["restartCount"] == 1,
        120,
    )
    cluster.ready(shard(2))
    assert rows(cluster, shard(2)) == expected(2)
    assert "automatic recovery in progress" in cluster.logs(shard(2), "db"), "a killed postgres must recover its WAL"
    sharddbs.available(NAME, timeout=120)


def test_a_rollout_of_both_images_keeps_every_row(
    stack: Stack, sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    mark = stack.audit.mark()
    began = time.monotonic()
    response = sharddbs.patch(
        NAME, {"dbImage": workloads.POSTGRES_ROLLOUT, "cache": {"image": workloads.REDIS_ROLLOUT}}
    )
    assert response.status_code == 200, response.text
    wait_until("every shard on the new image", lambda: all_settled(sharddbs, 3, workloads.POSTGRES_ROLLOUT), 300, 1.0)
    wait_until(
        "every cache pod on the new image",
        lambda: (
            (pods := sharddbs.pods(NAME, "cache"))
            and all(p["spec"]["containers"][0]["image"] == workloads.REDIS_ROLLOUT for p in pods)
            and len(pods) == 2
        ),
        300,
        1.0,
    )
    sharddbs.available(NAME, timeout=300)
    seconds = time.monotonic() - began
    for i in range(3):
        assert rows(cluster, shard(i)) == expected(i)
        assert_clean_start(cluster, shard(i))
    report(f"rolled both images in {seconds:.1f} s, {cost(stack, cluster, mark)}")


def test_hibernation_flushes_the_cache_then_drains_every_shard(
    stack: Stack, sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    caches = [p["metadata"]["name"] for p in sharddbs.pods(NAME, "cache")]
    mark = stack.audit.mark()
    began = time.monotonic()
    with cluster.following(caches, "cache") as cache_logs, cluster.following(shards(sharddbs), "db") as db_logs:
        assert sharddbs.patch(NAME, {"hibernated": True}).status_code == 200
        wait_until("Hibernated", lambda: sharddbs.phase(NAME) == "Hibernated", 180, 0.5)
        wait_until("no pod left", lambda: not sharddbs.pods(NAME, "db") and not sharddbs.pods(NAME, "cache"), 120)
    seconds = time.monotonic() - began
    for pod, lines in cache_logs.items():
        assert any("DB saved on disk" in line for line in lines), f"{pod} did not save:\n" + "\n".join(lines)
    for pod, lines in db_logs.items():
        assert_clean_stop(lines, pod)
    assert_cache_gone_before_shards(stack, cluster.namespace, NAME, mark)
    assert not cluster.events("FailedPreStopHook"), cluster.events("FailedPreStopHook")
    report(f"hibernated in {seconds:.1f} s, {cost(stack, cluster, mark)}")


def test_waking_needs_no_crash_recovery_and_no_seed(
    stack: Stack, sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    seeds = {job["metadata"]["name"] for job in sharddbs.items("Job")}
    mark = stack.audit.mark()
    began = time.monotonic()
    assert sharddbs.patch(NAME, {"hibernated": False}).status_code == 200
    sharddbs.available(NAME, timeout=300)
    seconds = time.monotonic() - began
    for i in range(3):
        assert rows(cluster, shard(i)) == expected(i)
        assert_clean_start(cluster, shard(i))
    assert {job["metadata"]["name"] for job in sharddbs.items("Job")} == seeds, "waking ran a seed again"
    report(f"woke to Available in {seconds:.1f} s, {cost(stack, cluster, mark)}")


def test_scaling_from_3_to_5_shards_keeps_the_rows_and_seeds_5_once(
    stack: Stack, sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    mark = stack.audit.mark()
    began = time.monotonic()
    assert sharddbs.patch(NAME, {"shards": 5}).status_code == 200
    wait_until(
        "5 shards ready and seeded",
        lambda: (
            (status := sharddbs.get(NAME).get("status", {})).get("readyShards") == 5 and status.get("seededShards") == 5
        ),
        300,
        0.5,
    )
    sharddbs.available(NAME, timeout=120)
    seconds = time.monotonic() - began
    for i in range(3):
        assert rows(cluster, shard(i)) == expected(i)
    seed = [
        w for w in stack.audit.since(mark, namespace=cluster.namespace) if w.resource == "jobs" and w.verb == "create"
    ]
    assert [w.name for w in seed] == [f"{NAME}-seed-5"]
    assert sharddbs.child("Job", f"{NAME}-seed-5")["status"].get("succeeded") == 1
    for i in (3, 4):
        write_rows(cluster, i)
    report(f"scaled 3→5 in {seconds:.1f} s, {cost(stack, cluster, mark)}")


def test_deletion_flushes_the_cache_then_drains_every_shard_even_with_a_session_open(
    stack: Stack, sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    holder = f"psql -X -h {shard(0)}.{NAME}-db -U postgres -c 'SELECT pg_sleep(600)'"
    cluster.client("session-holder", workloads.POSTGRES, holder)
    wait_until(
        "the held session",
        lambda: (
            cluster.sql(
                shard(0),
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()",
            )
            == "1"
        ),
        120,
        0.5,
    )
    caches = [p["metadata"]["name"] for p in sharddbs.pods(NAME, "cache")]
    mark = stack.audit.mark()
    began = time.monotonic()
    with cluster.following(caches, "cache") as cache_logs, cluster.following(shards(sharddbs), "db") as db_logs:
        sharddbs.delete(NAME)
        sharddbs.gone(NAME, timeout=240)
    seconds = time.monotonic() - began
    for pod, lines in cache_logs.items():
        assert any("DB saved on disk" in line for line in lines), f"{pod} did not save:\n" + "\n".join(lines)
    for pod, lines in db_logs.items():
        assert_clean_stop(lines, pod)
    held = "\n".join(db_logs[shard(0)])
    assert "terminating connection due to administrator command" in held, "the drain did not end the held session"
    waited = (stopped_at(db_logs[shard(0)]) - stopped_at(db_logs[shard(1)])).total_seconds()
    assert waited >= DRAIN_SECONDS / 2 - 2, f"the drain waited {waited:.1f} s for the held session, not half the grace"
    assert_cache_gone_before_shards(stack, cluster.namespace, NAME, mark)
    assert not cluster.events("FailedPreStopHook"), cluster.events("FailedPreStopHook")
    assert len(sharddbs.claims()) == 5, "a volume claim went with the ShardDB"
    report(f"finalized in {seconds:.1f} s, {cost(stack, cluster, mark)}")


def test_a_recreated_sharddb_finds_every_row_on_the_kept_claims(sharddbs: ShardDBs, cluster: Cluster) -> None:
    documents = example(NAME, cluster.namespace)
    documents[1]["spec"]["shards"] = 5
    cluster.apply(documents)
    sharddbs.available(NAME, timeout=300)
    for i in range(5):
        assert rows(cluster, shard(i)) == expected(i)
        assert_clean_start(cluster, shard(i))


def settled(stack: Stack, cluster: Cluster, mark: int, quiet: float = 3.0, bound: float = 30.0) -> list[str]:
    """Metacontroller's writes after ``mark`` until none came for ``quiet`` s: the bring-up's tail, with what
    each status write wrote. On the real node the status moved on for a second after Available (three writes
    0.4 s apart, just after the cache's last writes); an idle window that began at once caught them."""
    began = last = time.monotonic()
    tail: list[str] = []
    while time.monotonic() - last < quiet:
        assert time.monotonic() - began < bound, f"still writing {bound:.0f} s after Available: {tail}"
        time.sleep(0.2)
        writes = [str(w) for w in stack.metacontroller_writes(mark, namespace=cluster.namespace, ok=False)]
        if len(writes) > len(tail):
            tail, last = writes, time.monotonic()
    return tail


def said(cluster: Cluster) -> list[str]:
    """Metacontroller's events on the ShardDB, with their words, count and last time."""
    return [
        f"{e.get('lastTimestamp')} (count {e.get('count', 1)}) {e.get('reason')}: {e.get('message')}"
        for e in cluster.events_of("ShardDB")
    ]


def cost(stack: Stack, cluster: Cluster, mark: int) -> str:
    """Metacontroller's writes in the namespace since ``mark``, for the session's summary."""
    writes = stack.metacontroller_writes(mark, namespace=cluster.namespace)
    return f"{len(writes)} Metacontroller writes {dict(tally(writes))}"


def _finished(cluster: Cluster, name: str) -> Obj | None:
    pod = cluster.pod(name)
    return pod if pod and pod["status"].get("phase") in ("Succeeded", "Failed") else None
