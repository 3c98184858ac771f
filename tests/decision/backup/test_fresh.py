"""A new shard that archives is made by initdb only once its archive folder is shown unused (``backup/fresh``)."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

from hooks import pod_templates
from hooks.backup import commands, fresh, member
from hooks.replication import config as patroni_config
from hooks.replication import template as member_pods
from hooks.replication.shape import Plan
from hooks.spec import ShardDBSpec

from ...support.backups import STORE
from ...support.replication import BASE

Obj = dict[str, Any]
PLAN = Plan(members=2, synchronous=True)


def spec(*, backup: bool = True) -> ShardDBSpec:
    fields: Obj = {**BASE, "replication": {"members": 2}}
    if backup:
        fields["backup"] = {"objectStore": STORE}
    return ShardDBSpec.model_validate(fields)


def bootstrap(the_spec: ShardDBSpec, shard: int = 1) -> Obj:
    pod = member_pods.member_template("demo", shard, the_spec, PLAN, pod_templates.db_template("demo", the_spec))
    found: Obj = json.loads(pod["metadata"]["annotations"][patroni_config.CONFIG_ANNOTATION])["bootstrap"]
    return found


def script(the_spec: ShardDBSpec, shard: int = 1) -> str:
    argv = shlex.split(bootstrap(the_spec, shard)[fresh.METHOD]["command"])
    assert argv[:2] == ["sh", "-c"]
    return argv[2]


def initdb_line(text: str) -> list[str]:
    (line,) = [line for line in text.splitlines() if line.startswith(fresh.INITDB)]
    return shlex.split(line)


def test_a_shard_that_archives_bootstraps_by_the_checked_method_with_no_recovery() -> None:
    found = bootstrap(spec())
    assert found["method"] == fresh.METHOD
    assert found[fresh.METHOD]["no_params"] is True
    assert "recovery_conf" not in found[fresh.METHOD]


def test_the_folder_is_checked_before_initdb_runs() -> None:
    text = script(spec())
    assert text.index(commands.CHECK_WAL_ARCHIVE) < text.index(f"\n{fresh.INITDB} ")
    assert "demo-db-1" in text.split(commands.CHECK_WAL_ARCHIVE, 1)[1].splitlines()[0]


def test_a_used_folder_stops_the_bootstrap_naming_the_field_where_the_status_reads_it() -> None:
    text = script(spec())
    assert "spec.backup.objectStore.destinationPath: s3://backups/orders/demo-db-1 already holds WAL" in text
    assert member.TERMINATION_LOG in text
    assert "set -eu" in text.splitlines()[0]


def test_initdb_runs_with_patronis_own_options_into_patronis_data_folder_as_its_superuser() -> None:
    args = initdb_line(script(spec()))
    patronis = [patroni_config.initdb_flag(option) for option in bootstrap(spec())["initdb"]]
    assert patronis == ["--encoding=UTF8", "--data-checksums"]
    assert args[1:] == ["--pgdata=/var/lib/postgresql/data/pgdata", "--username=postgres", *patronis]


def test_the_bootstrap_script_is_valid_shell() -> None:
    checked = subprocess.run(["sh", "-n", "-c", script(spec())], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr


def test_a_shard_that_does_not_archive_bootstraps_by_patronis_initdb() -> None:
    found = bootstrap(spec(backup=False))
    assert "method" not in found
    assert fresh.METHOD not in found
