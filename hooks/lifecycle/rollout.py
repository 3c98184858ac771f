"""Which pod template each workload gets and where a template change stands: ``template_choice`` for each
running child, applied to shards and cache together so the cache rolls only once every shard has.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .. import names, pod_templates, template_choice
from ..last_applied import contains
from ..snapshot import Snapshot
from ..workloads import TemplateRecord
from .decision import ROLLING_UPDATE, ShardSetAnswer


@dataclass(frozen=True)
class Rendered:
    """What these hooks render for the spec, once a request: each template and what it is made from.

    The decision holds each running child's template against it; the renderers are not asked again.
    """

    db: dict[str, Any]
    cache: dict[str, Any]
    db_made: TemplateRecord
    cache_made: TemplateRecord


def render(snap: Snapshot) -> Rendered:
    """The templates of today's spec, and their records (``made``)."""
    spec = snap.spec
    db, cache = pod_templates.db_template(snap.name, spec), pod_templates.cache_template(snap.name, spec)
    db_inputs, cache_inputs = template_choice.inputs(spec, names.DB), template_choice.inputs(spec, names.CACHE)
    epoch, applied = template_choice.EPOCH, snap.apply_templates
    return Rendered(db, cache, TemplateRecord(db_inputs, epoch, applied), TemplateRecord(cache_inputs, epoch, applied))


@dataclass(frozen=True)
class Templates:
    """The template chosen for each workload, what each was made from, and what the spec renders."""

    db: template_choice.Choice
    cache: template_choice.Choice
    db_made: TemplateRecord
    cache_made: TemplateRecord
    rendered: Rendered

    @property
    def newer(self) -> tuple[str, ...]:
        """The parts whose newer template is held back (the status's ``newerTemplates``)."""
        return tuple(part for part, choice in (("shards", self.db), ("cache", self.cache)) if choice.waiting)


def choose_templates(snap: Snapshot, rendered: Rendered, with_cache: bool, *, hold: bool = False) -> Templates:
    """A running child keeps its template until its user asks for the one these hooks render.

    ``hold`` (a refusal's, ``shape.Outcome.hold``): every running child keeps its template and
    record even when its user asks, so a refused spec moves nothing that runs.
    """
    if hold:
        return held_templates(snap, rendered, with_cache)
    sts, cache = snap.statefulset, snap.cache
    edited = snap.edited
    db_choice = _choose(snap, sts.recorded() if sts else None, rendered.db, rendered.db_made, edited)
    cache_choice = template_choice.Choice({}, waiting=False)
    if with_cache:
        # An older version held the cache's template while the shards rolled (they roll first).
        lagging = edited or _shards_were_rolling(snap)
        cache_choice = _choose(snap, cache.recorded() if cache else None, rendered.cache, rendered.cache_made, lagging)
    return Templates(db_choice, cache_choice, rendered.db_made, rendered.cache_made, rendered)


def held_templates(snap: Snapshot, rendered: Rendered, with_cache: bool) -> Templates:
    """Each running child's template as last applied, with the record it was made with.

    The record is never the current spec's, so the change the spec asks is still pending once the
    refusal is lifted, and rolls then by the usual rule. A child that does not exist yet gets
    today's template: nothing runs there to keep.
    """
    sts, cache = snap.statefulset, snap.cache
    db_made = _superseded(sts.made) if sts else rendered.db_made
    db = sts.held_template() if sts else rendered.db
    cache_made = _superseded(cache.made) if cache else rendered.cache_made
    held_cache: dict[str, Any] = {}
    if cache is not None:
        held_cache = cache.held_template()
    elif with_cache:
        held_cache = rendered.cache
    return Templates(
        template_choice.Choice(db, waiting=False),
        template_choice.Choice(held_cache, waiting=False),
        db_made,
        cache_made,
        rendered,
    )


def _choose(
    snap: Snapshot,
    recorded: template_choice.Recorded | None,
    rendered: dict[str, Any],
    made_from: TemplateRecord,
    may_lag: bool,
) -> template_choice.Choice:
    return template_choice.choose(recorded, rendered, made_from.inputs or "", snap.apply_templates, may_lag=may_lag)


