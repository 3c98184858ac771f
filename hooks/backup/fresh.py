"""A new shard's cluster when it archives: its archive folder checked first, then initdb as Patroni runs it.

PostgreSQL archives its first segment as soon as it starts, so a check after initdb could meet the
cluster's own WAL and refuse itself; Patroni offers no step before initdb. A custom bootstrap method
checks, then runs initdb with Patroni's own options. A ShardDB made again under a deleted one's name and
prefix, or a shard grown back after its claim was deleted, then stops with the field named rather than
archive its timeline 1 over the backups kept there. Patroni sets the passwords and its pg_hba afterwards,
as after any custom bootstrap. Read only when a shard's cluster is first made: no running shard is checked.
"""

from __future__ import annotations

import shlex
from typing import Any

from . import commands, member
from .spec import Backup

Obj = dict[str, Any]

METHOD = "checked_initdb"
INITDB = "initdb"


def script(backup: Backup, scope: str, data_dir: str, superuser: str, initdb: list[str]) -> str:
    """The bootstrap: stop unless the folder holds no WAL, then initdb into ``data_dir`` with ``initdb``'s flags."""
    made = [INITDB, f"--pgdata={data_dir}", f"--username={superuser}", *initdb]
    return "\n".join(["set -eu", *member.unused_archive(backup, scope), commands.line(made)])


def bootstrap(backup: Backup, scope: str, data_dir: str, superuser: str, initdb: list[str]) -> Obj:
    """Patroni's ``bootstrap`` keys for the custom method (no recovery: the cluster starts as a primary)."""
    command = shlex.join(["sh", "-c", script(backup, scope, data_dir, superuser, initdb)])
    # No --scope or --datadir appended: the script knows both.
    return {"method": METHOD, METHOD: {"command": command, "no_params": True}}
