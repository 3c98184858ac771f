"""The default seed, drain and flush commands, and the examples' own commands, run for real.

Each command goes through real shells (``sh`` as the kubelet would exec it, plus dash,
bash in POSIX mode and BusyBox's ash where installed) with small stand-in programs on
PATH for the images' binaries (pg_isready, psql, redis-cli, valkey-cli,
mariadb-admin, mariadb, sleep): real processes, asserting exit codes, output and the exact
arguments each program got. Where a PostgreSQL server is installed, the seed also
runs against a real one: pg_isready and psql log in over TCP with a password. The
drain runs beside processes titled as PostgreSQL's backends, in a PID namespace of
their own. The data tier (``tests/data/``) runs every default in the images it names.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hooks.replication import shape
from hooks.spec import (
    DEFAULT_CACHE_POD_SECURITY_CONTEXT,
    DEFAULT_CONTAINER_SECURITY_CONTEXT,
    DEFAULT_DB_POD_SECURITY_CONTEXT,
    DEFAULT_DRAIN_COMMAND,
    DEFAULT_FLUSH_COMMAND,
    DEFAULT_SEED_COMMAND,
    ShardDBSpec,
)
from testbed.real.server import free_port

from ..support.kube_schema import problems

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
DEFAULTS = {"seed": DEFAULT_SEED_COMMAND, "drain": DEFAULT_DRAIN_COMMAND, "flush": DEFAULT_FLUSH_COMMAND}

# ``sh`` first: the exact argv the kubelet runs. The others are shells the images may
# have behind ``sh`` (dash in Debian, bash in Oracle Linux); every Debian machine has both.
SHELLS = [
    pytest.param(shell, id="-".join(shell).replace("--", "")) for shell in (("sh",), ("dash",), ("bash", "--posix"))
]

Obj = dict[str, Any]


def argv(shell: tuple[str, ...], command: tuple[str, ...] | list[str]) -> list[str]:
    """``command`` (``sh -c SCRIPT``) with its ``sh`` replaced by ``shell``."""
    assert command[0] == "sh", command
    found = shutil.which(shell[0])
    assert found is not None
    return [found, *shell[1:], *command[1:]]


# --- stand-in programs -----------------------------------------------------------------


@dataclass
class Run:
    code: int
    out: str
    err: str
    calls: list[str]


class Fakes:
    """A directory of stand-in programs, the only thing on PATH; each logs its argv to CALLS."""

    def __init__(self, root: Path) -> None:
        self.bin = root / "bin"
        self.state = root / "state"
        self.calls = root / "calls"
        self.bin.mkdir()
        self.state.mkdir()
        self.calls.touch()

    def add(self, name: str, body: str = "") -> None:
        path = self.bin / name
        path.write_text(f'#!/bin/sh\nprintf \'%s\\n\' "{name} $*" >> "$CALLS"\n{body}\n')
        path.chmod(0o755)

    def run(self, shell: tuple[str, ...], command: tuple[str, ...] | list[str], **env: str) -> Run:
        full = {"PATH": str(self.bin), "CALLS": str(self.calls), "STATE": str(self.state), **env}
        done = subprocess.run(argv(shell, command), env=full, capture_output=True, text=True, timeout=60, check=False)
        calls = self.calls.read_text().splitlines()
        self.calls.write_text("")
        return Run(done.returncode, done.stdout, done.stderr, calls)


@pytest.fixture
def fakes(tmp_path: Path) -> Fakes:
    return Fakes(tmp_path)


def named(calls: list[str], program: str) -> list[str]:
    return [call for call in calls if call.split(" ", 1)[0] == program]


# Reads the host after -h, counts the calls for it, and answers "accepting" from the
# READY_AFTER-th one on (exit 2, "no response", before that).
PG_ISREADY = """
host=
while [ $# -gt 0 ]; do case $1 in -h) host=$2; shift ;; esac; shift; done
n=0
[ -f "$STATE/$host" ] && read -r n < "$STATE/$host"
n=$((n + 1))
printf '%s\\n' "$n" > "$STATE/$host"
[ "$n" -ge "${READY_AFTER:-1}" ] || exit 2
"""
# Logs in unless the host is listed in PSQL_FAILS; records what libpq would read.
PSQL = """
printf 'psql-env PGPASSWORD=%s PGCONNECT_TIMEOUT=%s\\n' "${PGPASSWORD-unset}" "${PGCONNECT_TIMEOUT-unset}" >> "$CALLS"
host=
while [ $# -gt 0 ]; do case $1 in -h) host=$2; shift ;; esac; shift; done
case " ${PSQL_FAILS:-} " in *" $host "*) echo "psql: error: password authentication failed" >&2; exit 2 ;; esac
echo 1
"""


def seed_fakes(fakes: Fakes) -> None:
    fakes.add("pg_isready", PG_ISREADY)
    fakes.add("psql", PSQL)
    fakes.add("sleep")


HOSTS = "demo-db-0.demo-db demo-db-1.demo-db demo-db-2.demo-db"


# --- the commands as data -------------------------------------------------------------------


@pytest.mark.parametrize("name", DEFAULTS)
def test_each_default_is_one_sh_c_script(name: str) -> None:
    command = DEFAULTS[name]
    assert len(command) == 3
    assert command[:2] == ("sh", "-c")
    assert "|| true" not in command[2], "a failure must reach the kubelet's event, not vanish"


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("name", DEFAULTS)
def test_default_commands_parse_in_every_shell(shell: tuple[str, ...], name: str) -> None:
    done = subprocess.run([*argv(shell, DEFAULTS[name])[:-2], "-n", "-c", DEFAULTS[name][2]], capture_output=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("shell", SHELLS)
def test_the_syntax_check_catches_a_broken_script(shell: tuple[str, ...]) -> None:
    done = subprocess.run([*argv(shell, ("sh", "-c", ""))[:-2], "-n", "-c", "if then fi"], capture_output=True)
    assert done.returncode != 0


# --- seed -------------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_seed_waits_until_every_shard_answers_and_needs_no_password(fakes: Fakes, shell: tuple[str, ...]) -> None:
    seed_fakes(fakes)
    run = fakes.run(shell, DEFAULT_SEED_COMMAND, SHARDDB_HOSTS=HOSTS, SHARDDB_PORT="6543", READY_AFTER="2")
    assert run.code == 0, run.err
    probes = named(run.calls, "pg_isready")
    for host in HOSTS.split():
        assert probes.count(f"pg_isready -q -h {host} -p 6543 -t 3") == 2  # refused once, then ready
    assert named(run.calls, "sleep") == ["sleep 2"] * 3
    assert named(run.calls, "psql") == []
    assert run.out.splitlines()[-1] == "seed: 3 shards ready"


@pytest.mark.parametrize("shell", SHELLS)
def test_seed_logs_in_to_every_shard_with_the_postgres_password(fakes: Fakes, shell: tuple[str, ...]) -> None:
    seed_fakes(fakes)
    run = fakes.run(shell, DEFAULT_SEED_COMMAND, SHARDDB_HOSTS=HOSTS, SHARDDB_PORT="5432", POSTGRES_PASSWORD="s3 cr$t")
    assert run.code == 0, run.err
    logins = named(run.calls, "psql")
    assert logins == [f"psql -X -w -q -A -t -h {h} -p 5432 -U postgres -d postgres -c SELECT 1" for h in HOSTS.split()]
    assert set(named(run.calls, "psql-env")) == {"psql-env PGPASSWORD=s3 cr$t PGCONNECT_TIMEOUT=10"}
    assert "seed: logged in to demo-db-2.demo-db as postgres" in run.out


@pytest.mark.parametrize("shell", SHELLS)
def test_seed_prefers_libpq_variables_over_the_images(fakes: Fakes, shell: tuple[str, ...]) -> None:
    seed_fakes(fakes)
    env = {"PGPASSWORD": "libpq", "POSTGRES_PASSWORD": "image", "POSTGRES_USER": "app", "POSTGRES_DB": "orders"}
    run = fakes.run(shell, DEFAULT_SEED_COMMAND, SHARDDB_HOSTS="h0", SHARDDB_PORT="5432", **env)
    assert run.code == 0, run.err
    assert named(run.calls, "psql") == ["psql -X -w -q -A -t -h h0 -p 5432 -U app -d orders -c SELECT 1"]
    assert named(run.calls, "psql-env") == ["psql-env PGPASSWORD=libpq PGCONNECT_TIMEOUT=10"]

    run = fakes.run(shell, DEFAULT_SEED_COMMAND, SHARDDB_HOSTS="h0", SHARDDB_PORT="5432", PGPASSWORD="x", PGUSER="u")
    assert named(run.calls, "psql") == ["psql -X -w -q -A -t -h h0 -p 5432 -U u -d u -c SELECT 1"]


@pytest.mark.parametrize("shell", SHELLS)
def test_seed_fails_naming_the_shard_it_cannot_log_in_to(fakes: Fakes, shell: tuple[str, ...]) -> None:
    seed_fakes(fakes)
    env = {"SHARDDB_HOSTS": HOSTS, "SHARDDB_PORT": "5432", "PGPASSWORD": "wrong", "PSQL_FAILS": "demo-db-1.demo-db"}
    run = fakes.run(shell, DEFAULT_SEED_COMMAND, **env)
    assert run.code == 1
    assert "seed: cannot log in to demo-db-1.demo-db as postgres" in run.err
    assert len(named(run.calls, "psql")) == 2  # stops at the first refusal


@pytest.mark.parametrize("shell", SHELLS)
def test_seed_gives_up_on_a_shard_that_never_answers(fakes: Fakes, shell: tuple[str, ...]) -> None:
    seed_fakes(fakes)
    run = fakes.run(shell, DEFAULT_SEED_COMMAND, SHARDDB_HOSTS="gone", SHARDDB_PORT="5432", READY_AFTER="100000")
    assert run.code == 1
    assert "seed: gone:5432 does not accept connections; giving up" in run.err
    assert len(named(run.calls, "pg_isready")) == 150
    assert len(named(run.calls, "sleep")) == 149


@pytest.mark.parametrize("shell", SHELLS)
def test_seed_refuses_an_empty_host_list(fakes: Fakes, shell: tuple[str, ...]) -> None:
    seed_fakes(fakes)
    for env in ({"SHARDDB_HOSTS": "", "SHARDDB_PORT": "5432"}, {"SHARDDB_PORT": "5432"}):
        run = fakes.run(shell, DEFAULT_SEED_COMMAND, **env)
        assert run.code != 0
        assert "names no shard" in run.err
        assert run.calls == []


@pytest.mark.parametrize("shell", SHELLS)
def test_seed_is_safe_to_run_again(fakes: Fakes, shell: tuple[str, ...]) -> None:
    seed_fakes(fakes)
    env = {"SHARDDB_HOSTS": HOSTS, "SHARDDB_PORT": "5432", "PGPASSWORD": "pw"}
    first = fakes.run(shell, DEFAULT_SEED_COMMAND, **env)
    again = fakes.run(shell, DEFAULT_SEED_COMMAND, **env)
    assert (first.code, again.code) == (0, 0)
    assert first.out == again.out
    assert named(first.calls, "psql") == named(again.calls, "psql")


# --- drain ------------------------------------------------------------------------------------

# Processes titled as PostgreSQL titles its backends (``exec -a``), in a PID namespace of their
# own with the drain: it scans /proc, and must never see (let alone end) a real server's sessions.
CLIENT_TITLES = ("postgres: app orders 10.1.2.3(5555) idle", "postgres: postgres postgres [local] idle in transaction")
OTHER_TITLES = ("postgres: checkpointer", "postgres: logical replication launcher", "postgres: walwriter", "postgres")


@dataclass
class Drained:
    code: int
    err: str
    seconds: float
    ended: list[str]  # titles of the processes the drain ended
    kept: list[str]  # titles still running when it returned


def drain_among(shell: tuple[str, ...], titles: tuple[str, ...], grace: int, *, lasting: str = "60") -> Drained:
    """Start processes with ``titles`` (each sleeping ``lasting`` s), run the drain beside them, report."""
    starts = "\n".join(f"bash -c 'exec -a \"$1\" sleep {lasting}' _ {shlex.quote(t)} &" for t in titles)
    script = f"""{starts}
sleep 0.3
began=$(date +%s%N)
SHARDDB_DRAIN_SECONDS={grace} {" ".join(argv(shell, DEFAULT_DRAIN_COMMAND)[:-1])} "$DRAIN" 2>"$ERR"
code=$?
echo "code $code $(( ($(date +%s%N) - began) / 1000000 ))"
sleep 0.3
for dir in /proc/[0-9]*; do
  title=$(tr '\\0' ' ' <"$dir/cmdline" 2>/dev/null) || continue
  case $title in "postgres"*) echo "kept $title" ;; esac
