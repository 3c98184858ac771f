"""``examples/sharddb-backup.yaml`` on the production install: every shard's WAL archived by its members to a real S3
server over TLS, as the hooks render ``spec.backup``.

The store is versitygw (``testbed/real/objectstore.py``) on the cluster's gateway, where the registry is, with a CA
of its own; the example is applied as written but for its endpoint and the tier's images and credentials, with the
two Secrets its header asks for made by its own commands. A table is written on the primary, the segment closed,
and the archived segment read back from the bucket; the standby, fed by streaming, archives nothing. Then the first
base backup, as the header says to take it: a Job made from the base backups' CronJob, which has the standby take it.
Then a scheduled run that fails: the schedule set to every minute (no member restarts for it) after the superuser's
password changed in its Secret alone; the ShardDB is Degraded, naming the run and the command that says why.
Before that run, rows after the backup, a restore point written on every shard by a Job made as the header says
(``kubectl create job <point> --from=cronjob/archived-point``), then rows after the point. Last,
``examples/sharddb-restore.yaml`` as written (its endpoints set to the store, its target the point's name, as its
comment shows): a new ShardDB restored from the first one's base backup and archive, holding the rows written up
to the point and none after it, never seeded, archiving its new timeline to a folder of its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest
import yaml

from hooks import names
from testbed.real import objectstore
from testbed.real.objectstore import ObjectStore
from testbed.real.realnode import CLUSTER_GATEWAY

from ..support.examples import EXAMPLES, example
from ..support.sharddbs import wait_until
from .installs import Install, Obj
from .steps import Step

NAMESPACE = "backups"
NAME = "archived"
EXAMPLE = EXAMPLES / "sharddb-backup.yaml"
BUCKET = "backups"
SOCKET = "/var/run/postgresql"


@pytest.fixture(scope="module")
def store(production: Install, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    """The store on the gateway every pod reaches, with the example's bucket."""
    _ = production  # the cluster's bridge carries the gateway's address
    try:
        objectstore.build()
    except objectstore.ObjectStoreError as error:
        pytest.fail(f"installed tier: {error}", pytrace=False)
    with objectstore.running(tmp_path_factory.mktemp("objectstore") / "data", host=CLUSTER_GATEWAY) as running:
        running.create_bucket(BUCKET)
        yield running


@pytest.fixture(scope="module")
def install(production: Install, store: ObjectStore) -> Iterator[Install]:
    """The namespace, gone with its ShardDB before the store stops: a member that stops archives what it holds."""
    _ = store
    production.kubectl("create", "namespace", NAMESPACE)
    yield production
    production.kubectl("delete", "sharddb", "-n", NAMESPACE, NAME, "--ignore-not-found", "--wait", "--timeout=5m")
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


def secrets_as_the_header_makes_them(install: Install, store: ObjectStore) -> None:
    """The example's header's two ``kubectl create secret`` commands, with the store's key and CA."""
    header = EXAMPLE.read_text()
    assert "kubectl create secret generic backup-s3" in header
    assert "kubectl create secret generic backup-ca" in header
    install.kubectl(
        "-n", NAMESPACE, "create", "secret", "generic", "backup-s3",
        f"--from-literal=ACCESS_KEY_ID={store.access_key}", f"--from-literal=ACCESS_SECRET_KEY={store.secret_key}",
    )  # fmt: skip
    install.kubectl(
        "-n", NAMESPACE, "create", "secret", "generic", "backup-ca", f"--from-file=ca.crt={store.ca_bundle}"
    )


def applied(store: ObjectStore) -> list[Obj]:
    """The example as a user applies it: the tier's images and credentials, and this store's endpoint."""
    docs = example(NAME, NAMESPACE, EXAMPLE)
    sharddb = docs[-1]
    backup = sharddb["spec"]["backup"]
    assert backup["objectStore"]["destinationPath"] == f"s3://{BUCKET}/{NAME}", backup
    backup["objectStore"]["endpointURL"] = store.endpoint
    return docs


def psql(install: Install, pod: str, statement: str) -> str:
    command = ("exec", "-n", NAMESPACE, pod, "-c", names.DB, "--", "psql", "-h", SOCKET, "-U", "postgres")
    return install.kubectl(*command, "-XAtc", statement).strip()


