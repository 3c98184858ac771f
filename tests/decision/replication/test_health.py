"""``hooks/replication/health.py``: when a shard with members is ready, and each member's state and lag.

Ready is a primary's readiness, not a pod's: one member labelled primary, Ready and running, and, when
synchronous, a standby streaming as its synchronous standby. Patroni's marks are built as ``marks``
reads them.
"""

from __future__ import annotations

from hooks.replication.health import MemberState, ShardHealth, member_states, shard_health
from hooks.replication.marks import MemberPod, SyncRecord
from hooks.replication.shape import Plan

from ...support.replication import HEAD_LSN, TWO, following, marked, patroni_status, primary, standby

# --- readiness ----------------------------------------------------------------------------------------------


SYNCED = SyncRecord(leader="demo-db-0-0", standbys=frozenset({"demo-db-0-1"}))


def health(pods_seen: list[MemberPod], sync: SyncRecord = SYNCED, plan: Plan = TWO) -> ShardHealth:
    return shard_health("demo-db-0", plan, pods_seen, sync)


def test_a_shard_with_a_primary_and_a_streaming_sync_standby_is_ready() -> None:
    seen = health([primary(), standby()])
    assert (seen.ready, seen.primary, seen.sync_standby) == (True, "demo-db-0-0", "demo-db-0-1")


def test_a_shard_without_a_primary_is_not_ready() -> None:
    assert health([standby()]).reason == "NoPrimary"


def test_a_primary_not_ready_yet_is_no_primary() -> None:
    assert health([primary(ready=False), standby()]).reason == "NoPrimary"


def test_a_primary_being_deleted_is_no_primary() -> None:
    assert health([primary(deleting=True), standby()]).reason == "NoPrimary"


def test_two_pods_labelled_primary_are_never_ready_and_both_are_named() -> None:
    seen = health([primary(), primary("demo-db-0-1")])
    assert (seen.ready, seen.reason) == (False, "TwoPrimaries")
    assert "demo-db-0-0 and demo-db-0-1" in seen.message


def test_a_primary_label_left_on_an_older_timeline_is_no_primary() -> None:
    """The old primary's node is gone with its label; Patroni promoted the standby onto the next timeline."""
    old, new = primary(timeline=1), primary("demo-db-0-1", timeline=2)
    seen = health([old, new], SyncRecord(leader="demo-db-0-1"))
    assert (seen.ready, seen.reason, seen.primary) == (False, "NoSyncStandby", "demo-db-0-1")


def test_two_pods_labelled_primary_on_one_timeline_are_two_primaries() -> None:
    seen = health([primary(timeline=2), primary("demo-db-0-1", timeline=2)])
    assert seen.reason == "TwoPrimaries"


def test_two_pods_labelled_primary_with_a_timeline_unknown_are_two_primaries() -> None:
    seen = health([primary(timeline=1), primary("demo-db-0-1")])
    assert seen.reason == "TwoPrimaries"


def test_a_standby_of_the_newer_primary_makes_the_shard_ready_beside_a_stale_label() -> None:
    old, new = primary(timeline=1), primary("demo-db-0-1", timeline=2)
    third = standby("demo-db-0-2", timeline=2)
    seen = health([old, new, third], SyncRecord(leader="demo-db-0-1", standbys=frozenset({"demo-db-0-2"})))
    assert (seen.ready, seen.primary, seen.sync_standby) == (True, "demo-db-0-1", "demo-db-0-2")


def test_a_synchronous_shard_waits_for_its_sync_standby_to_stream() -> None:
    seen = health([primary(), standby(replication_state="in archive recovery")])
    assert (seen.ready, seen.reason) == (False, "NoSyncStandby")


def test_a_streaming_standby_not_named_sync_does_not_make_it_ready() -> None:
    assert health([primary(), standby()], SyncRecord(leader="demo-db-0-0")).reason == "NoSyncStandby"


