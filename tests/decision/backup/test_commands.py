"""barman-cloud's command lines, as ``spec.backup`` makes them."""

from __future__ import annotations

import shlex

from hooks.backup import commands
from hooks.backup.spec import ObjectStore

STORE = ObjectStore.model_validate(
    {
        "destinationPath": "s3://backups/orders/",
        "endpointURL": "https://s3.example.com:9000",
        "s3Credentials": {"accessKeyId": {"name": "s3", "key": "id"}, "secretAccessKey": {"name": "s3", "key": "key"}},
    }
)
AWS = STORE.model_copy(update={"endpoint_url": None})


def test_each_shard_archives_under_the_destination_path_as_a_server_of_its_own() -> None:
    args = commands.wal_archive(STORE, "orders-db-1")
    assert args[-3:] == ["s3://backups/orders", "orders-db-1", "%p"]


def test_the_archive_command_names_the_endpoint_and_compresses() -> None:
    args = commands.wal_archive(STORE, "orders-db-0")
    assert args[args.index("--endpoint-url") + 1] == "https://s3.example.com:9000"
    assert "--gzip" in args


def test_aws_s3_itself_needs_no_endpoint() -> None:
    assert "--endpoint-url" not in commands.wal_archive(AWS, "orders-db-0")


def test_the_restore_command_fetches_the_file_postgresql_asks_for_into_the_path_it_gives() -> None:
    assert commands.wal_restore(STORE, "orders-db-0")[-2:] == ["%f", "%p"]


def test_placeholders_stay_bare_in_the_shell_line_so_postgresql_substitutes_them() -> None:
    line = commands.line(commands.wal_restore(STORE, "orders-db-0"))
    assert line.endswith(" %f %p")
    assert shlex.split(line) == commands.wal_restore(STORE, "orders-db-0")


def test_no_secret_is_on_a_command_line() -> None:
    """The access key reaches the engine through boto3's environment only."""
    for args in (
        commands.wal_archive(STORE, "s"),
        commands.wal_restore(STORE, "s"),
        commands.base_backup(STORE, "s", "/var/run/postgresql", 5432, "postgres"),
        commands.restore(STORE, "s", "latest", "/data"),
    ):
        assert not {"id", "key", "s3"} & set(args), args