def member(install: Install, role: str, name: str = NAME) -> str:
    selector = f"app.kubernetes.io/instance={name},app.kubernetes.io/component=db,{names.ROLE_LABEL}={role}"
    (pod,) = [str(pod["metadata"]["name"]) for pod in install.pods(NAMESPACE, selector)]
    return pod


@dataclass(frozen=True)
class Archived:
    """What the primary, the standby and the bucket say once a closed segment was archived."""

    segment: str  # the segment the primary closed after the writes
    archived: str  # the primary's last archived segment (pg_stat_archiver)
    failed: str  # the primary's failed archive attempts
    standby_archived: str  # the standby's count of archived segments
    keys: list[str]  # the objects under the shard's folder in the bucket
    settings: str  # archive_mode and archive_timeout as the primary runs them


@pytest.fixture(scope="module")
def archived(install: Install, store: ObjectStore) -> Archived:
    secrets_as_the_header_makes_them(install, store)
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(applied(store)))
    wait_until(f"{NAME} Available", lambda: install.available(NAMESPACE, NAME), 600, every=1)
    primary, standby = member(install, names.LEADER_LABEL_VALUE), member(install, names.FOLLOWER_LABEL_VALUE)
    psql(install, primary, "CREATE TABLE archived AS SELECT generate_series(1, 1000) AS id")
    segment = psql(install, primary, "SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())")

    def last_archived() -> str:
        return psql(install, primary, "SELECT coalesce(last_archived_wal, '') FROM pg_catalog.pg_stat_archiver")

    wait_until(f"{segment} archived by {primary}", lambda: last_archived() >= segment, 120, every=1)
    listing = store.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{NAME}/{NAME}-db-0/")
    return Archived(
        segment,
        last_archived(),
        psql(install, primary, "SELECT failed_count FROM pg_catalog.pg_stat_archiver"),
        psql(install, standby, "SELECT archived_count FROM pg_catalog.pg_stat_archiver"),
        sorted(item["Key"] for item in listing.get("Contents", [])),
        psql(install, primary, "SELECT current_setting('archive_mode') || ' ' || current_setting('archive_timeout')"),
    )


@dataclass(frozen=True)
class BackedUp:
    """The first base backup, taken as the example's header says: a Job from the CronJob."""

    succeeded: bool
    log: str  # the Job's log
    infos: list[str]  # each base backup's backup.info in the shard's folder of the bucket


def first_backup_command() -> list[str]:
    """The header's ``kubectl create job --from=cronjob/...`` line, as words."""
    (line,) = [line for line in EXAMPLE.read_text().splitlines() if "kubectl create job --from=cronjob/" in line]
    return line.lstrip("# ").split()[1:]


@pytest.fixture(scope="module")
def backed_up(install: Install, store: ObjectStore, archived: Archived) -> BackedUp:
    _ = archived
    words = first_backup_command()
    assert words[:3] == ["create", "job", f"--from=cronjob/{names.backup_name(NAME)}"], words
    job = words[3]
    install.kubectl("-n", NAMESPACE, *words)

    def ended() -> str:
        found = install.get("job", "-n", NAMESPACE, job)
        kinds = {c["type"] for c in found.get("status", {}).get("conditions", []) if c["status"] == "True"}
        return "Complete" if "Complete" in kinds else "Failed" if "Failed" in kinds else ""

    outcome = wait_until(f"{job} ended", ended, 600, every=2)
    log = install.kubectl("-n", NAMESPACE, "logs", f"job/{job}", check=False)
    listing = store.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{NAME}/{NAME}-db-0/base/")
    infos = sorted(item["Key"] for item in listing.get("Contents", []) if item["Key"].endswith("/backup.info"))
    return BackedUp(outcome == "Complete", log, infos)


def test_the_primary_runs_with_archiving_as_the_example_asks(archived: Archived) -> None:
    assert archived.settings == "on 1min"


def test_the_primary_archives_the_segment_it_closed(archived: Archived) -> None:
    assert archived.archived >= archived.segment
    assert archived.failed == "0"


def test_the_archived_segment_is_in_the_shards_folder_of_the_bucket_compressed(archived: Archived) -> None:
    wals = [
        key for key in archived.keys if re.fullmatch(rf"{NAME}/{NAME}-db-0/wals/[0-9A-F]{{16}}/[0-9A-F]{{24}}\.gz", key)
    ]
    assert f"{archived.segment}.gz" in {key.rsplit("/", 1)[1] for key in wals}, archived.keys


