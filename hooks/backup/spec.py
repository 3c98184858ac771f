"""``spec.backup``: where every shard's WAL goes, with what credentials, how often a segment is closed, when each
shard's base backup is taken and how long the store keeps what a restore needs. ``spec.restore``: another
ShardDB's backups a new ShardDB starts from, and the moment it stops at.

Only S3 and S3-compatible stores, over HTTPS; the CRD says the same (``crds/sharddb.yaml``), and allows the
section only with members, whose image carries the engine.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from ..model import DnsName, Spec, integral
from ..names import MAX_NAME_LENGTH

# A key of a Secret: what Kubernetes allows (``kubectl create secret`` refuses others).
SecretKey = Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
# s3://<bucket>[/<prefix>]: a bucket name as S3 names one; each shard archives under <prefix>/<name>-db-<shard>.
DESTINATION_PATTERN = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?$"
# TLS only: the store receives every row of every shard.
ENDPOINT_PATTERN = r"^https://[^\s/?#]+(/[^\s?#]*)?$"
REGION_PATTERN = r"^[a-z0-9-]+$"
DEFAULT_REGION = "us-east-1"
DEFAULT_ARCHIVE_TIMEOUT_SECONDS = 60
MIN_ARCHIVE_TIMEOUT_SECONDS = 10
MAX_ARCHIVE_TIMEOUT_SECONDS = 3600
# A CronJob's schedule: five fields, or one of its macros; the API server checks the fields themselves.
SCHEDULE_PATTERN = r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+( +\S+){4})$"
DEFAULT_SCHEDULE = "0 0 * * *"
# A recovery window in days, weeks or months, as barman-cloud's retention policies count them.
RETENTION_PATTERN = r"^[1-9][0-9]{0,3}[dwm]$"
RETENTION_UNITS = {"d": "DAYS", "w": "WEEKS", "m": "MONTHS"}
# RFC 3339 with its offset (Z or +hh:mm), as the CRD's date-time format takes it and PostgreSQL reads it.
TARGET_TIME_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
# A restore point's name (pg_create_restore_point takes up to 63 bytes).
TARGET_NAME_PATTERN = r"^[A-Za-z0-9][-._A-Za-z0-9]{0,62}$"
# A base backup's ID as barman-cloud-backup names it: its start time, YYYYMMDDTHHMMSS.
BACKUP_ID_PATTERN = r"^[0-9]{8}T[0-9]{6}$"
# A ShardDB's name, as the CRD allows one.
ShardDBName = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_NAME_LENGTH, pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
]


class SecretKeySelector(Spec):
    """One key of a Secret in the ShardDB's namespace."""

    name: DnsName
    key: SecretKey


class S3Credentials(Spec):
    """The access key the members sign their requests to the store with."""

    access_key_id: SecretKeySelector = Field(alias="accessKeyId")
    secret_access_key: SecretKeySelector = Field(alias="secretAccessKey")


class ObjectStore(Spec):
    """Where every shard's WAL and base backups go: an S3 or S3-compatible bucket, over HTTPS."""

    destination_path: Annotated[str, StringConstraints(max_length=1024, pattern=DESTINATION_PATTERN)] = Field(
        alias="destinationPath"
    )
    # None: AWS S3 itself (boto3 finds the endpoint from the region).
    endpoint_url: Annotated[str, StringConstraints(max_length=1024, pattern=ENDPOINT_PATTERN)] | None = Field(
        default=None, alias="endpointURL"
    )
    # None: the image's own trust store.
    endpoint_ca: SecretKeySelector | None = Field(default=None, alias="endpointCA")
    region: Annotated[str, StringConstraints(min_length=1, max_length=63, pattern=REGION_PATTERN)] = DEFAULT_REGION
    s3_credentials: S3Credentials = Field(alias="s3Credentials")


class Backup(Spec):
    """Each shard's WAL archived by barman-cloud from its members (``hooks/backup/``)."""

    object_store: ObjectStore = Field(alias="objectStore")
    # A segment not yet full is archived after this long anyway: the most a lost cluster can lose.
    archive_timeout_seconds: Annotated[int, Field(ge=MIN_ARCHIVE_TIMEOUT_SECONDS, le=MAX_ARCHIVE_TIMEOUT_SECONDS)] = (
        Field(default=DEFAULT_ARCHIVE_TIMEOUT_SECONDS, alias="archiveTimeoutSeconds")
    )

    # When each shard's base backup is taken (the CronJob's schedule, in the controller manager's time zone).
    schedule: Annotated[str, StringConstraints(max_length=128, pattern=SCHEDULE_PATTERN)] = DEFAULT_SCHEDULE
    # How far back a restore may reach: older base backups and the WAL only they need are deleted after each
    # scheduled backup. None: nothing is ever deleted.
    retention_policy: Annotated[str, StringConstraints(pattern=RETENTION_PATTERN)] | None = Field(
        default=None, alias="retentionPolicy"
    )

    _integral = field_validator("archive_timeout_seconds", mode="before")(integral)

    @property
    def recovery_window(self) -> str | None:
        """The retention policy in barman's words (``RECOVERY WINDOW OF 30 DAYS``), or None."""
        if self.retention_policy is None:
            return None
        count, unit = self.retention_policy[:-1], self.retention_policy[-1]
        return f"RECOVERY WINDOW OF {count} {RETENTION_UNITS[unit]}"


class RestoreSource(Spec):
    """The ShardDB whose backups a new one starts from: its name when it was backed up, and its object store."""

    # Its shards' folders in the store are <name>-db-<shard>.
    name: ShardDBName
    object_store: ObjectStore = Field(alias="objectStore")


class RecoveryTarget(Spec):
    """Where each shard's recovery stops; neither target: at the end of the archived WAL (the latest).

    The CRD refuses both targets at once; the hooks do not refuse again what the schema allows (were both to
    reach a member, PostgreSQL would refuse to start, restoring nothing).
    """

    target_time: Annotated[str, StringConstraints(pattern=TARGET_TIME_PATTERN)] | None = Field(
        default=None, alias="targetTime"
    )
    target_name: Annotated[str, StringConstraints(pattern=TARGET_NAME_PATTERN)] | None = Field(
        default=None, alias="targetName"
    )
    # The base backup to start from; None: the newest one taken before targetTime, else the newest one.
    backup_id: Annotated[str, StringConstraints(pattern=BACKUP_ID_PATTERN)] | None = Field(
        default=None, alias="backupID"
    )


class Restore(Spec):
    """A new ShardDB made from another one's base backups and WAL: read once, when each shard is first bootstrapped."""

    source: RestoreSource
    recovery_target: RecoveryTarget = Field(default_factory=RecoveryTarget, alias="recoveryTarget")