done
"""
    with tempfile.NamedTemporaryFile("r") as err:
        private = ["unshare", "--pid", "--fork", "--mount-proc"]
        if not IS_ROOT:
            private[1:1] = ["--user", "--map-root-user"]
        done = subprocess.run(
            [*private, "bash", "-c", script],
            env={"PATH": "/usr/bin:/bin", "DRAIN": DEFAULT_DRAIN_COMMAND[2], "ERR": err.name},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        _, code, millis = next(line for line in lines if line.startswith("code ")).split()
        kept = [
            line.removeprefix("kept ").removesuffix(f" {lasting} ").strip()
            for line in lines
            if line.startswith("kept ")
        ]
        ended = [title for title in titles if title not in kept]
        return Drained(int(code), err.read(), int(millis) / 1000, ended, kept)


@pytest.mark.parametrize("shell", SHELLS)
def test_drain_returns_at_once_when_no_client_session_is_open(shell: tuple[str, ...]) -> None:
    drained = drain_among(shell, OTHER_TITLES, grace=60)
    assert drained.code == 0, drained.err
    assert drained.err == ""
    assert drained.ended == [], "the drain ended a process that is no client session"
    assert drained.seconds < 30, "it waited for sessions where there were none"


@pytest.mark.parametrize("shell", SHELLS)
def test_drain_ends_the_sessions_still_open_after_half_the_grace(shell: tuple[str, ...]) -> None:
    drained = drain_among(shell, CLIENT_TITLES + OTHER_TITLES, grace=4)
    assert drained.code == 0, drained.err
    assert drained.seconds >= 2, "it did not wait half the grace period for the sessions"
    assert sorted(drained.ended) == sorted(CLIENT_TITLES)
    assert "drain: 2 client sessions still open after 2s; ending them" in drained.err


def test_drain_stops_waiting_when_the_last_session_ends() -> None:
    drained = drain_among(("sh",), CLIENT_TITLES, grace=120, lasting="2")
    assert drained.code == 0, drained.err
    assert drained.err == "", "it ended sessions that were ending by themselves"
    assert drained.seconds < 60, "it waited on after the last session ended"


@pytest.mark.parametrize("shell", SHELLS)
def test_drain_without_its_grace_fails_before_touching_anything(shell: tuple[str, ...]) -> None:
    done = subprocess.run(
        argv(shell, DEFAULT_DRAIN_COMMAND), env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "SHARDDB_DRAIN_SECONDS" in done.stderr


# --- flush ------------------------------------------------------------------------------------

CLI = 'echo "${CLI_REPLY-OK}"\nexit "${CLI_EXIT:-0}"'


@pytest.mark.parametrize("shell", SHELLS)
def test_flush_saves_through_redis_cli_on_the_cache_port(fakes: Fakes, shell: tuple[str, ...]) -> None:
    fakes.add("redis-cli", CLI)
    run = fakes.run(shell, DEFAULT_FLUSH_COMMAND, SHARDDB_CACHE_PORT="6380")
    assert run.code == 0, run.err
    assert run.calls == ["redis-cli -p 6380 SAVE"]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("with_redis_cli", [True, False])
def test_flush_prefers_valkey_cli_where_the_image_has_it(
    fakes: Fakes, shell: tuple[str, ...], with_redis_cli: bool
) -> None:
    fakes.add("valkey-cli", CLI)
    if with_redis_cli:
        fakes.add("redis-cli", CLI)
    run = fakes.run(shell, DEFAULT_FLUSH_COMMAND, SHARDDB_CACHE_PORT="6379")
    assert run.code == 0, run.err
    assert run.calls == ["valkey-cli -p 6379 SAVE"]


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(
    ("reply", "status"),
    [("ERR Background save already in progress", "0"), ("", "1"), ("NOAUTH Authentication required.", "0")],
    ids=["error-reply", "no-server", "needs-password"],
)
def test_flush_fails_unless_the_server_answers_ok(
    fakes: Fakes, shell: tuple[str, ...], reply: str, status: str
) -> None:
    fakes.add("redis-cli", CLI)
    run = fakes.run(shell, DEFAULT_FLUSH_COMMAND, SHARDDB_CACHE_PORT="6379", CLI_REPLY=reply, CLI_EXIT=status)
    assert run.code == 1
    assert f"flush: redis-cli SAVE on port 6379 answered: {reply}" in run.err


@pytest.mark.parametrize("shell", SHELLS)
def test_flush_fails_where_there_is_no_cli(fakes: Fakes, shell: tuple[str, ...]) -> None:
    run = fakes.run(shell, DEFAULT_FLUSH_COMMAND, SHARDDB_CACHE_PORT="11211")
    assert run.code != 0


# --- security contexts ----------------------------------------------------------------------


def pod(security: Obj, container: Obj) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "securityContext": security,
            "containers": [{"name": "c", "image": "i", "securityContext": container}],
        },
    }


@pytest.mark.parametrize("security", [DEFAULT_DB_POD_SECURITY_CONTEXT, DEFAULT_CACHE_POD_SECURITY_CONTEXT])
def test_default_security_contexts_meet_the_restricted_profile(security: Obj) -> None:
    obj = pod(security, DEFAULT_CONTAINER_SECURITY_CONTEXT)
    assert problems(obj) == []
    spec = obj["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == 999  # the images' service user
    assert spec["securityContext"]["runAsGroup"] == 999
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = spec["containers"][0]["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert "add" not in context["capabilities"]
    assert context["runAsNonRoot"] is True


def test_db_volume_is_group_writable_for_the_postgres_uid() -> None:
    assert DEFAULT_DB_POD_SECURITY_CONTEXT["fsGroup"] == 999
    assert DEFAULT_DB_POD_SECURITY_CONTEXT["fsGroupChangePolicy"] == "OnRootMismatch"


# --- examples ---------------------------------------------------------------------------------


def documents(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def sharddbs() -> list[tuple[Path, Obj]]:
    return [(path, doc) for path in EXAMPLES for doc in documents(path) if doc["kind"] == "ShardDB"]


def env_of(spec: Obj, part: str) -> dict[str, Obj]:
    return {item["name"]: item for item in spec.get(part, {}).get("env", [])}


def test_examples_are_the_three_users_copy() -> None:
    assert {"sharddb.yaml", "sharddb-minimal.yaml", "sharddb-mariadb.yaml"} <= {path.name for path in EXAMPLES}
    for path in EXAMPLES:
        kinds = [(doc["apiVersion"], doc["kind"]) for doc in documents(path)]
        assert kinds[-1] == ("mygroup.example.com/v1alpha1", "ShardDB")
        assert set(kinds[:-1]) <= {("v1", "Secret")}


@pytest.mark.parametrize("sample", [s for _, s in sharddbs()], ids=[path.name for path, _ in sharddbs()])
def test_example_sharddbs_parse_as_the_hook_reads_them(sample: Obj) -> None:
    ShardDBSpec.model_validate(sample["spec"])


def secrets_shipped() -> dict[tuple[str, str | None], Obj]:
    """Every example's Secrets, by name and namespace."""
    found = (doc for path in EXAMPLES for doc in documents(path) if doc["kind"] == "Secret")
    return {(doc["metadata"]["name"], doc["metadata"].get("namespace")): doc for doc in found}


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_every_secret_an_example_reads_is_in_the_same_file(path: Path) -> None:
    docs = documents(path)
    secrets = {
        (doc["metadata"]["name"], doc["metadata"].get("namespace")): doc for doc in docs if doc["kind"] == "Secret"
    }
    for secret in secrets.values():
        assert problems(secret) == []
    (sample,) = (doc for doc in docs if doc["kind"] == "ShardDB")
    namespace = sample["metadata"].get("namespace")
    for part in ("db", "cache"):
        for item in env_of(sample["spec"], part).values():
            ref = item.get("valueFrom", {}).get("secretKeyRef")
            if ref and ref.get("optional"):
                # Another ShardDB's Secret (the one a copy reads), which that ShardDB's own example ships.
                assert ref["key"] in secrets_shipped()[(ref["name"], namespace)]["stringData"], (path.name, ref)
            elif ref:
                secret = secrets[(ref["name"], namespace)]
                assert ref["key"] in secret["stringData"], (path.name, ref)
    text = path.read_text()
    if secrets:
        assert "CHANGE IT" in text