def test_the_standby_archives_nothing(archived: Archived) -> None:
    assert archived.standby_archived == "0"


def test_the_first_base_backup_taken_as_the_header_says_succeeds_from_the_standby(backed_up: BackedUp) -> None:
    assert backed_up.succeeded, backed_up.log
    assert f"{NAME}-db-0: base backup from its standby" in backed_up.log, backed_up.log


def test_the_first_base_backup_is_in_the_shards_folder_of_the_bucket(backed_up: BackedUp) -> None:
    assert len(backed_up.infos) == 1, backed_up.infos


# --- one restore point on every shard, as the header says to write one ------------------------------------------

ROWS = 1000  # the table the first ShardDB wrote before its base backup
LATE_ROWS = 500  # written after it, before the point: reached only through the archive
AFTER_POINT = 100  # written after the point


@dataclass(frozen=True)
class Pointed:
    name: str  # the point's, the Job's
    succeeded: bool
    log: str  # the Job's log


def point_command() -> list[str]:
    """The header's ``kubectl create job <point> --from=cronjob/...-point`` line, as words."""
    (line,) = [line for line in EXAMPLE.read_text().splitlines() if "--from=cronjob/" in line and "-point" in line]
    return line.lstrip("# ").split()[1:]


def job_outcome(install: Install, job: str) -> str:
    found = install.get("job", "-n", NAMESPACE, job)
    kinds = {c["type"] for c in found.get("status", {}).get("conditions", []) if c["status"] == "True"}
    return "Complete" if "Complete" in kinds else "Failed" if "Failed" in kinds else ""


@pytest.fixture(scope="module")
def pointed(install: Install, backed_up: BackedUp) -> Pointed:
    """Rows after the base backup, the point written as the header says, then rows after it."""
    assert backed_up.succeeded, backed_up.log
    primary = member(install, names.LEADER_LABEL_VALUE)
    assert psql(install, primary, "SELECT count(*) FROM archived") == str(ROWS)
    psql(install, primary, f"INSERT INTO archived SELECT generate_series({ROWS + 1}, {ROWS + LATE_ROWS})")
    words = point_command()
    assert words[:2] == ["create", "job"], words
    assert words[3] == f"--from=cronjob/{NAME}-point", words
    install.kubectl("-n", NAMESPACE, *words)
    outcome = wait_until(f"{words[2]} ended", lambda: job_outcome(install, words[2]), 300, every=2)
    log = install.kubectl("-n", NAMESPACE, "logs", f"job/{words[2]}", check=False)
    late = f"generate_series({ROWS + LATE_ROWS + 1}, {ROWS + LATE_ROWS + AFTER_POINT})"
    psql(install, primary, f"INSERT INTO archived SELECT {late}")
    return Pointed(words[2], outcome == "Complete", log)


def test_the_restore_points_job_made_as_the_header_says_writes_the_point_on_every_shard(pointed: Pointed) -> None:
    assert pointed.succeeded, pointed.log
    assert f"{NAME}-db-0-primary: restore point {pointed.name} at " in pointed.log, pointed.log
    assert f"restore point {pointed.name} on every shard" in pointed.log, pointed.log


# The superuser's password in the Secret changed, as a user who rotates it in the Secret alone would: the members
# run on with the one they started with, and each new Job pod reads the new one and is refused.
WRONG_PASSWORD = "not-the-shards-password"


@dataclass(frozen=True)
class Failed:
    """A scheduled run that could not log in, and what the ShardDB said of it."""

    degraded: Obj  # the Degraded condition once it named the failure
    available: bool
    backup_status: Obj
    log: str  # what the command the message names prints
    members_before: dict[str, str]  # member pod name -> uid, before the schedule changed
    members_after: dict[str, str]
    plugin: str  # what ``kubectl sharddb status`` printed meanwhile


def member_uids(install: Install) -> dict[str, str]:
    selector = f"{names.INSTANCE_LABEL}={NAME},{names.COMPONENT_LABEL}={names.DB}"
    return {pod["metadata"]["name"]: pod["metadata"]["uid"] for pod in install.pods(NAMESPACE, selector)}


