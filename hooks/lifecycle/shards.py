"""The shards as the gates and the teardown count them, whichever shape they run as: today's StatefulSet
``<name>-db`` (``SingleCopy``), or one StatefulSet per shard run by Patroni (``Members``), whose facts are
Patroni's marks (``hooks/replication/observe.py``) and whose readiness is a primary's, not a pod's.

The gates ask a ``Shards`` object and never branch on the shape themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from .. import template_choice
from ..replication import shape
from ..replication.shape import Plan
from ..replication.template import member_template
from ..snapshot import Snapshot
from .decision import ShardSetAnswer
from .rollout import Rendered, Rolling, Templates, rolling, rolling_sets


def choose_sets(
    snap: Snapshot, rendered: Rendered, plan: Plan, shards: int, may_lag: bool, hold: bool = False
) -> tuple[tuple[ShardSetAnswer, ...], bool]:
    """Each shard's StatefulSet: a running one keeps its member template until its user asks for a change.

    The same rule as today's StatefulSet (``template_choice``), per shard: upgrading the hooks
    restarts no member. Returns the sets and whether a newer template waits on any of them.
    ``hold`` (a refusal's, ``shape.Outcome.hold``): every observed set as it runs, template
    and record, even when asked to roll, and no new one; none is left out, so none is deleted.
    """
    if hold:
        return held_sets(snap, plan), False
    base, made_now = rendered.db, rendered.db_made
    answers = []
    waiting = False
    for shard in range(shards):
        template = member_template(snap.name, shard, snap.spec, plan, base)
        observed = snap.shard_set(shard)
        if observed is None:
            answers.append(ShardSetAnswer(shard, plan.members, template, made_now))
            continue
        view = observed.statefulset
        choice = template_choice.choose(
            view.recorded(), template, made_now.inputs or "", snap.apply_templates, may_lag=may_lag
        )
        waiting = waiting or choice.waiting
        answers.append(ShardSetAnswer(shard, plan.members, choice.template, made_now, view.claim_templates))
    return tuple(answers), waiting


def held_sets(snap: Snapshot, plan: Plan) -> tuple[ShardSetAnswer, ...]:
    """Every observed shard StatefulSet with its template and record as they are, at ``plan``'s member count.

    The record stays the one it was made with, so the change the spec asks is still pending once
    the refusal is lifted, and rolls then by the usual rule.
    """
    return tuple(
        ShardSetAnswer(
            each.shard,
            plan.members,
            each.statefulset.held_template(),
            each.statefulset.made,
            each.statefulset.claim_templates,
        )
        for each in snap.shard_sets
    )


def stopping_sets(snap: Snapshot, keep: bool) -> tuple[ShardSetAnswer, ...]:
    """A teardown's sets: only those observed, each with its template and record as they are; at zero unless ``keep``.

    At zero, the StatefulSet controller (Parallel) deletes every member of a shard at once; the
    members' preStop hook (``replication.stop``) keeps the primary for last, so no standby is
    promoted while its shard stops. Stopping standbys first cannot be asked of a StatefulSet (a
    scale-down removes the highest ordinal, which may be the primary), and the hooks never delete
    a pod.
    """
    return tuple(
        ShardSetAnswer(
            each.shard,
            each.statefulset.replicas if keep else 0,
            each.statefulset.held_template(),
            each.statefulset.made,
            each.statefulset.claim_templates,
        )
        for each in snap.shard_sets
    )


@dataclass(frozen=True)
class Layout:
    """The shards' templates and where a change of them stands: with members, each shard's StatefulSet too."""

    chosen: Templates
    plan: Rolling
    sets: tuple[ShardSetAnswer, ...] = ()
    member_rollout: bool = False  # OnDelete: nothing rolls unless the rollout Job evicts


class Shards(Protocol):
    """What the gates ask of the shards, whichever shape they run as."""

    def ready(self, shards: int) -> int:
        """Shards ready for the gates (a seed, the cache)."""
        ...

    def serving(self, shards: int, ready: int) -> int:
        """Shards that serve clients."""
        ...

    def registered(self) -> frozenset[int]:
        """Shards clients reach through discovery."""
        ...

    def layout(self, chosen: Templates, shards: int, ready: int, all_registered: bool) -> Layout:
        """Each StatefulSet's template, and where a change of it stands."""
        ...

    def expected_sets(self, layout: Layout) -> tuple[int, ...] | None:
        """The shards with members whose StatefulSets an earlier answer asked for; None: today's one StatefulSet."""
        ...


@dataclass(frozen=True)
class SingleCopy:
    """Today's shards: one StatefulSet ``<name>-db``, a pod per shard, ready when its pod is."""

    snap: Snapshot

    def ready(self, shards: int) -> int:
        """The StatefulSet's ready pods: it counts only the shards it runs."""
        del shards
        sts = self.snap.statefulset
        return sts.ready if sts else 0

    def serving(self, shards: int, ready: int) -> int:
        """A ready shard pod serves."""
        del shards
        return ready

    def registered(self) -> frozenset[int]:
        """A ready endpoint of the headless Service."""
        return self.snap.registered

    def layout(self, chosen: Templates, shards: int, ready: int, all_registered: bool) -> Layout:
        return Layout(chosen, rolling(self.snap, shards, ready, all_registered, chosen))

    def expected_sets(self, layout: Layout) -> tuple[int, ...] | None:
        """None: the one StatefulSet ``<name>-db`` is expected, whatever the layout."""
        del layout
        return None


@dataclass(frozen=True)
class Members:
    """Shards with members, or none at all when refused before any existed (``outcome.plan`` None)."""

    snap: Snapshot
    outcome: shape.Outcome

    def ready(self, shards: int) -> int:
        """Shards with a primary (and, if synchronous, a streaming sync standby)."""
        return sum(1 for each in self.snap.shard_sets if each.shard < shards and each.health.ready)

    def serving(self, shards: int, ready: int) -> int:
        """Each shard whose primary is ready and running.

        A synchronous shard that lost its standby still serves: Patroni (not strict) drops the standby
        from ``synchronous_standby_names`` and commits go on, acknowledged by the primary alone. That
        shard is not ready for the gates (a new seed or cache waits), and Degraded says ``NoSyncStandby``.
        """
        del ready  # a primary serves whether or not the shard is ready for the gates
        return sum(1 for each in self.snap.shard_sets if each.shard < shards and each.health.primary is not None)

    def registered(self) -> frozenset[int]:
        """The primary is a ready endpoint of the shard's ``-primary`` Service."""
        return frozenset(each.shard for each in self.snap.shard_sets if each.registered)

    def layout(self, chosen: Templates, shards: int, ready: int, all_registered: bool) -> Layout:
        snap, plan = self.snap, self.outcome.plan
        if plan is None:  # refused before any shard existed: no StatefulSet is rendered
            return Layout(chosen, rolling(snap, shards, ready, all_registered, chosen))
        edited = snap.edited
        sets, held_back = choose_sets(snap, chosen.rendered, plan, shards, edited, self.outcome.hold)
        chosen = replace(chosen, db=template_choice.Choice(chosen.db.template, waiting=held_back))
        moving = rolling_sets(snap, sets, shards, ready, all_registered, chosen)
        return Layout(chosen, moving, sets, member_rollout=moving.shards_rolling)

    def expected_sets(self, layout: Layout) -> tuple[int, ...] | None:
        """A new StatefulSet is created by this very answer; those an earlier one asked for are expected."""
        return tuple(range(max(1, self.snap.existing_shards))) if layout.sets else ()


def of(snap: Snapshot, outcome: shape.Outcome) -> Shards:
    """The shards' shape: members unless the plan is today's single copies."""
    if outcome.plan is None or outcome.plan.patroni:
        return Members(snap, outcome)
    return SingleCopy(snap)
