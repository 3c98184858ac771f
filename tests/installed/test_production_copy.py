"""``examples/sharddb-from-single-copy.yaml`` on the production install: a running single-copy ShardDB moved to one
with standbys, as the example's header says, with no acknowledged write lost and the downtime measured.

``examples/sharddb.yaml`` runs as ``demo`` (two shards) under a writer per shard that counts what the server
acknowledged, and each shard has the application's own login, ``clerk`` (a password, a membership, a table it
owns). The writers stop (the example's step 1: the application stops writing), then the example is applied
as written but for the tier's images and credentials and ``shards``/``COPY_SHARDS`` set to two: ``demo-ha``'s seed
copies each of ``demo``'s shards into its own before the cache is made. Every acknowledged row is then on the same
shard's primary and on its standby, each shard holds exactly what the source shard held, and ``clerk`` logs in to
each new primary with the password it had, owning its table. Then ``demo`` is
deleted with its Secret (step 4) and ``demo-ha`` grown by a shard: the new shard's members start without that Secret,
and the new seed reads nothing of ``demo`` and starts the new shard empty.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml

from hooks import names

from ..support.examples import EXAMPLES, example, members_example
from ..support.sharddbs import wait_until
from .installs import Install, Obj
from .invariants import Report
from .writers import LABEL, Target, Writers

NAMESPACE = "copy"
SOURCE = "demo"
NAME = "demo-ha"
SHARDS = 2
EXAMPLE = EXAMPLES / "sharddb-from-single-copy.yaml"
SOCKET = "/var/run/postgresql"
WRITING_SECONDS = 5
# The application's login on demo: a role the new shards do not have until the seed copies it.
CLERK = "clerk"
CLERK_PASSWORD = "clerk-password"


def source() -> list[Obj]:
    """``examples/sharddb.yaml`` as ``demo``, with two shards: the single-copy ShardDB a user runs today."""
    docs = example(SOURCE, NAMESPACE)
    docs[-1]["spec"]["shards"] = SHARDS
    return docs


def applied() -> list[Obj]:
    """The example as a user applies it: the tier's images and credentials, and ``demo``'s shard count."""
    secret, sharddb = members_example(EXAMPLE, NAME, NAMESPACE)
    spec = sharddb["spec"]
    spec["shards"] = SHARDS
    env = {each["name"]: each for each in spec["db"]["env"]}
    assert env["COPY_FROM"]["value"] == SOURCE
    assert env["COPY_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == f"{SOURCE}-db"
    env["COPY_SHARDS"]["value"] = str(SHARDS)
    return [secret, sharddb]


def rows(install: Install, pod: str) -> frozenset[int]:
    """The writers' table on a member or a single copy, through its own socket."""
    return frozenset(int(line) for line in psql(install, pod, "select n from acked").split())


def psql(install: Install, pod: str, *commands: str) -> str:
    """Statements as the superuser on the pod's own socket."""
    args = [arg for command in commands for arg in ("-c", command)]
    return install.kubectl(
        "exec", "-n", NAMESPACE, pod, "-c", names.DB, "--", "psql", "-h", SOCKET, "-U", "postgres", "-XAt", *args
    )  # fmt: skip


def clerk_on_source(install: Install, shard: int) -> None:
    """The application's own login, as a user's single copy has one: it owns a table and is granted a role."""
    psql(
        install, f"{SOURCE}-db-{shard}",
        f"CREATE ROLE {CLERK} LOGIN PASSWORD '{CLERK_PASSWORD}'",
        f"GRANT pg_read_all_data TO {CLERK}",
        "CREATE TABLE ledger (n int)", f"ALTER TABLE ledger OWNER TO {CLERK}",
    )  # fmt: skip