def test_postgres_example_passes_the_password_to_the_image_and_the_default_seed() -> None:
    ((_, sample),) = [(p, s) for p, s in sharddbs() if p.name == "sharddb.yaml"]
    spec = sample["spec"]
    assert (spec["dbImage"], spec["cache"]["image"], spec["shards"], spec["cache"]["replicas"]) == (
        "postgres:16",
        "redis:7",
        3,
        2,
    )
    env = env_of(spec, "db")
    refs = {name: env[name]["valueFrom"]["secretKeyRef"] for name in ("POSTGRES_PASSWORD", "PGPASSWORD")}
    assert refs["POSTGRES_PASSWORD"] == refs["PGPASSWORD"] == {"name": "demo-db", "key": "password"}
    assert "seedCommand" not in spec  # the default seed, logging in with PGPASSWORD
    assert "drainCommand" not in spec
    assert "flushCommand" not in spec["cache"]
    for part in ("db", "cache"):
        assert set(spec[part]["resources"]) == {"requests", "limits"}
    assert spec["db"]["dataPath"] == "/var/lib/postgresql/data"


def test_members_example_gives_patroni_every_credential_from_its_secret_and_builds_the_recipe() -> None:
    path = REPO / "examples" / "sharddb-members.yaml"
    secret, sample = documents(path)
    spec = sample["spec"]
    env = env_of(spec, "db")
    assert spec["replication"]["members"] == 2
    assert set(env) == {*shape.CREDENTIALS, "POSTGRES_PASSWORD"}
    assert {env[name]["valueFrom"]["secretKeyRef"]["name"] for name in env} == {secret["metadata"]["name"]}
    recipe = REPO / "examples" / "images" / "postgres-patroni"
    build = f"docker build -t {spec['dbImage']} {recipe.relative_to(REPO)}"
    assert build in (recipe / "Dockerfile").read_text()
    assert build in path.read_text()


