"""Which pod template a running child gets: the one it runs, or the one this version of the hooks renders.

Each version renders templates a little differently (a default command, a probe, a label).
Applied to every running ShardDB at the first resync after an upgrade, that would restart
every database of a fleet at once, unasked. So a StatefulSet or cache Deployment keeps the
template it runs until its user asks for a change: a spec change that shapes its pods, the
``apply-templates`` annotation on the ShardDB, or a release whose template change cannot
wait (``EPOCH``). What a template was made from is recorded on the child itself.

A child an older version made has no record. It counts as made from the current spec only
while the spec is unchanged since the last answer (``Snapshot.edited``) and that answer held nothing
back: an edit made after an upgrade and before the first answer that records it still rolls.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from .last_applied import contains
from .spec import ShardDBSpec

# Raised by a release whose template change must reach every pod (a fix that cannot wait);
# children recorded with an older epoch (or none: made before epochs) then roll as usual.
EPOCH = 1
# Spec fields each template reads; held to pod_templates.py's templates by tests/decision/test_templates.py.
DB_FIELDS = ("dbImage", "db", "drainCommand", "drainGracePeriodSeconds", "imagePullSecrets", "serviceAccountName")
# Read by the member templates alone (``replication/template.py``): absent from every ShardDB made before it, so
# no running shard's hash moves with the release that adds it.
MEMBER_FIELDS = ("backup",)
# Read by Patroni once, when a shard's cluster is first made (``backup/restore.py``): the member templates carry
# it, but removing it once the shards run must restart none of them, so it shapes no hash.
READ_ONCE = ("restore",)
# Read by the base backups' CronJob alone (``backup/cronjob.py``): a new schedule restarts no member.
BACKUP_IGNORED = ("schedule", "retentionPolicy")
CACHE_FIELDS = ("cache", "imagePullSecrets", "serviceAccountName")
CACHE_DB_FIELDS = ("port",)  # the cache's pods are told the shards' port
CACHE_IGNORED = ("replicas",)  # a count, not a shape
# Recorded on a child made before inputs were, whose spec has changed since: it matches no spec.
SUPERSEDED = "superseded"
# The status field that remembers, while a child without a record may lag an edit, the generation it matches.
UNRECORDED_GENERATION = "unrecordedGeneration"


def inputs(spec: ShardDBSpec, component: str) -> str:
    """A short hash of what shapes a component's pods, as the user wrote it.

    Values equal to their default are left out, so a release that adds a field (or a CRD
    that defaults one) changes no hash.
    """
    written = spec.model_dump(by_alias=True, exclude_defaults=True, mode="json")
    if component == "db":
        shape = {key: written[key] for key in (*DB_FIELDS, *MEMBER_FIELDS) if key in written}
        if "backup" in shape:
            shape["backup"] = {key: value for key, value in shape["backup"].items() if key not in BACKUP_IGNORED}
    else:
        shape = {key: written[key] for key in CACHE_FIELDS if key in written}
        cache = {key: value for key, value in shape.get("cache", {}).items() if key not in CACHE_IGNORED}
        shape["cache"] = cache
        db = written.get("db", {})
        shape["db"] = {key: db[key] for key in CACHE_DB_FIELDS if key in db}
    text = json.dumps(shape, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Recorded:
    """What a running child says of its template: as stored, as last asked for, and what it was made from."""

    template: dict[str, Any]
    held: dict[str, Any]  # as last asked for where Metacontroller recorded it, else as stored
    asked_before: bool  # ``held`` is Metacontroller's record of the last answer
    inputs: str | None
    epoch: int | None
    applied: str | None


@dataclass(frozen=True)
class Choice:
    template: dict[str, Any]
    waiting: bool  # a newer template than the one kept is held back


def choose(
    recorded: Recorded | None, rendered: dict[str, Any], made_from: str, asked: str | None, *, may_lag: bool
) -> Choice:
    """The rendered template where the user asked for a change (or nothing would change); else the one it runs.

    A child made before inputs were recorded counts as made from the current spec unless it
    ``may_lag`` it (the spec was edited since the last answer, or that answer held it back).
    Nothing then says whether the change shaped its pods: the user asked for one, so it rolls
    rather than be lost.
    """
    if recorded is None:
        return Choice(rendered, waiting=False)
    # Nothing to write: Metacontroller merges against its record of the last answer, so a key the
    # rendering no longer has would be removed from the running template (and every pod restarted).
    unchanged = recorded.held == rendered if recorded.asked_before else contains(recorded.template, rendered)
    if unchanged:
        return Choice(rendered, waiting=False)
    reshaped = recorded.inputs != made_from if recorded.inputs is not None else may_lag
    requested = asked is not None and asked != recorded.applied
    overdue = (recorded.epoch if recorded.epoch is not None else 1) < EPOCH
    if reshaped or requested or overdue:
        return Choice(rendered, waiting=False)
    return Choice(recorded.held, waiting=True)
