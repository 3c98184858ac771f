"""Every example in ``examples/`` on the real node: it reaches Available and is deleted in order.

``examples/sharddb.yaml`` lives its whole life in ``test_lifecycle.py``; this module
runs the two others, one ShardDB each: ``sharddb-minimal.yaml`` (PostgreSQL and Redis on
the default commands, no password) and ``sharddb-mariadb.yaml`` (MariaDB behind memcached,
with the example's own seed, drain and flush commands). The MariaDB tests run in file
order, each a step further in that ShardDB's life: bring-up, the cache, rows in every
shard, a shard pod deleted and back with its rows, and deletion with a client's session
open. Stops are checked in the servers' own logs; no stop may be a ``FailedPreStopHook``.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from testbed.images import workloads
from testbed.real.realnode import NodeSpec
from testbed.stack import Stack

from ..support.examples import EXAMPLES, PASSWORD, example
from ..support.sharddbs import ShardDBs, wait_until
from .cluster import Cluster, assert_cache_gone_before_shards
from .conftest import Report

Obj = dict[str, Any]

# Which module runs each example on real nodes (from this folder): the one with standbys needs two
# nodes and the Patroni image, so the installed tier runs it.
RUN_BY = {
    "sharddb.yaml": "test_lifecycle.py",
    "sharddb-minimal.yaml": "test_examples.py",
    "sharddb-mariadb.yaml": "test_examples.py",
    "sharddb-members.yaml": "../installed/test_production_members/shard.py",
    "sharddb-from-single-copy.yaml": "../installed/test_production_copy.py",
    "sharddb-backup.yaml": "../installed/test_production_backup.py",
    "sharddb-restore.yaml": "../installed/test_production_backup.py",
}
MINIMAL = "minimal"
ORDERS = "orders"
# Half of it for the sessions to end, then the stop signal: short, so a held session costs seconds.
DRAIN_SECONDS = 20
ROWS = 100
FLUSH_SECONDS = 5  # the example's flush: memcached keeps nothing, so it waits for clients to leave the Service


def orders_shard(i: int) -> str:
    return f"{ORDERS}-db-{i}"


def mariadb(cluster: Cluster, pod: str, statement: str) -> str:
    """One statement in a shard pod as root over its local socket, with the password the pod was given."""
    login = 'MYSQL_PWD="$MARIADB_ROOT_PASSWORD" exec mariadb --user=root --batch --skip-column-names -e "$1"'
    return cluster.exec(pod, "db", "sh", "-c", login, "sh", statement).strip()


def orders(cluster: Cluster, i: int) -> list[str]:
    return mariadb(cluster, orders_shard(i), "SELECT CONCAT(shard, ':', n) FROM orders.orders ORDER BY n").split()


def expected_orders(i: int) -> list[str]:
    return [f"{orders_shard(i)}:{n}" for n in range(1, ROWS + 1)]


def mariadb_stopped_at(lines: list[str]) -> datetime:
    """When mariadbd logged its normal shutdown (its log lines begin with the date and an unpadded hour)."""
    line = next(line for line in lines if "Normal shutdown" in line)
    return datetime.strptime(" ".join(line.split()[:2]), "%Y-%m-%d %H:%M:%S")


def assert_mariadb_stopped_cleanly(lines: list[str], pod: str) -> None:
    """The stop signal after the drain (SIGTERM: a normal shutdown) ran to its end; no kill cut it short."""
    text = "\n".join(lines)
    assert "Normal shutdown" in text, f"{pod} was not stopped by its stop signal:\n{text[-2000:]}"
    assert "Shutdown complete" in text, f"{pod} did not finish its shutdown:\n{text[-2000:]}"


def assert_no_failed_prestop_hook(cluster: Cluster) -> None:
    failed = cluster.events("FailedPreStopHook")
    assert not failed, [f"{e['involvedObject'].get('name')}: {e.get('message')}" for e in failed]


def cache_stop_seconds(stack: Stack, namespace: str, mark: int) -> dict[str, float]:
    """Each cache pod's stop, from the audit log: from its deletion (graceful) to the kubelet's removal of it."""
    marked: dict[str, datetime] = {}
    removed: dict[str, datetime] = {}
    for write in stack.audit.since(mark, namespace=namespace):
        if write.resource == "pods" and write.verb == "delete" and write.name.startswith(f"{ORDERS}-cache-"):
            if write.user == NodeSpec(1).user:
                removed[write.name] = write.at
            else:
                marked.setdefault(write.name, write.at)
    return {name: (removed[name] - at).total_seconds() for name, at in marked.items() if name in removed}


def finished(cluster: Cluster, name: str) -> Obj | None:
    pod = cluster.pod(name)
    return pod if pod and pod["status"].get("phase") in ("Succeeded", "Failed") else None


def test_every_example_has_a_module_that_runs_it_on_the_real_node() -> None:
    assert {path.name for path in EXAMPLES.glob("*.yaml")} == set(RUN_BY)
    here = Path(__file__).resolve().parent
    for name, module in RUN_BY.items():
        assert name in (here / module).read_text(), (name, module)


def test_the_minimal_example_reaches_available(sharddbs: ShardDBs, cluster: Cluster, report: Report) -> None:
    began = time.monotonic()
    cluster.apply(example(MINIMAL, cluster.namespace, EXAMPLES / "sharddb-minimal.yaml"))
    available = sharddbs.available(MINIMAL, timeout=300)
    assert available["status"]["readyShards"] == 1
    assert sharddbs.child("Job", f"{MINIMAL}-seed-1")["status"].get("succeeded") == 1
    report(f"minimal: applied to Available in {time.monotonic() - began:.1f} s")


def test_the_minimal_example_is_deleted_cache_first_with_clean_stops(
    stack: Stack, sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    caches = [p["metadata"]["name"] for p in sharddbs.pods(MINIMAL, "cache")]
    mark = stack.audit.mark()
    began = time.monotonic()
    with cluster.following(caches, "cache") as cache_logs, cluster.following([f"{MINIMAL}-db-0"], "db") as db_logs:
        sharddbs.delete(MINIMAL)
        sharddbs.gone(MINIMAL, timeout=240)
    for pod, lines in cache_logs.items():
        assert any("DB saved on disk" in line for line in lines), f"{pod} did not save:\n" + "\n".join(lines)
    text = "\n".join(db_logs[f"{MINIMAL}-db-0"])
    assert "database system is shut down" in text, f"the shard did not finish its shutdown:\n{text[-2000:]}"
    assert_cache_gone_before_shards(stack, cluster.namespace, MINIMAL, mark)
    assert_no_failed_prestop_hook(cluster)
    report(f"minimal: deleted in {time.monotonic() - began:.1f} s")


def test_the_mariadb_example_seeds_every_shard_as_root_and_reaches_available(
    sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    documents = example(ORDERS, cluster.namespace, EXAMPLES / "sharddb-mariadb.yaml")
    documents[1]["spec"]["drainGracePeriodSeconds"] = DRAIN_SECONDS
    began = time.monotonic()
    cluster.apply(documents)
    available = sharddbs.available(ORDERS, timeout=300)
    assert available["status"]["readyShards"] == 2
    seed = cluster.logs(sharddbs.items("Pod", f"job-name={ORDERS}-seed-2")[0]["metadata"]["name"], "seed")
    for i in range(2):
        assert f"seed: {orders_shard(i)}.{ORDERS}-db is up and takes the root password" in seed, seed
    assert sharddbs.child("Job", f"{ORDERS}-seed-2")["status"].get("succeeded") == 1
    for i in range(2):
        assert "MariaDB init process done" in cluster.logs(orders_shard(i), "db")
    report(f"mariadb: applied to Available in {time.monotonic() - began:.1f} s")


CONNECTED = "CONNECTED"  # the client's mark: what follows is the cache's answer


def test_the_memcached_cache_stores_and_returns_a_value_through_its_service(
    sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    # The memcached text protocol over bash's /dev/tcp, retried while kube-proxy writes the Service's rules:
    # the Service is seconds old when the ShardDB turns Available, and until the node's kube-proxy has written
    # its endpoints, a try answers `Network is unreachable` (docs/development/tests.md, "Failures explained").
    # A refused try's words stay in the log, before CONNECTED, and are reported.
    talk = (
        "for try in 1 2 3 4 5 6 7 8 9 10; do "
        f"if exec 3<>/dev/tcp/{ORDERS}-cache/11211; then echo {CONNECTED}; "
        "printf 'set sharddb 0 0 5\\r\\norder\\r\\nget sharddb\\r\\nquit\\r\\n' >&3; cat <&3; exit 0; fi; "
        "sleep 1; done; exit 1"
    )
    cluster.client("cache-client", workloads.MEMCACHED, talk, env={}, shell="bash")
    pod = wait_until("the cache client to finish", lambda: finished(cluster, "cache-client"), 120)
    said = cluster.logs("cache-client", "client")
    assert pod["status"]["phase"] == "Succeeded", said
    assert CONNECTED in said, said
    refused, answer = said.split(CONNECTED, 1)
    assert answer.split() == ["STORED", "VALUE", "sharddb", "0", "5", "order", "END"], said
    if refused.strip():
        report(f"memcached: refused before connecting: {' | '.join(refused.strip().splitlines())}")
    assert sharddbs.get(ORDERS)["status"]["cacheReady"] is True


def test_rows_written_to_every_mariadb_shard_are_read_back(cluster: Cluster) -> None:
    for i in range(2):
        values = ", ".join(f"({n}, '{orders_shard(i)}')" for n in range(1, ROWS + 1))
        mariadb(
            cluster,
            orders_shard(i),
            f"CREATE TABLE orders.orders (n INT PRIMARY KEY, shard VARCHAR(64) NOT NULL); "
            f"INSERT INTO orders.orders VALUES {values}",
        )
    for i in range(2):
        assert orders(cluster, i) == expected_orders(i)


def test_a_deleted_mariadb_shard_pod_drains_stops_cleanly_and_comes_back_with_its_rows(
    sharddbs: ShardDBs, cluster: Cluster
) -> None:
    before = cluster.pod(orders_shard(1))
    assert before is not None
    with cluster.following([orders_shard(1)], "db") as logs:
        cluster.kubectl("delete", "pod", orders_shard(1), "--wait=false")
        wait_until(
            f"a new {orders_shard(1)}",
            lambda: (p := cluster.pod(orders_shard(1))) and p["metadata"]["uid"] != before["metadata"]["uid"],
            120,
        )
    assert_mariadb_stopped_cleanly(logs[orders_shard(1)], orders_shard(1))
    cluster.ready(orders_shard(1))
    assert orders(cluster, 1) == expected_orders(1)
    assert "Initializing database files" not in cluster.logs(orders_shard(1), "db"), "the kept volume was set up anew"
    assert_no_failed_prestop_hook(cluster)
    sharddbs.available(ORDERS, timeout=120)


def test_deleting_the_mariadb_example_flushes_the_cache_then_drains_the_shards_ending_a_held_session(
    stack: Stack, sharddbs: ShardDBs, cluster: Cluster, report: Report
) -> None:
    holder = f"exec mariadb --host={orders_shard(0)}.{ORDERS}-db --user=root -e 'SELECT SLEEP(600)'"
    cluster.client("session-holder", workloads.MARIADB, holder, env={"MYSQL_PWD": PASSWORD})
    wait_until(
        "the held session",
        lambda: (
            mariadb(
                cluster,
                orders_shard(0),
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'",
            )
            == "1"
        ),
        120,
        0.5,
    )
    caches = [p["metadata"]["name"] for p in sharddbs.pods(ORDERS, "cache")]
    shards = [orders_shard(i) for i in range(2)]
    mark = stack.audit.mark()
    began = time.monotonic()
    with cluster.following(shards, "db") as db_logs:
        sharddbs.delete(ORDERS)
        sharddbs.gone(ORDERS, timeout=240)
    seconds = time.monotonic() - began
    stops = cache_stop_seconds(stack, cluster.namespace, mark)
    assert set(stops) == set(caches), stops
    assert all(seconds >= FLUSH_SECONDS for seconds in stops.values()), f"a cache pod stopped before its flush: {stops}"
    for pod, lines in db_logs.items():
        assert_mariadb_stopped_cleanly(lines, pod)
    waited = (mariadb_stopped_at(db_logs[shards[0]]) - mariadb_stopped_at(db_logs[shards[1]])).total_seconds()
    assert waited >= DRAIN_SECONDS / 2 - 2, f"the drain waited {waited:.0f} s for the held session, not half the grace"
    ended = wait_until("the session holder to end", lambda: finished(cluster, "session-holder"), 60)
    said = cluster.logs("session-holder", "client")
    assert ended["status"]["phase"] == "Failed", said
    assert "Lost connection to server during query" in said, said
    # Ended before the stop signal (both clocks count whole seconds): the drain's KILL, not the shutdown.
    end = ended["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    assert datetime.strptime(end, "%Y-%m-%dT%H:%M:%SZ") <= mariadb_stopped_at(db_logs[shards[0]]), (end, said)
    assert_cache_gone_before_shards(stack, cluster.namespace, ORDERS, mark)
    assert_no_failed_prestop_hook(cluster)
    assert len([c for c in sharddbs.claims() if c["metadata"]["name"].endswith(tuple(shards))]) == 2
    report(f"mariadb: deleted in {seconds:.1f} s, the held session ended after {waited:.0f} s")