def test_minimal_example_starts_without_a_secret_and_says_loudly_why() -> None:
    path = REPO / "examples" / "sharddb-minimal.yaml"
    (sample,) = documents(path)
    assert env_of(sample["spec"], "db")["POSTGRES_HOST_AUTH_METHOD"]["value"] == "trust"
    assert "!!! NO PASSWORD" in path.read_text()


def example_commands() -> list[tuple[str, list[str]]]:
    found = []
    for path, sample in sharddbs():
        spec = sample["spec"]
        for where, field in ((spec, "seedCommand"), (spec, "drainCommand"), (spec["cache"], "flushCommand")):
            if field in where:
                found.append((f"{path.stem}.{field}", where[field]))
    return found


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(("name", "command"), example_commands(), ids=[name for name, _ in example_commands()])
def test_example_commands_parse_in_every_shell(shell: tuple[str, ...], name: str, command: list[str]) -> None:
    assert command[:2] == ["sh", "-c"], name
    done = subprocess.run([*argv(shell, command)[:-2], "-n", "-c", command[2]], capture_output=True)
    assert done.returncode == 0, done.stderr


def mariadb_example() -> Obj:
    ((_, sample),) = [(p, s) for p, s in sharddbs() if p.name == "sharddb-mariadb.yaml"]
    spec: Obj = sample["spec"]
    return spec


