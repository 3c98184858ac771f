"""The members' shared bring-up, once for the folder: its namespace on the production install, and the ShardDB.

Both fixtures are package-scoped: every step's file works on the one ShardDB they bring up, and
the namespace goes once the folder's last file is done (before the tier's next module).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import yaml

from ...support.examples import PASSWORD
from ...support.sharddbs import wait_until
from ..installs import Install
from .shard import NAME, NAMESPACE, PRIMARY_SERVICE, BroughtUp, endpoints_of, members, sharddb


@pytest.fixture(scope="package")
def install(production: Install) -> Iterator[Install]:
    production.settled().kubectl("create", "namespace", NAMESPACE)
    yield production
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


@pytest.fixture(scope="package")
def brought_up(install: Install) -> BroughtUp:
    """The ShardDB applied and Available, and a write through its ``-primary`` Service; every step starts here."""
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