def test_a_sync_record_of_an_older_leader_does_not_count() -> None:
    stale = SyncRecord(leader="demo-db-0-1", standbys=frozenset({"demo-db-0-1"}))
    assert health([primary(), standby()], stale).reason == "NoSyncStandby"


def test_an_asynchronous_shard_is_ready_with_its_primary_alone() -> None:
    seen = health([primary()], SyncRecord(), Plan(2, synchronous=False))
    assert (seen.ready, seen.sync_standby, seen.streaming) == (True, None, ())


# --- each member's state and lag, as the status shows them --------------------------------------------------


LEADING = patroni_status("10.0.0.10", "primary")


def states(*pods: MemberPod) -> dict[str, MemberState]:
    return {state.name: state for state in member_states(list(pods))}


def test_a_standbys_lags_are_the_primarys_position_less_what_it_received_and_replayed() -> None:
    seen = states(marked("demo-db-0-0", "primary", LEADING), marked("demo-db-0-1", "replica", following(16, 4096)))
    assert (seen["demo-db-0-1"].receive_lag, seen["demo-db-0-1"].replay_lag) == (16, 4096)


def test_the_primary_has_no_lag() -> None:
    seen = states(marked("demo-db-0-0", "primary", LEADING), marked("demo-db-0-1", "replica", following(0, 0)))
    assert (seen["demo-db-0-0"].receive_lag, seen["demo-db-0-0"].replay_lag) == (None, None)


def test_a_lag_is_unknown_while_the_primary_has_not_written_its_position() -> None:
    primary_without = patroni_status("10.0.0.10", "primary", xlog_location=None)
    seen = states(marked("demo-db-0-0", "primary", primary_without), marked("demo-db-0-1", "replica", following(0, 0)))
    assert (seen["demo-db-0-1"].receive_lag, seen["demo-db-0-1"].replay_lag) == (None, None)


def test_a_lag_is_unknown_for_a_standby_that_has_not_written_its_positions() -> None:
    cloning = patroni_status("10.0.0.11", "replica", state="creating replica", xlog_location=None, timeline=None)
    seen = states(marked("demo-db-0-0", "primary", LEADING), marked("demo-db-0-1", None, cloning))
    assert (seen["demo-db-0-1"].receive_lag, seen["demo-db-0-1"].replay_lag) == (None, None)


def test_a_standby_written_after_the_primarys_last_position_lags_zero_not_less() -> None:
    ahead = patroni_status(
        "10.0.0.11",
        "replica",
        xlog_location=HEAD_LSN + 100,
        replay_lsn=HEAD_LSN + 100,
        receive_lsn=HEAD_LSN + 100,
        replication_state="streaming",
    )
    seen = states(marked("demo-db-0-0", "primary", LEADING), marked("demo-db-0-1", "replica", ahead))
    assert (seen["demo-db-0-1"].receive_lag, seen["demo-db-0-1"].replay_lag) == (0, 0)


def test_two_pods_labelled_primary_leave_every_lag_unknown() -> None:
    seen = states(
        marked("demo-db-0-0", "primary", LEADING),
        marked("demo-db-0-1", "primary", LEADING),
        marked("demo-db-0-2", "replica", following(0, 0)),
    )
    assert (seen["demo-db-0-2"].receive_lag, seen["demo-db-0-2"].replay_lag) == (None, None)


def test_a_member_being_deleted_is_not_listed() -> None:
    assert [each.name for each in member_states([primary(), standby(deleting=True)])] == ["demo-db-0-0"]


def test_a_standby_not_streaming_is_named_once_the_shard_has_a_primary() -> None:
    seen = health([primary(), standby(replication_state="in archive recovery")], plan=Plan(2, synchronous=False))
    assert [(each.name, each.patroni_state) for each in seen.not_streaming] == [
        ("demo-db-0-1", "running, in archive recovery")
    ]


def test_no_standby_is_named_not_streaming_while_the_shard_has_no_primary() -> None:
    assert health([primary(ready=False), standby(state="starting", replication_state=None)]).not_streaming == ()