# mariadb-admin / mariadb: log argv, and the option file when it comes on stdin; ping answers
# from its PING_READY_AFTER-th call on (mariadbd not listening yet before that). The session
# query answers SESSIONS for its first OPEN_FOR calls and nothing after; DOWN: no server.
MARIADB_CLIENT = """
if [ "$1" = --defaults-extra-file=/dev/stdin ]; then
  while IFS= read -r line; do printf 'option %s\\n' "$line" >> "$CALLS"; done < /dev/stdin
fi
[ -z "${DOWN:-}" ] || exit 1
case " $* " in
  *" ping "*)
    n=0
    [ -f "$STATE/ping" ] && read -r n < "$STATE/ping"
    n=$((n + 1))
    printf '%s\\n' "$n" > "$STATE/ping"
    [ "$n" -ge "${PING_READY_AFTER:-1}" ] || exit 1
    ;;
  *PROCESSLIST*)
    n=0
    [ -f "$STATE/sessions" ] && read -r n < "$STATE/sessions"
    n=$((n + 1))
    printf '%s\\n' "$n" > "$STATE/sessions"
    if [ "$n" -le "${OPEN_FOR:-0}" ]; then for id in ${SESSIONS:-}; do echo "$id"; done; fi
    ;;
esac
exit 0
"""


