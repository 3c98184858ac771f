"""The parts of a ShardDB that backs up, as the hooks render them, for members in containers: a real S3 server
over TLS (versitygw, ``testbed/real/objectstore.py``) on the host's loopback, which the members share; a
member's configuration (``PatroniConfig`` with the backup and restore sections), its environment with each
Secret reference resolved as the kubelet resolves it, the CA mounted where the rendered volume puts it, and
the base backups' Job run in the member image with the shard's Service names resolving to the members.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hooks import names, render
from hooks.backup import member as backup_member
from hooks.backup import restore as backup_restore
from hooks.backup.spec import Backup
from hooks.replication import config as patroni_config
from hooks.spec import ShardDBSpec
from testbed.real import objectstore
from testbed.real.objectstore import ObjectStore
from tools.image.builders import ulimits_below_own

from .members import DB_PORT, PASSWORDS, Member, PodmanError, Shard, podman, wait_for

Obj = dict[str, Any]

BUCKET = "backups"
# The user's Secrets, as the kubelet would read them: (Secret, key) -> value.
CREDENTIALS = ("store-s3", "ACCESS_KEY_ID", "ACCESS_SECRET_KEY")
CA_SECRET = ("store-ca", "ca.crt")
SUPERUSER_SECRET = ("shard-passwords", "superuser")
DATA = "/var/lib/postgresql/data/pgdata"


def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    """A real S3 server over TLS, with the bucket the shards archive to (a module's ``store`` fixture)."""
    try:
        objectstore.build()
    except objectstore.ObjectStoreError as error:
        pytest.fail(f"patroni tier: {error}", pytrace=False)
    with objectstore.running(tmp_path_factory.mktemp("objectstore") / "data") as running:
        running.create_bucket(BUCKET)
        yield running


def object_store(store: ObjectStore, prefix: str) -> Obj:
    """The store under ``prefix``, its access key and CA in the user's Secrets."""
    secret, key_id, secret_key = CREDENTIALS
    return {
        "destinationPath": f"s3://{BUCKET}/{prefix}",
        "endpointURL": store.endpoint,
        "endpointCA": {"name": CA_SECRET[0], "key": CA_SECRET[1]},
        "region": store.region,
        "s3Credentials": {
            "accessKeyId": {"name": secret, "key": key_id},
            "secretAccessKey": {"name": secret, "key": secret_key},
        },
    }


def spec_of(store: ObjectStore, prefix: str, restore: Obj | None = None) -> ShardDBSpec:
    """A ShardDB that backs up to the store (under ``prefix``), the superuser's password in another Secret, as
    ``spec.db.env`` hands it to Patroni; ``restore`` as ``spec.restore``."""
    password = {"secretKeyRef": {"name": SUPERUSER_SECRET[0], "key": SUPERUSER_SECRET[1]}}
    return ShardDBSpec.model_validate(
        {
            "shards": 1,
            "dbImage": "postgres-patroni",
            "cache": {"image": "redis"},
            "replication": {"members": 2},
            "db": {"env": [{"name": "PATRONI_SUPERUSER_PASSWORD", "valueFrom": password}]},
            "backup": {
                "objectStore": object_store(store, prefix),
                "archiveTimeoutSeconds": 10,
                "retentionPolicy": "7d",
            },
            **({"restore": restore} if restore is not None else {}),
        }
    )


def backup_of(store: ObjectStore, prefix: str) -> Backup:
    """``spec.backup`` of ``spec_of``."""
    backup = spec_of(store, prefix).backup
    assert backup is not None
    return backup


def resolved(env: list[Obj], store: ObjectStore) -> dict[str, str]:
    """A rendered environment with each ``secretKeyRef`` read from the user's Secrets, as the kubelet does."""
    secret, key_id, secret_key = CREDENTIALS
    secrets = {
        (secret, key_id): store.access_key,
        (secret, secret_key): store.secret_key,
        SUPERUSER_SECRET: PASSWORDS["PATRONI_SUPERUSER_PASSWORD"],
    }
    out: dict[str, str] = {}
    for var in env:
        ref = var.get("valueFrom", {}).get("secretKeyRef")
        out[var["name"]] = secrets[(ref["name"], ref["key"])] if ref else var["value"]
    return out


def resolved_env(spec: ShardDBSpec, store: ObjectStore) -> dict[str, str]:
    """The member's rendered backup (and restore) environment, resolved."""
    assert spec.backup is not None
    restoring = backup_restore.env(spec.restore) if spec.restore is not None else []
    return resolved([*backup_member.env(spec.backup), *restoring], store)


def ca_volumes(store: ObjectStore, folder: Path, spec: ShardDBSpec) -> dict[Path, str]:
    """The rendered CA volumes (the store's, and the restore source's): each Secret's key as ``ca.crt``, mounted
    where the rendered mount says."""
    assert spec.backup is not None
    rendered = [(backup_member.volumes(spec.backup), backup_member.mounts(spec.backup))]
    if spec.restore is not None:
        rendered.append((backup_restore.volumes(spec.restore), backup_restore.mounts(spec.restore)))
    out: dict[Path, str] = {}
    for (volume,), (mount,) in rendered:
        (item,) = volume["secret"]["items"]
        assert (volume["secret"]["secretName"], item["key"]) == CA_SECRET
        held = folder / volume["name"]
        held.mkdir(exist_ok=True, parents=True)
        held.chmod(0o755)
        (held / item["path"]).write_bytes(store.ca_bundle.read_bytes())
        (held / item["path"]).chmod(0o644)
        out[held] = mount["mountPath"]
    return out


def rendered_config(shard: Shard, spec: ShardDBSpec, name: str, change: Obj | None = None) -> Path:
    """``PatroniConfig`` with the backup (and restore) sections, as the member template carries it; ``change``
    merged into its top-level sections."""
    config = patroni_config.PatroniConfig(
        shard.parent, 0, DB_PORT, "/var/lib/postgresql/data", True, backup=spec.backup, restore=spec.restore
    )
    data = config.as_dict()
    for section, values in (change or {}).items():
        data[section] = {**data.get(section, {}), **values}
    path = shard.folder / name
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o644)
    return path


