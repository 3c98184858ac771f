"""``hooks/replication/marks.py``: what Patroni marks, read as Patroni writes it, called directly.

A member pod's role label and ``status`` annotation (its state, timeline and WAL positions), the
last failover from ``<scope>-config``'s history and the ``-sync`` ConfigMap; anything absent or
malformed reads as unknown, never as an error.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from hooks import names
from hooks.replication.marks import Failover, MemberPod, SyncRecord

from ...support.replication import HEAD_LSN, following, marked, standby

Obj = dict[str, Any]


# --- a member pod -------------------------------------------------------------------------------------------


def test_the_pods_marks_are_read_as_patroni_writes_them() -> None:
    pod: Obj = {
        "metadata": {
            "name": "demo-db-0-1",
            "labels": {names.ROLE_LABEL: "replica"},
            "annotations": {"status": '{"state":"running","role":"replica","replication_state":"streaming"}'},
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert MemberPod.from_pod(pod) == standby()


def test_an_unreadable_status_annotation_reads_as_not_running() -> None:
    pod: Obj = {"metadata": {"name": "demo-db-0-0", "annotations": {"status": "{not json"}}}
    assert MemberPod.from_pod(pod) == MemberPod("demo-db-0-0")


def test_a_members_timeline_and_wal_positions_are_read_as_patroni_writes_them() -> None:
    seen = marked("demo-db-0-1", "replica", following(16, 4096))
    assert (seen.timeline, seen.xlog_location, seen.receive_lsn, seen.replay_lsn) == (
        1,
        HEAD_LSN - 16,
        HEAD_LSN - 16,
        HEAD_LSN - 4096,
    )


@pytest.mark.parametrize("written", ['"0/4000098"', "true", "-1", "1.5", "null", str(2**63)])
def test_a_wal_position_that_is_not_a_json_count_reads_as_unknown(written: str) -> None:
    seen = marked("demo-db-0-0", "primary", f'{{"state":"running","role":"primary","xlog_location":{written}}}')
    assert seen.xlog_location is None


# --- the last failover, from Patroni's history on <scope>-config --------------------------------------------


# A line as Patroni 4.1 appends it after a promotion: the timeline that ended, the position it ended at,
# PostgreSQL's reason from its timeline history file, the file's time in Patroni's zone, the new leader.
PROMOTED = [1, 50331808, "no recovery target specified", "2026-05-05T07:04:58.123456+02:00", "demo-db-0-1"]


def history(value: object) -> dict[str, object]:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return {"metadata": {"name": "demo-db-0-config", "annotations": {"history": text}}}


def test_the_last_line_of_patronis_history_is_the_last_failover() -> None:
    earlier = [1, 50331808, "no recovery target specified", "2026-05-05T04:00:00+00:00", "demo-db-0-0"]
    last = [2, 83886240, "no recovery target specified", "2026-05-05T05:00:00.5+00:00", "demo-db-0-1"]
    assert Failover.from_config_map(history([earlier, last])) == Failover(
        3, "no recovery target specified", datetime(2026, 5, 5, 5, 0, 0, 500000, tzinfo=UTC), "demo-db-0-1"
    )


def test_the_failovers_time_keeps_the_zone_patroni_wrote_it_in() -> None:
    found = Failover.from_config_map(history([PROMOTED]))
    assert found is not None
    assert found.at == datetime(2026, 5, 5, 5, 4, 58, 123456, tzinfo=UTC)


def test_a_line_patroni_could_not_time_gives_no_time_and_no_new_primary() -> None:
    assert Failover.from_config_map(history([[1, 50331808, "no recovery target specified"]])) == Failover(
        2, "no recovery target specified"
    )


@pytest.mark.parametrize("config_map", [None, {"metadata": {"annotations": {}}}, history("[]")])
def test_no_history_is_no_failover(config_map: dict[str, object] | None) -> None:
    assert Failover.from_config_map(config_map) is None


@pytest.mark.parametrize(
    "written",
    [
        "[[1,50331808,",
        '{"timeline":1}',
        "[1,50331808]",
        [[1, 50331808]],
        [["1", 50331808, "no recovery target specified"]],
        [[True, 50331808, "no recovery target specified"]],
        [[0, 50331808, "no recovery target specified"]],
        [[1, "0/3000060", "no recovery target specified"]],
        [[1, 50331808, 7]],
        [[*PROMOTED[:3], "yesterday", "demo-db-0-1"]],
        [[*PROMOTED[:3], "2026-05-05T05:04:58", "demo-db-0-1"]],
        [[*PROMOTED[:4], ""]],
        [[*PROMOTED, "more"]],
        [PROMOTED, "not a line"],
    ],
)
def test_a_malformed_history_is_no_failover(written: object) -> None:
    assert Failover.from_config_map(history(written)) is None


# --- the -sync ConfigMap ------------------------------------------------------------------------------------


def test_the_sync_configmap_is_read_from_its_annotations() -> None:
    config_map: Obj = {
        "metadata": {"annotations": {"leader": "demo-db-0-0", "sync_standby": "demo-db-0-1,demo-db-0-2"}}
    }
    assert SyncRecord.from_config_map(config_map) == SyncRecord(
        "demo-db-0-0", frozenset({"demo-db-0-1", "demo-db-0-2"})
    )
    assert SyncRecord.from_config_map(None) == SyncRecord()