def session_queries(calls: list[str]) -> int:
    return sum(1 for call in calls if call.startswith("mariadb ") and "PROCESSLIST" in call)


def kills(calls: list[str]) -> list[str]:
    return [call.split("--execute=", 1)[1] for call in named(calls, "mariadb") if "--execute=KILL" in call]


@pytest.mark.parametrize("shell", SHELLS)
def test_mariadb_example_seed_waits_then_logs_in_with_the_root_password_on_stdin(
    fakes: Fakes, shell: tuple[str, ...]
) -> None:
    spec = mariadb_example()
    assert (spec["dbImage"], spec["db"]["port"], spec["db"]["dataPath"]) == ("mariadb:10.11", 3306, "/var/lib/mysql")
    fakes.add("mariadb-admin", MARIADB_CLIENT)
    fakes.add("mariadb", MARIADB_CLIENT)
    fakes.add("sleep")
    hosts = "orders-db-0.orders-db orders-db-1.orders-db"
    env = {
        "SHARDDB_HOSTS": hosts,
        "SHARDDB_PORT": "3306",
        "MARIADB_ROOT_PASSWORD": "pa ss#1",
        "MARIADB_DATABASE": "orders",
        "PING_READY_AFTER": "3",
    }
    run = fakes.run(shell, spec["seedCommand"], **env)
    assert run.code == 0, run.err
    assert named(run.calls, "sleep") == ["sleep 2", "sleep 2"]  # waited for the first shard
    for host in hosts.split():
        assert f"mariadb-admin --host={host} --port=3306 --connect-timeout=3 ping" in run.calls
        assert (
            f"mariadb --defaults-extra-file=/dev/stdin --host={host} --port=3306 --connect-timeout=10 "
            "--database=orders --execute=SELECT 1"
        ) in run.calls
        assert f"seed: {host} is up and takes the root password" in run.out
    assert run.calls.count('option password="pa ss#1"') == 2
    assert run.calls.count("option user=root") == 2
    assert all("pa ss" not in call for call in run.calls if not call.startswith("option"))  # never in argv