def clerk_logs_in(install: Install, pod: str) -> str:
    """``clerk`` over TCP and TLS with its password, as the application connects: who it is, and what it owns."""
    return install.kubectl(
        "exec", "-n", NAMESPACE, pod, "-c", names.DB, "--", "env", f"PGPASSWORD={CLERK_PASSWORD}",
        "psql", f"host=127.0.0.1 user={CLERK} dbname=postgres sslmode=require", "-XAt", "-c",
        "SELECT current_user, pg_has_role('pg_read_all_data', 'member'), "
        "(SELECT tableowner FROM pg_tables WHERE tablename = 'ledger')",
    ).strip()  # fmt: skip


def member(install: Install, shard: int, role: str) -> str:
    labels = {
        names.INSTANCE_LABEL: NAME,
        names.COMPONENT_LABEL: names.DB,
        names.SCOPE_LABEL: names.shard_name(NAME, shard),
        names.ROLE_LABEL: role,
    }
    selector = ",".join(f"{key}={value}" for key, value in labels.items())
    (pod,) = [str(pod["metadata"]["name"]) for pod in install.active_pods(NAMESPACE, selector)]
    return pod


def seed_logs(install: Install) -> list[str]:
    """Each seed pod's log (one seed Job per shard count: the bring-up's, then each growth's)."""
    selector = f"{names.INSTANCE_LABEL}={NAME},{names.COMPONENT_LABEL}={names.SEED}"
    pods = install.pods(NAMESPACE, selector)
    return [install.kubectl("logs", "-n", NAMESPACE, pod["metadata"]["name"]) for pod in pods]


def standby_rows(install: Install, shard: int, want: frozenset[int]) -> frozenset[int]:
    """The standby's table once it equals ``want``: synchronous, it has every commit flushed, and replays them within
    a moment."""
    pod = member(install, shard, names.FOLLOWER_LABEL_VALUE)
    found: frozenset[int] = wait_until(f"{pod} replayed the copy", lambda: rows(install, pod) == want and want, 30)
    return found


@dataclass(frozen=True)
class Moved:
    """What the writers saw on ``demo``, what each side holds, and how long the clients waited."""

    acked: dict[int, frozenset[int]]  # by shard: the numbers the server acknowledged on demo
    source: dict[int, frozenset[int]]  # by shard: demo's table once the writers were gone
    primary: dict[int, frozenset[int]]  # by shard: demo-ha's primary's table
    standby: dict[int, frozenset[int]]  # by shard: demo-ha's standby's table
    downtime: float  # the last acknowledged write on demo to demo-ha Available
    seed: str  # the seed's log
    clerk: dict[int, str]  # by shard: what clerk's own session on demo-ha's primary said


@pytest.fixture(scope="module")
def install(production: Install) -> Iterator[Install]:
    production.settled().kubectl("create", "namespace", NAMESPACE)
    yield production
    production.kubectl("delete", "sharddb", "-n", NAMESPACE, "--all", "--wait", "--timeout=5m")
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


@pytest.fixture(scope="module")
def moved(install: Install) -> Moved:
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(source()))
    wait_until(f"{SOURCE} Available", lambda: install.available(NAMESPACE, SOURCE), 300, every=1)
    for shard in range(SHARDS):
        clerk_on_source(install, shard)
    targets = tuple(Target(f"{SOURCE}-db-{i}.{SOURCE}-db", f"{SOURCE}-db-{i}") for i in range(SHARDS))
    writers = Writers(install, NAMESPACE, SOURCE, targets)
    writers.start()
    time.sleep(WRITING_SECONDS)
    # Step 1: the application stops writing. What it was told is read before its pods go; a write acknowledged
    # after that is in demo's table, which the copy must match as a whole.
    tallies = {shard: writers.tally(shard) for shard in range(SHARDS)}
    install.kubectl("delete", "pod", "-n", NAMESPACE, "-l", f"{LABEL}={SOURCE}", "--wait", "--timeout=60s")
    last_ack = max(tally.last_ack for tally in tallies.values())
    held = {shard: rows(install, f"{SOURCE}-db-{shard}") for shard in range(SHARDS)}
    # Step 2.
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(applied()))
    wait_until(f"{NAME} Available", lambda: install.available(NAMESPACE, NAME), 600, every=1)
    downtime = time.time() - last_ack
    primary = {shard: rows(install, member(install, shard, names.LEADER_LABEL_VALUE)) for shard in range(SHARDS)}
    standby = {shard: standby_rows(install, shard, held[shard]) for shard in range(SHARDS)}
    (seed,) = seed_logs(install)
    acked = {shard: tally.acked for shard, tally in tallies.items()}
    clerk = {shard: clerk_logs_in(install, member(install, shard, names.LEADER_LABEL_VALUE)) for shard in range(SHARDS)}
    return Moved(acked, held, primary, standby, downtime, seed, clerk)


