"""The shards' shape the gates ask (``hooks/lifecycle/shards.py``): today's single copies or shards with members.

The gates never branch on the shape: each question (ready, serving, registered, which StatefulSets
are expected) has one answer per shape, specified here on snapshots built by hand.
"""

from __future__ import annotations

from hooks.lifecycle import shards
from hooks.lifecycle.rollout import Templates, choose_templates, render
from hooks.replication.health import NO_SYNC_STANDBY, READY, ShardHealth
from hooks.replication.sets import ShardSetView
from hooks.replication.shape import SINGLE_COPY, Outcome, Plan

from ..support.snapshots import snapshot, sts

TWO = Plan(members=2, synchronous=True)


def shard_set(shard: int, *, ready: bool = True, primary: str | None = "p", registered: bool = True) -> ShardSetView:
    health = ShardHealth(ready, READY if ready else NO_SYNC_STANDBY, "", primary=primary)
    return ShardSetView(shard, sts(replicas=2, ready=2), health, registered=registered)


def test_single_copies_are_asked_of_todays_statefulset() -> None:
    shape = shards.of(
        snapshot(statefulset=sts(replicas=3, ready=2), registered=frozenset({0, 2})), Outcome(SINGLE_COPY)
    )
    assert isinstance(shape, shards.SingleCopy)
    assert shape.ready(3) == 2
    assert shape.serving(3, 2) == 2
    assert shape.registered() == frozenset({0, 2})


def test_single_copies_expect_the_one_statefulset() -> None:
    shape = shards.of(snapshot(statefulset=sts()), Outcome(SINGLE_COPY))
    assert isinstance(shape, shards.SingleCopy)
    layout = shape.layout(*_inputs(shape))
    assert shape.expected_sets(layout) is None


def test_a_shard_with_members_is_ready_by_its_health_and_serves_by_its_primary() -> None:
    sets = (shard_set(0), shard_set(1, ready=False), shard_set(2, ready=False, primary=None))
    shape = shards.of(snapshot(shard_sets=sets), Outcome(TWO))
    assert isinstance(shape, shards.Members)
    assert shape.ready(3) == 1
    assert shape.serving(3, 1) == 2  # a shard without its sync standby still serves
    assert shape.registered() == frozenset({0, 1, 2})


def test_shards_beyond_the_count_asked_for_are_not_counted() -> None:
    shape = shards.of(snapshot(shard_sets=(shard_set(0), shard_set(1))), Outcome(TWO))
    assert shape.ready(1) == 1
    assert shape.serving(1, 1) == 1


def test_a_shard_is_registered_once_its_primary_is_a_ready_endpoint() -> None:
    shape = shards.of(snapshot(shard_sets=(shard_set(0), shard_set(1, registered=False))), Outcome(TWO))
    assert shape.registered() == frozenset({0})


def test_a_refusal_before_any_shard_existed_counts_as_members_with_no_statefulset() -> None:
    shape = shards.of(snapshot(), Outcome(None))
    assert isinstance(shape, shards.Members)
    layout = shape.layout(*_inputs(shape))
    assert layout.sets == ()
    assert shape.expected_sets(layout) == ()
    assert shape.ready(3) == 0


def test_shards_with_members_expect_every_statefulset_an_earlier_answer_asked_for() -> None:
    shape = shards.of(snapshot(shard_sets=(shard_set(0), shard_set(1))), Outcome(TWO))
    assert isinstance(shape, shards.Members)
    layout = shape.layout(*_inputs(shape))
    assert [each.shard for each in layout.sets] == [0, 1, 2]
    assert shape.expected_sets(layout) == (0, 1)


def _inputs(shape: shards.SingleCopy | shards.Members) -> tuple[Templates, int, int, bool]:
    """The templates this spec renders, for every shard it asks for, none of them ready yet."""
    return choose_templates(shape.snap, render(shape.snap), with_cache=False), shape.snap.spec.shards, 0, False