@pytest.mark.parametrize("shell", SHELLS)
def test_mariadb_example_seed_gives_up_on_a_shard_that_never_answers(fakes: Fakes, shell: tuple[str, ...]) -> None:
    fakes.add("mariadb-admin", MARIADB_CLIENT)
    fakes.add("mariadb", MARIADB_CLIENT)
    fakes.add("sleep")
    env = {"SHARDDB_HOSTS": "orders-db-0.orders-db", "SHARDDB_PORT": "3306", "MARIADB_ROOT_PASSWORD": "pw"}
    run = fakes.run(shell, mariadb_example()["seedCommand"], **env, MARIADB_DATABASE="orders", DOWN="1")
    assert run.code == 1
    assert "seed: orders-db-0.orders-db:3306 does not answer; giving up" in run.err
    assert len(named(run.calls, "sleep")) == 149


@pytest.mark.parametrize("shell", SHELLS)
def test_mariadb_example_drain_with_no_session_returns_at_once_and_never_stops_the_server(
    fakes: Fakes, shell: tuple[str, ...]
) -> None:
    fakes.add("mariadb", MARIADB_CLIENT)
    fakes.add("mariadb-admin", MARIADB_CLIENT)
    fakes.add("sleep")
    run = fakes.run(shell, mariadb_example()["drainCommand"], SHARDDB_DRAIN_SECONDS="20", MARIADB_ROOT_PASSWORD="pw")
    assert (run.code, run.err) == (0, "")
    assert session_queries(run.calls) == 1
    assert named(run.calls, "sleep") == []
    assert kills(run.calls) == []
    assert named(run.calls, "mariadb-admin") == []  # the stop signal stops the server, not the drain
    assert 'option password="pw"' in run.calls


@pytest.mark.parametrize("shell", SHELLS)
def test_mariadb_example_drain_waits_half_the_grace_then_ends_each_session_left(
    fakes: Fakes, shell: tuple[str, ...]
) -> None:
    fakes.add("mariadb", MARIADB_CLIENT)
    fakes.add("sleep")
    env = {"SHARDDB_DRAIN_SECONDS": "20", "MARIADB_ROOT_PASSWORD": "pw", "SESSIONS": "7 12", "OPEN_FOR": "1000"}
    run = fakes.run(shell, mariadb_example()["drainCommand"], **env)
    assert run.code == 0, run.err
    assert named(run.calls, "sleep") == ["sleep 1"] * 10
    assert session_queries(run.calls) == 11
    assert kills(run.calls) == ["KILL CONNECTION 7", "KILL CONNECTION 12"]
    assert "drain: 2 client sessions still open after 10s; ending them" in run.err


@pytest.mark.parametrize("shell", SHELLS)
def test_mariadb_example_drain_returns_when_the_sessions_end(fakes: Fakes, shell: tuple[str, ...]) -> None:
    fakes.add("mariadb", MARIADB_CLIENT)
    fakes.add("sleep")
    env = {"SHARDDB_DRAIN_SECONDS": "20", "MARIADB_ROOT_PASSWORD": "pw", "SESSIONS": "7", "OPEN_FOR": "3"}
    run = fakes.run(shell, mariadb_example()["drainCommand"], **env)
    assert (run.code, run.err) == (0, "")
    assert named(run.calls, "sleep") == ["sleep 1"] * 3
    assert kills(run.calls) == []


@pytest.mark.parametrize("shell", SHELLS)
def test_mariadb_example_drain_returns_when_the_server_does_not_answer(fakes: Fakes, shell: tuple[str, ...]) -> None:
    fakes.add("mariadb", MARIADB_CLIENT)
    fakes.add("sleep")
    env = {"SHARDDB_DRAIN_SECONDS": "20", "MARIADB_ROOT_PASSWORD": "pw", "DOWN": "1"}
    run = fakes.run(shell, mariadb_example()["drainCommand"], **env)
    assert run.code == 0, run.err
    assert named(run.calls, "sleep") == []


@pytest.mark.parametrize("shell", SHELLS)
def test_memcached_flush_only_waits(fakes: Fakes, shell: tuple[str, ...]) -> None:
    spec = mariadb_example()
    assert (spec["cache"]["image"], spec["cache"]["port"]) == ("memcached:1.6", 11211)
    fakes.add("sleep")
    run = fakes.run(shell, spec["cache"]["flushCommand"])
    assert (run.code, run.calls) == (0, ["sleep 5"])
    assert spec["cache"]["flushGracePeriodSeconds"] > 5


# --- against a real PostgreSQL server, where one is installed ---------------------------------