def test_every_acknowledged_write_on_the_single_copy_is_on_its_shards_new_primary(moved: Moved) -> None:
    for shard in range(SHARDS):
        assert moved.acked[shard], f"shard {shard}: no write was acknowledged on {SOURCE}"
        assert moved.acked[shard] <= moved.primary[shard], sorted(moved.acked[shard] - moved.primary[shard])


def test_each_shard_holds_exactly_what_the_same_shard_of_the_source_held(moved: Moved, report: Report) -> None:
    report(
        f"{SOURCE} ({SHARDS} single copies) to {NAME} (2 members each): the clients' downtime, from the last "
        f"acknowledged write to {NAME} Available, {moved.downtime:.1f} s; rows copied "
        f"{ {shard: len(found) for shard, found in moved.primary.items()} }"
    )
    assert moved.primary == moved.source


def test_each_standby_holds_the_copy_too(moved: Moved) -> None:
    assert moved.standby == moved.source


def test_the_seed_says_each_shard_was_copied_from_the_same_shard(moved: Moved) -> None:
    for shard in range(SHARDS):
        assert f"copy: shard {shard} copied from {SOURCE}-db-{shard}.{SOURCE}-db" in moved.seed, moved.seed


def test_the_applications_login_is_copied_with_its_password_membership_and_table(moved: Moved) -> None:
    for shard in range(SHARDS):
        assert moved.clerk[shard] == f"{CLERK}|t|{CLERK}", (shard, moved.clerk[shard])
        assert f"copy: shard {shard}: 1 roles copied from {SOURCE}-db-{shard}.{SOURCE}-db" in moved.seed, moved.seed


def test_once_the_source_is_gone_a_grown_shard_starts_empty_and_the_copies_are_kept(
    install: Install, moved: Moved
) -> None:
    """Step 4 (demo and its Secret deleted), then one more shard: its members start without the Secret, and the seed
    for the new count finds both shards marked and never reads demo."""
    install.kubectl("delete", "sharddb", "-n", NAMESPACE, SOURCE, "--wait", "--timeout=5m")
    install.kubectl("delete", "secret", "-n", NAMESPACE, f"{SOURCE}-db")
    grow = f'{{"spec":{{"shards":{SHARDS + 1}}}}}'
    install.kubectl("patch", "sharddb", "-n", NAMESPACE, NAME, "--type=merge", "-p", grow)
    wait_until(f"{NAME} grown and Available", lambda: grown(install), 600, every=1)
    (seed,) = [log for log in seed_logs(install) if f"copy: shard {SHARDS}:" in log]
    for shard in range(SHARDS):
        assert re.search(rf"copy: shard {shard}: copied before \(sharddb copy: shard {shard} from ", seed), seed
    assert f"copy: shard {SHARDS}: {SOURCE} has no such shard, it starts empty" in seed, seed
    for shard in range(SHARDS):
        assert rows(install, member(install, shard, names.LEADER_LABEL_VALUE)) == moved.source[shard]


def grown(install: Install) -> bool:
    """Every shard ready and seeded: while the new count's seed runs, the ShardDB stays ``Available`` (the shards it
    had serve) with ``readyShards`` already grown, so only ``seededShards`` says the seed is done."""
    status = install.get("sharddb", "-n", NAMESPACE, NAME).get("status", {})
    whole = status.get("readyShards") == SHARDS + 1 and status.get("seededShards") == SHARDS + 1
    return bool(whole and install.available(NAMESPACE, NAME))