def condition(install: Install, kind: str) -> Obj:
    found: list[Obj] = install.get("sharddb", "-n", NAMESPACE, NAME).get("status", {}).get("conditions", [])
    return next((each for each in found if each["type"] == kind), {})


def superuser_password(install: Install, value: str) -> None:
    patch = json.dumps({"stringData": {"superuser": value}})
    install.kubectl("-n", NAMESPACE, "patch", "secret", f"{NAME}-db", "--type=merge", "-p", patch)


@pytest.fixture(scope="module")
def failed_run(install: Install, backed_up: BackedUp) -> Iterator[Failed]:
    _ = backed_up
    before = member_uids(install)
    encoded = install.get("secret", "-n", NAMESPACE, f"{NAME}-db")["data"]["superuser"]
    superuser_password(install, WRONG_PASSWORD)
    every_minute = json.dumps({"spec": {"backup": {"schedule": "* * * * *"}}})
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", every_minute)
    try:
        named = wait_until(
            "Degraded BaseBackupFailed",
            lambda: (found := condition(install, "Degraded")).get("reason") == "BaseBackupFailed" and found,
            300,
            every=2,
        )
        status = install.get("sharddb", "-n", NAMESPACE, NAME)["status"]
        # The command the message names, in the ShardDB's namespace.
        command = re.search(r"`kubectl (logs [^`]+)`", named["message"])
        assert command, named["message"]
        log = install.kubectl("-n", NAMESPACE, *command.group(1).split(), check=False)
        after = member_uids(install)
        plugin = install.run(Step("status", f"tools/kubectl-sharddb-status {NAME} -n {NAMESPACE}\n"))
        available = install.available(NAMESPACE, NAME)
        yield Failed(named, available, status.get("backup", {}), log, before, after, plugin)
    finally:
        daily = json.dumps({"spec": {"backup": {"schedule": "0 0 * * *"}}})
        install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", daily)
        install.kubectl("-n", NAMESPACE, "patch", "secret", f"{NAME}-db", "--type=merge", "-p",
                        json.dumps({"data": {"superuser": encoded}}))  # fmt: skip


def test_a_scheduled_run_that_fails_makes_the_sharddb_degraded_naming_the_run_and_where_to_read_why(
    failed_run: Failed,
) -> None:
    message = failed_run.degraded["message"]
    assert f"CronJob {names.backup_name(NAME)} scheduled {failed_run.backup_status['lastScheduleTime']}" in message
    assert f"app.kubernetes.io/instance={NAME},app.kubernetes.io/component=backup" in message


def test_the_command_the_message_names_says_why_the_shard_was_not_backed_up(failed_run: Failed) -> None:
    assert f"{NAME}-db-0: no member to back up from" in failed_run.log, failed_run.log
    assert "password authentication failed" in failed_run.log, failed_run.log


def test_a_failed_base_backup_leaves_the_sharddb_available(failed_run: Failed) -> None:
    assert failed_run.available


def test_the_status_keeps_when_the_last_base_backup_succeeded(failed_run: Failed) -> None:
    assert failed_run.backup_status["lastSuccessfulTime"] < failed_run.backup_status["lastScheduleTime"]


def test_the_status_says_the_next_run_was_due_at_the_schedules_first_minute_after_the_last_success(
    failed_run: Failed,
) -> None:
    """The overdue alert's input, stored by the API server as the hooks wrote it, every minute being the schedule."""
    succeeded = datetime.fromisoformat(failed_run.backup_status["lastSuccessfulTime"])
    due = succeeded.replace(second=0, microsecond=0) + timedelta(minutes=1)
    assert failed_run.backup_status["nextScheduleTime"] == due.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_status_plugin_shows_the_last_success_and_when_the_next_run_is_due(failed_run: Failed) -> None:
    backup = failed_run.backup_status
    row = ["base backups", backup["lastSuccessfulTime"]]
    rows = [line.split("\t") for line in failed_run.plugin.splitlines()]
    (shown,) = [each for each in rows if each[:2] == row]
    assert shown[3] == backup["nextScheduleTime"], failed_run.plugin


def test_a_new_schedule_restarts_no_member(failed_run: Failed) -> None:
    assert failed_run.members_after == failed_run.members_before


# --- a restore into a new ShardDB, from the example -----------------------------------------------------------

RESTORED = "restored"
RESTORE_EXAMPLE = EXAMPLES / "sharddb-restore.yaml"