def postgres_bin() -> Path | None:
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True)
    for folder in candidates:
        if all((folder / tool).exists() for tool in ("initdb", "postgres", "pg_ctl", "pg_isready", "psql")):
            return folder
    found = shutil.which("initdb")
    return Path(found).parent if found else None


PG_BIN = postgres_bin()
IS_ROOT = os.geteuid() == 0


def server_owner() -> pwd.struct_passwd | None:
    """Who runs the server: postgres (as the image does) when we are root, else ourselves."""
    if not IS_ROOT:
        return pwd.getpwuid(os.geteuid())
    with contextlib.suppress(KeyError):
        return pwd.getpwnam("postgres")
    return None


OWNER = server_owner()


@pytest.fixture
def postgres_present() -> None:
    """A real PostgreSQL server to drive; CI must have one (the machine image ships it)."""
    if PG_BIN is None or OWNER is None or (IS_ROOT and not shutil.which("setpriv")):
        message = (
            "needs PostgreSQL server binaries (and, as root, a postgres user and setpriv): "
            "apt-get install postgresql util-linux"
        )
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


needs_postgres = pytest.mark.usefixtures("postgres_present")
PASSWORD = "real s3cret"


def as_owner(command: list[str]) -> list[str]:
    """``command`` run as the server's owner, the way gosu would switch to it."""
    assert OWNER is not None
    if not IS_ROOT:
        return command
    return ["setpriv", f"--reuid={OWNER.pw_uid}", f"--regid={OWNER.pw_gid}", "--init-groups", "--", *command]


@dataclass
class Server:
    base: Path
    data: Path
    port: int
    log: Path

    def pg(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        assert PG_BIN is not None
        command = as_owner([str(PG_BIN / "pg_ctl"), "-D", str(self.data), *args])
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=check)

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.base}"
        self.pg("-l", str(self.log), "-w", "-t", "30", "-o", options, "start")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def env(self) -> dict[str, str]:
        assert PG_BIN is not None
        return {"PATH": f"{PG_BIN}:/usr/bin:/bin", "PGDATA": str(self.data)}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Server]:
    assert PG_BIN is not None
    assert OWNER is not None
    base = Path(tempfile.mkdtemp(prefix="sharddb-pg-", dir="/tmp"))
    try:
        os.chown(base, OWNER.pw_uid, OWNER.pw_gid)
        (base / "pw").write_text(PASSWORD + "\n")
        os.chown(base / "pw", OWNER.pw_uid, OWNER.pw_gid)
        data = base / "data"
        initdb = [str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--pwfile", str(base / "pw")]
        initdb += ["--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C"]
        subprocess.run(as_owner(initdb), capture_output=True, text=True, timeout=120, check=True)
        yield Server(base, data, free_port(), base / "server.log")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def server(cluster: Server) -> Iterator[Server]:
    assert OWNER is not None
    cluster.log.write_text("")  # pg_ctl appends; each test reads its own server's log
    os.chown(cluster.log, OWNER.pw_uid, OWNER.pw_gid)
    cluster.start()
    try:
        yield cluster
    finally:
        if cluster.running():
            cluster.pg("-m", "immediate", "-w", "stop", check=False)


def run_real(command: list[str] | tuple[str, ...], env: dict[str, str]) -> Run:
    with tempfile.NamedTemporaryFile("r", prefix="calls-") as calls:
        os.chmod(calls.name, 0o666)
        line = argv(("sh",), command)
        done = subprocess.run(
            line,
            env={**env, "CALLS": calls.name},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return Run(done.returncode, done.stdout, done.stderr, Path(calls.name).read_text().splitlines())


@needs_postgres
def test_real_seed_logs_in_over_tcp_with_the_password(server: Server) -> None:
    env = {**server.env(), "SHARDDB_HOSTS": "127.0.0.1 localhost", "SHARDDB_PORT": str(server.port)}
    run = run_real(DEFAULT_SEED_COMMAND, {**env, "POSTGRES_PASSWORD": PASSWORD})
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        f"seed: 127.0.0.1:{server.port} accepts connections",
        f"seed: localhost:{server.port} accepts connections",
        "seed: logged in to 127.0.0.1 as postgres",
        "seed: logged in to localhost as postgres",
        "seed: 2 shards ready",
    ]

    run = run_real(DEFAULT_SEED_COMMAND, {**env, "POSTGRES_PASSWORD": "wrong"})
    assert run.code == 1
    assert "password authentication failed" in run.err
    assert "seed: cannot log in to 127.0.0.1 as postgres" in run.err

    run = run_real(DEFAULT_SEED_COMMAND, env)  # no password: waiting is all it does
    assert run.code == 0, run.err
    assert "logged in" not in run.out
