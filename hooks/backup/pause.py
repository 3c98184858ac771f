"""One restore point, one name, on every shard, written while no shard commits a write: the restore points' Job.

This program is not imported by the hooks: ``restore_points`` renders its source as the Job's command, run
by the member image's Python with Patroni's own driver (psycopg2), so it needs nothing the image lacks.

In one transaction per database of each shard's primary, it takes ``EXCLUSIVE`` locks on every table: reads
go on, writes wait. Once every shard holds them, it writes ``pg_create_restore_point`` on each shard (a WAL
record, written at once, whatever the transaction does), then releases every lock. No write commits on any
shard between the first lock and the release, so the points mark one moment for the whole ShardDB. A lock
that waits longer than ``LOCK_TIMEOUT_MS`` (a long transaction, or a prepared one: two-phase commits are
never split) releases everything and the Job tries again, so writes never wait behind it for long.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time
from typing import Any

LOCK_TIMEOUT_MS = 2000
ATTEMPTS = 10
RETRY_SECONDS = 1.0
NAME_ENV = "RESTORE_POINT"
APPLICATION = "sharddb-restore-point"
DATABASES = "SELECT datname FROM pg_catalog.pg_database WHERE datallowconn AND NOT datistemplate ORDER BY datname"
TABLES = """SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
ORDER BY 1"""


def say(text: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {text}", flush=True)


def sessions(driver: Any, hosts: list[str]) -> list[tuple[str, Any]]:
    """A session to every database of every shard's primary (libpq's environment says the rest: TLS, user, port)."""
    out = []
    for host in hosts:
        first = driver.connect(host=host, dbname="postgres", application_name=APPLICATION)
        with first.cursor() as cursor:
            cursor.execute(DATABASES)
            databases = [row[0] for row in cursor.fetchall()]
        first.rollback()
        out.append((host, first))
        for database in databases:
            if database != "postgres":
                out.append((host, driver.connect(host=host, dbname=database, application_name=APPLICATION)))
    return out


def hold(held: list[tuple[str, Any]]) -> float:
    """Every table of every session locked against writes; the moment the first lock was held."""
    first = 0.0
    for _, session in held:
        with session.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}")
            cursor.execute(TABLES)
            tables = [row[0] for row in cursor.fetchall()]
            if tables:
                cursor.execute(f"LOCK TABLE {', '.join(tables)} IN EXCLUSIVE MODE")
                first = first or time.monotonic()
    return first or time.monotonic()


def mark(held: list[tuple[str, Any]], name: str) -> None:
    """The restore point on each shard, from its first session, each said as it is written: a run that fails
    half-way says which shards hold the name."""
    marked: set[str] = set()
    for host, session in held:
        if host not in marked:
            with session.cursor() as cursor:
                cursor.execute("SELECT pg_catalog.pg_create_restore_point(%s)::text", (name,))
                say(f"{host}: restore point {name} at {cursor.fetchone()[0]}")
            marked.add(host)


def release(held: list[tuple[str, Any]]) -> None:
    """Every lock let go, then every session closed (a broken session holds no lock)."""
    for _, session in held:
        with contextlib.suppress(Exception):
            session.rollback()
    for _, session in held:
        session.close()


def attempt(driver: Any, hosts: list[str], name: str) -> bool:
    """One try: True once every shard has the point; False when a lock waited too long (nothing written)."""
    held = sessions(driver, hosts)
    try:
        started = hold(held)
    except driver.errors.LockNotAvailable as error:
        release(held)
        say(f"a lock waited over {LOCK_TIMEOUT_MS} ms ({str(error).strip()}); every lock released, no point written")
        return False
    try:
        mark(held, name)
    finally:
        release(held)
        say(f"writes paused {(time.monotonic() - started) * 1000:.1f} ms")
    say(f"restore point {name} on every shard")
    return True


def main(hosts: list[str]) -> int:
    # Patroni's driver, in the member image (the hooks' own image has none).
    driver = importlib.import_module("psycopg2")
    importlib.import_module("psycopg2.errors")
    name = os.environ[NAME_ENV]
    for number in range(1, ATTEMPTS + 1):
        if attempt(driver, hosts, name):
            return 0
        if number < ATTEMPTS:
            time.sleep(RETRY_SECONDS)
    say(f"no restore point written: a lock waited over {LOCK_TIMEOUT_MS} ms in each of {ATTEMPTS} tries")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