def restored_spec(store: ObjectStore, prefix: str, source: Shard, target: Obj) -> ShardDBSpec:
    """A ShardDB archiving under ``prefix`` and restored from ``source``'s backups to ``target``
    (``spec.restore.recoveryTarget``)."""
    origin = {"name": source.parent, "objectStore": object_store(store, source.namespace)}
    return spec_of(store, prefix, {"source": origin, "recoveryTarget": target})


def bootstrapping(shard: Shard, spec: ShardDBSpec, name: str) -> Path:
    """The configuration ``spec`` renders, bootstrapped by a custom method: with ``spec.restore``, from the source's
    latest base backup before the target, its archived WAL replayed to the target, then promoted; else by initdb
    once the shard's own archive folder is shown unused.

    While a custom bootstrap runs, Patroni trusts only the socket and the member's own address, from which a
    pod's Patroni connects; here every client's source is the host's loopback address, so Patroni takes the socket.
    """
    return rendered_config(shard, spec, f"{name}-{shard.namespace}.json", {"postgresql": {"use_unix_socket": True}})


def leading(shard: Shard, member: Member) -> None:
    wait_for(f"{member.name} leads {shard.scope}", lambda: shard.holder("leader") == member.name, [member])
    wait_for(f"{member.name} accepts writes", lambda: _writable(member), [member])


def _writable(member: Member) -> bool:
    try:
        return member.sql("SELECT pg_catalog.pg_is_in_recovery()") == "f"
    except PodmanError:  # not up yet: asked again
        return False


def streaming(primary: Member, standby: Member) -> None:
    wait_for(f"{standby.name} streams", lambda: primary.streams_to(standby.name) != "", [primary, standby])