def _shards_were_rolling(snap: Snapshot) -> bool:
    """The shards roll, or the last answer said a rollout ran: a cache change may have waited for them."""
    sts = snap.statefulset
    rolling = sts is not None and not sts.rollout.settled(sts.replicas)
    views = [each.statefulset for each in snap.shard_sets]
    rolling = rolling or any(not view.rollout.settled(view.replicas) for view in views)
    return rolling or any(c.type == "Progressing" and c.reason == ROLLING_UPDATE for c in snap.prior_conditions)


def made(snap: Snapshot, inputs: str) -> TemplateRecord:
    """What a template rendered or kept now was made from: this spec's ``inputs``, this epoch, this request."""
    return TemplateRecord(inputs, template_choice.EPOCH, snap.apply_templates)


def _superseded(record: TemplateRecord) -> TemplateRecord:
    """A kept template whose spec has changed since: never mistaken for one made from the current spec."""
    return replace(record, inputs=record.inputs or template_choice.SUPERSEDED)


@dataclass(frozen=True)
class Rolling:
    """Where a template change stands at one request."""

    shards_rolling: bool  # the shard template is changing or not yet on every shard
    cache_rolling: bool
    cache_held: bool  # a cache change waits for the shards
    shards_updated: int
    # The StatefulSet controller has not read the latest spec: its status still describes the last one.
    shards_unobserved: bool = False


def rolling(snap: Snapshot, shards: int, ready: int, all_registered: bool, chosen: Templates) -> Rolling:
    """Where a template change stands: shards first; the cache once every shard is updated and serving."""
    sts = snap.statefulset
    if sts is None:
        return Rolling(False, False, False, 0)
    unobserved = sts.rollout.observed_generation < sts.rollout.generation
    db_pending = not contains(sts.template, chosen.db.template)
    # A template rollout, not a scale change: only that restarts serving shards on purpose.
    shards_rolling = db_pending or sts.rollout.new_revision()
    shards_settled = not shards_rolling and sts.rollout.settled(sts.replicas) and ready >= shards and all_registered
    updated = 0 if db_pending else sts.rollout.updated
    return _with_cache(snap, chosen, shards_rolling, shards_settled, updated, unobserved)


def rolling_sets(
    snap: Snapshot, sets: tuple[ShardSetAnswer, ...], shards: int, ready: int, all_registered: bool, chosen: Templates
) -> Rolling:
    """``rolling`` for shards with members: each shard's StatefulSet (OnDelete) has its members evicted by the
    rollout Job, standbys first, one at a time; a shard counts as updated once all its members are."""
    if not snap.shard_sets:
        return Rolling(False, False, False, 0)
    pending = {
        answer.shard
        for answer in sets
        if (observed := snap.shard_set(answer.shard)) is not None
        and not contains(observed.statefulset.template, answer.template)
    }
    views = [each.statefulset for each in snap.shard_sets]
    shards_rolling = bool(pending) or any(view.rollout.new_revision() for view in views)
    all_settled = all(view.rollout.settled(view.replicas) for view in views)
    shards_settled = not shards_rolling and all_settled and ready >= shards and all_registered
    updated = sum(
        1
        for each in snap.shard_sets
        if each.shard not in pending and each.statefulset.rollout.settled(each.statefulset.replicas)
    )
    unobserved = any(view.rollout.observed_generation < view.rollout.generation for view in views)
    return _with_cache(snap, chosen, shards_rolling, shards_settled, updated, unobserved)


def _with_cache(
    snap: Snapshot, chosen: Templates, shards_rolling: bool, shards_settled: bool, updated: int, unobserved: bool
) -> Rolling:
    """The cache's part of a rollout: a change of its template waits until the shards have settled."""
    cache = snap.cache
    cache_pending = cache is not None and not contains(cache.template, chosen.cache.template)
    cache_held = cache_pending and not shards_settled
    cache_rolling = cache is not None and (
        (cache_pending and not cache_held) or not cache.rollout.settled(cache.replicas)
    )
    return Rolling(shards_rolling, cache_rolling, cache_held, updated, shards_unobserved=unobserved)


def cache_answer(snap: Snapshot, plan: Rolling, chosen: Templates) -> tuple[dict[str, Any], TemplateRecord]:
    """The cache's template and its record: held for the shards, it keeps both as they are.

    The change it waits for rolls it after them, so its record must not claim the current spec.
    """
    cache = snap.cache
    if plan.cache_held and cache is not None:
        return cache.held_template() or chosen.cache.template, _superseded(cache.made)
    return chosen.cache.template, chosen.cache_made