@dataclass(frozen=True)
class Restored:
    """The restored ShardDB once Available, and what its shard holds."""

    rows: str  # rows of the table in the restored shard's primary
    standby_rows: str  # the same on its standby, cloned from the new primary
    seed_jobs: list[str]  # the restored ShardDB's seed Jobs
    timeline: int  # the restored primary's timeline
    source_timeline: int  # the source primary's
    own_histories: list[str]  # timeline histories in the restored shard's own archive folder


def timeline(install: Install, pod: str) -> int:
    return int(psql(install, pod, "SELECT timeline_id FROM pg_catalog.pg_control_checkpoint()"))


def restore_applied(store: ObjectStore, point: str) -> list[Obj]:
    """The restore example as a user applies it: both stores' endpoints set to this one, and the target its
    comment shows set to the point's name."""
    docs = example(RESTORED, NAMESPACE, RESTORE_EXAMPLE)
    spec = docs[-1]["spec"]
    source = spec["restore"]["source"]
    assert (source["name"], source["objectStore"]["destinationPath"]) == (NAME, f"s3://{BUCKET}/{NAME}"), source
    assert spec["backup"]["objectStore"]["destinationPath"] == f"s3://{BUCKET}/{RESTORED}", spec["backup"]
    for each in (source["objectStore"], spec["backup"]["objectStore"]):
        each["endpointURL"] = store.endpoint
    assert "#   targetName: before-migration" in RESTORE_EXAMPLE.read_text()
    spec["restore"]["recoveryTarget"] = {"targetName": point}
    return docs


@pytest.fixture(scope="module")
def restored(install: Install, store: ObjectStore, pointed: Pointed) -> Iterator[Restored]:
    assert pointed.succeeded, pointed.log
    primary = member(install, names.LEADER_LABEL_VALUE)
    segment = psql(install, primary, "SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())")
    wait_until(
        f"{segment} archived by {primary}",
        lambda: (
            psql(install, primary, "SELECT coalesce(last_archived_wal, '') FROM pg_catalog.pg_stat_archiver") >= segment
        ),
        120,
        every=1,
    )
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(restore_applied(store, pointed.name)))
    try:
        wait_until(f"{RESTORED} Available", lambda: install.available(NAMESPACE, RESTORED), 900, every=2)
        leader = member(install, names.LEADER_LABEL_VALUE, RESTORED)
        standby = member(install, names.FOLLOWER_LABEL_VALUE, RESTORED)
        psql(install, leader, "SELECT pg_catalog.pg_switch_wal()")  # its new timeline's first segment, archived
        seeds = install.pods(NAMESPACE, f"{names.INSTANCE_LABEL}={RESTORED},{names.COMPONENT_LABEL}={names.SEED}")
        listing = store.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{RESTORED}/{RESTORED}-db-0/wals/")
        histories = [item["Key"] for item in listing.get("Contents", []) if ".history" in item["Key"]]
        yield Restored(
            psql(install, leader, "SELECT count(*) FROM archived"),
            wait_until(
                f"{standby} holds the rows",
                lambda: (
                    (found := psql(install, standby, "SELECT count(*) FROM archived")) == str(ROWS + LATE_ROWS)
                    and found
                ),
                120,
                every=1,
            ),
            [pod["metadata"]["name"] for pod in seeds],
            timeline(install, leader),
            timeline(install, primary),
            histories,
        )
    finally:
        install.kubectl("delete", "sharddb", "-n", NAMESPACE, RESTORED, "--ignore-not-found", "--wait", "--timeout=5m")


def test_the_restored_sharddb_holds_the_rows_up_to_the_point_through_the_archive_and_none_after_it(
    restored: Restored,
) -> None:
    assert restored.rows == str(ROWS + LATE_ROWS)


def test_the_restored_sharddbs_standby_clones_the_restored_data(restored: Restored) -> None:
    assert restored.standby_rows == str(ROWS + LATE_ROWS)


def test_the_restored_sharddb_is_never_seeded(restored: Restored) -> None:
    assert restored.seed_jobs == []


def test_the_restored_primary_runs_a_timeline_of_its_own_archived_in_its_own_folder(restored: Restored) -> None:
    assert restored.timeline > restored.source_timeline
    assert any(f"{restored.timeline:08X}.history" in key for key in restored.own_histories), restored.own_histories