def run_backup_job(
    shard: Shard, spec: ShardDBSpec, store: ObjectStore, by_role: dict[str, Member], ca: Path, *, fails: bool = False
) -> str:
    """The CronJob's Job as rendered: its container's command and environment in the member image, restricted as
    its pod is, the shard's role Services resolving to the members holding them; its log. ``fails``: the Job must
    end in failure (its log is still given)."""
    assert spec.backup is not None
    job = render.base_backups(shard.parent, spec, spec.backup, 1)
    (container,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    (mount,) = container["volumeMounts"]
    hosts = [f"--add-host={shard.scope}-{role}:{member.address}" for role, member in by_role.items()]
    env = [f"--env={name}={value}" for name, value in resolved(container["env"], store).items()]
    command = container["command"]
    try:
        log = podman(
            "run", "--rm", "--pull", "never", "--network", "host", "--read-only", "--cap-drop", "ALL",
            "--security-opt", "no-new-privileges", *ulimits_below_own(), *hosts, *env,
            "--volume", f"{ca}:{mount['mountPath']}:ro",
            "--entrypoint", json.dumps(command[:1]), shard.image, *command[1:],
            timeout=300.0,
        )  # fmt: skip
    except PodmanError as error:
        if not fails:
            raise
        return error.stdout
    assert not fails, f"the base backups' Job ended well where it must fail: {log}"
    return log


def run_restore_point_job(parent: str, spec: ShardDBSpec, primaries: list[Member], image: str, name: str) -> str:
    """A Job of the restore points' CronJob, as ``kubectl create job <name> --from=cronjob/...`` makes it: its
    container's command and environment in the member image, restricted as its pod is, the job-name label read
    by the downward API, each shard's ``-primary`` Service resolving to ``primaries``' own; its log."""
    cronjob = render.restore_points(parent, spec, len(primaries))
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    hosts = [
        f"--add-host={names.role_service_name(parent, shard, names.PRIMARY)}:{member.address}"
        for shard, member in enumerate(primaries)
    ]
    env = []
    for var in container["env"]:
        source = var.get("valueFrom", {})
        if "fieldRef" in source:
            assert source["fieldRef"]["fieldPath"] == "metadata.labels['batch.kubernetes.io/job-name']"
            value = name
        elif "secretKeyRef" in source:
            assert source["secretKeyRef"]["name"] == SUPERUSER_SECRET[0]
            value = PASSWORDS["PATRONI_SUPERUSER_PASSWORD"]
        else:
            value = var["value"]
        env.append(f"--env={var['name']}={value}")
    command = container["command"]
    return podman(
        "run", "--rm", "--pull", "never", "--network", "host", "--read-only", "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges", *ulimits_below_own(), *hosts, *env,
        "--entrypoint", json.dumps(command[:1]), image, *command[1:],
        timeout=300.0,
    )  # fmt: skip


# A client of every shard in the member image (its Python, Patroni's driver): rounds of one insert per shard, each
# acknowledged before the next, as fast as it can for ``seconds``; "<shard> <round> <epoch seconds>" per insert.
WRITER = """
import sys, time, psycopg2
seconds, hosts = float(sys.argv[1]), sys.argv[2:]
sessions = [psycopg2.connect(host=host, dbname="postgres", sslmode="require") for host in hosts]
for session in sessions:
    session.autocommit = True
end, number = time.time() + seconds, 0
while time.time() < end:
    number += 1
    for shard, session in enumerate(sessions):
        with session.cursor() as cursor:
            cursor.execute("INSERT INTO rounds VALUES (%s)", (number,))
        print(shard, number, time.time(), flush=True)
"""


def client(image: str, name: str, program: str, args: list[str], *, detach: bool = False) -> str:
    """``program`` run by the member image's Python on the host's network as the superuser, restricted as a pod is:
    its output, or with ``detach`` its container's id (its name is ``name``)."""
    password = PASSWORDS["PATRONI_SUPERUSER_PASSWORD"]
    return podman(
        "run", "--detach" if detach else "--rm", "--name", name, "--pull", "never", "--network", "host",
        "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", *ulimits_below_own(),
        "--env", "PGUSER=postgres", "--env", f"PGPASSWORD={password}", "--env", f"PGPORT={DB_PORT}",
        "--entrypoint", json.dumps(["python3"]), image, "-c", program, *args,
        timeout=300.0,
    )  # fmt: skip
