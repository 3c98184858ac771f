"""Kubernetes objects for a decision, as apply-style desired state.

Only fields we own are set: no status, uid, resourceVersion or defaults the API
server fills in, so Metacontroller's in-place updates touch exactly these.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from . import clock, last_applied, names, pod_templates, scripts, template_choice
from .backup import cronjob
from .backup import restore_points as backup_restore_points
from .backup.runs import BaseBackups
from .backup.spec import Backup
from .last_applied import contains
from .lifecycle import Decision
from .replication import cleanup, marks, objects, rollout, shape
from .replication.health import MemberState, ShardHealth
from .snapshot import Snapshot
from .spec import ShardDBSpec
from .workloads import TemplateRecord

Obj = dict[str, Any]


def children(snap: Snapshot, decision: Decision) -> list[Obj]:
    """The full desired set; anything observed and not listed here would be deleted.

    With members, Patroni's objects and one StatefulSet (and budget) per shard replace today's
    ``<name>-db`` StatefulSet and budget: an eviction refuses a pod two budgets cover. The
    headless ``<name>-db`` Service stays, as always: it still publishes every shard pod (every
    member), which monitoring and the cache's ``SHARDDB_SERVICE`` name.
    """
    out = [service(snap.name, snap.spec.db.port)]
    if decision.members:
        out += members(snap, decision)
    else:
        out.append(statefulset(snap.name, decision))
        if names.DB in decision.budgets:
            out.append(budget(snap.name, names.DB))
    hosts = names.primary_hosts if decision.members else None
    out.extend(
        seed_job(snap.name, snap.namespace, snap.spec, shards, hosts(snap.name, shards) if hosts else None)
        for shards in decision.seed_jobs
    )
    if decision.cache_replicas is not None:
        out.append(cache_deployment(snap.name, decision.cache_replicas, decision.cache_template, decision.cache_made))
    if decision.cache_service:
        out.append(cache_service(snap.name, snap.spec.cache.port))
    if names.CACHE in decision.budgets:
        out.append(budget(snap.name, names.CACHE))
    if decision.patroni_cleanup:
        out += cleanup.children(snap.name, snap.namespace, snap.spec)
    if decision.member_rollout and decision.replication is not None:
        templates = [each.template for each in decision.shard_sets]
        out += rollout.children(snap.name, snap.namespace, snap.spec, decision.shards, decision.replication, templates)
    if decision.base_backups and snap.spec.backup is not None:
        if decision.backup_schedule is not None:
            backup = snap.spec.backup.model_copy(update={"schedule": decision.backup_schedule})
            out.append(base_backups(snap.name, snap.spec, backup, decision.shards))
        out.append(restore_points(snap.name, snap.spec, decision.shards))
    return out


def base_backups(parent: str, spec: ShardDBSpec, backup: Backup, shards: int) -> Obj:
    """The base backups' CronJob, its Job's pod made as the other script Jobs' are (``scripts``)."""
    script = cronjob.script(parent, backup, shards, spec.db.port)
    env = cronjob.env(backup, spec.db.port, spec.db.env)
    pod = scripts.script_pod(parent, spec, names.BACKUP, script, env, interpreter=("sh", "-c"))
    return cronjob.cronjob(parent, backup, pod)


def restore_points(parent: str, spec: ShardDBSpec, shards: int) -> Obj:
    """The restore points' CronJob, never scheduled: its Jobs, run by hand, pause writes and mark every shard."""
    the_env = backup_restore_points.env(spec.db.port, spec.db.env)
    program = backup_restore_points.PROGRAM
    pod = scripts.script_pod(
        parent, spec, backup_restore_points.SUFFIX, program, the_env, interpreter=("python3", "-c")
    )
    return backup_restore_points.restore_points(parent, shards, pod)


def members(snap: Snapshot, decision: Decision) -> list[Obj]:
    """Patroni's account and role, and each shard's Services, budget and StatefulSet, as the lifecycle decided them."""
    plan = decision.replication
    if plan is None:
        return []  # refused before any shard existed: none is made
    sets = [
        objects.ShardSet(
            each.shard,
            each.template,
            each.replicas,
            tuple(_shard_records(decision, each.made).items()),
            each.claim_templates,
        )
        for each in decision.shard_sets
    ]
    claims = claim_templates(snap.name, decision)
    return objects.children(
        snap.name, snap.namespace, snap.spec, plan, sets, claims, budgets=names.DB in decision.budgets
    )


def _shard_records(decision: Decision, record: TemplateRecord) -> dict[str, str]:
    """What each shard's StatefulSet remembers, as today's does: the seed, and what its template was made from."""
    return {names.SEEDED_SHARDS_ANNOTATION: str(decision.seeded_shards), **made(record)}


SYSTEM_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


def frozen(observed: list[Obj]) -> list[Obj]:
    """Every observed child answered as it is, so Metacontroller neither deletes nor updates any.

    The object last asked for (its last-applied record) is exactly what makes the merge a
    no-op, as long as the stored child still carries it; a child edited since, or without a
    record, is answered as stored (minus what the server owns), so an edit is kept too.
    """
    out = []
    for child in observed:
        meta = child.get("metadata") or {}
        last = last_applied.read((meta.get("annotations") or {}).get(last_applied.LAST_APPLIED))
        if last is not None and last.get("kind") == child.get("kind") and contains(child, last):
            out.append(last)
            continue
        kept = {key: value for key, value in child.items() if key != "status"}
        kept["metadata"] = {key: value for key, value in meta.items() if key not in SYSTEM_METADATA}
        out.append(kept)
    return out


def status(decision: Decision, conditions: list[Obj]) -> Obj:
    out: Obj = {
        "phase": decision.phase.value,
        "shards": decision.shards,
        "readyShards": decision.ready_shards,
        "registeredShards": decision.registered_shards,
        "seededShards": decision.seeded_shards,
        "cacheReadyReplicas": decision.cache_ready_replicas,
        "cacheReady": decision.cache_ready,
        "updatedShards": decision.updated_shards,
        "updateRevision": decision.update_revision,
        "cacheUpdatedReplicas": decision.cache_updated_replicas,
        "newerTemplates": ", ".join(decision.newer_templates) or "none",
        "conditions": conditions,
    }
    if decision.unrecorded_generation is not None:
        out[template_choice.UNRECORDED_GENERATION] = decision.unrecorded_generation
    if decision.base_backup_runs is not None:
        out["backup"] = backup_status(decision.base_backup_runs, decision.base_backup_due)
    if decision.replication is not None and decision.replication.patroni:
        out["replication"] = replication_status(decision.replication, decision.shard_health)
    return out


def backup_status(runs: BaseBackups, due: datetime | None) -> Obj:
    """What the base backups' CronJob records, and when the next run is due, each only once it is known."""
    out: Obj = {}
    if runs.scheduled is not None:
        out["lastScheduleTime"] = clock.rfc3339(runs.scheduled)
    if runs.succeeded is not None:
        out["lastSuccessfulTime"] = clock.rfc3339(runs.succeeded)
    if due is not None:
        out["nextScheduleTime"] = clock.rfc3339(due)
    if runs.running:
        out["running"] = True
    return out


def replication_status(plan: shape.Plan, health: tuple[tuple[int, ShardHealth], ...]) -> Obj:
    """Per shard with members, who Patroni made primary, its sync standby, who streams, and why it is (not) ready.

    Empty fields are left out, so the stored status (the CRD declares each) equals the answer.
    """
    shards = []
    for shard, each in health:
        entry: Obj = {"shard": shard, "ready": each.ready, "reason": each.reason, "message": each.message}
        if each.primary is not None:
            entry["primary"] = each.primary
        if each.sync_standby is not None:
            entry["syncStandby"] = each.sync_standby
        if each.streaming:
            entry["streaming"] = list(each.streaming)
        if each.members:
            entry["members"] = [_member_status(member) for member in each.members]
        if each.last_failover is not None:
            entry["lastFailover"] = _failover_status(each.last_failover)
        shards.append(entry)
    shape = {"members": plan.members, "synchronous": plan.synchronous, "shards": shards}
    return {**shape, "strict": True} if plan.strict else shape


def _member_status(member: MemberState) -> Obj:
    """What Patroni says of one member; what it has not said is left out, never guessed."""
    out: Obj = {"name": member.name}
    fields = {
        "role": member.role,
        "state": member.state,
        "replicationState": member.replication_state,
        "timeline": member.timeline,
        "receiveLagMiB": _mib(member.receive_lag),
        "replayLagMiB": _mib(member.replay_lag),
    }
    out.update((key, value) for key, value in fields.items() if value is not None)
    return out


MIB = 1024 * 1024


def _mib(lag: int | None) -> int | None:
    """Whole MiB, rounded down: a standby's position moves with every commit, and a status in bytes would be
    written anew at every Patroni loop of a busy shard; in MiB it moves only when a standby falls behind."""
    return None if lag is None else lag // MIB


def _failover_status(failover: marks.Failover) -> Obj:
    out: Obj = {"timeline": failover.timeline, "reason": failover.reason}
    if failover.at is not None:
        out["at"] = clock.rfc3339(failover.at)
    if failover.new_primary is not None:
        out["newPrimary"] = failover.new_primary
    return out


def _meta(name: str, parent: str, component: str, annotations: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": names.labels(parent, component)}
    if annotations:
        meta["annotations"] = annotations
    return meta


def service(parent: str, port: int) -> Obj:
    """Headless: DNS publishes one record per ready shard, which is our discovery."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.db_name(parent), parent, names.DB),
        "spec": {
            "clusterIP": "None",
            "selector": names.selector_labels(parent, names.DB),
            "ports": [{"name": names.DB, "port": port, "targetPort": names.DB, "protocol": "TCP"}],
        },
    }


def cache_service(parent: str, port: int) -> Obj:
    """Where clients reach the cache: one stable virtual IP over its ready pods."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.cache_name(parent), parent, names.CACHE),
        "spec": {
            "type": "ClusterIP",
            "selector": names.selector_labels(parent, names.CACHE),
            "ports": [{"name": "cache", "port": port, "targetPort": "cache", "protocol": "TCP"}],
        },
    }


def budget(parent: str, component: str) -> Obj:
    """At most one pod of ``component`` evicted at a time: a node drain never takes two shards."""
    name = names.db_name(parent) if component == names.DB else names.cache_name(parent)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(name, parent, component),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": names.selector_labels(parent, component)}},
    }


def claim_templates(parent: str, decision: Decision) -> list[Obj]:
    """The shard volume, as the API server stores a claim template (no list-map key: must match whole).

    An existing StatefulSet's templates are immutable and come back exactly as observed.
    """
    if decision.claim_templates:
        return [dict(template) for template in decision.claim_templates]
    claim: Obj = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": decision.storage_size}},
    }
    if decision.storage_class is not None:
        claim["storageClassName"] = decision.storage_class
    claim["volumeMode"] = "Filesystem"
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": pod_templates.DATA_VOLUME, "labels": names.labels(parent, names.DB)},
            "spec": claim,
            "status": {"phase": "Pending"},
        }
    ]


def statefulset(parent: str, decision: Decision) -> Obj:
    db = names.db_name(parent)
    annotations = {names.SEEDED_SHARDS_ANNOTATION: str(decision.seeded_shards), **made(decision.db_made)}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(db, parent, names.DB, annotations),
        "spec": {
            "serviceName": db,
            "replicas": decision.shards,
            "podManagementPolicy": decision.pod_management_policy,
            "selector": {"matchLabels": names.selector_labels(parent, names.DB)},
            "updateStrategy": {"type": "RollingUpdate"},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": decision.db_template,
            "volumeClaimTemplates": claim_templates(parent, decision),
        },
    }


def seed_job(parent: str, namespace: str, spec: ShardDBSpec, shards: int, hosts: str | None = None) -> Obj:
    """Seeds data and sets up replication for ``shards`` shards; Jobs are never updated.

    ``hosts``: where it reaches each shard, when not today's pods (with members: the primary Services).
    """
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(names.seed_job_name(parent, shards), parent, names.SEED),
        "spec": {
            "activeDeadlineSeconds": spec.seed_timeout_seconds,
            "backoffLimit": 6,
            "template": pod_templates.seed_template(parent, namespace, spec, shards, hosts),
        },
    }


def made(record: TemplateRecord) -> dict[str, str]:
    """A child's record of what its pod template was made from (what is unsaid stays unsaid)."""
    out = {}
    if record.inputs is not None:
        out[names.TEMPLATE_INPUTS_ANNOTATION] = record.inputs
    if record.epoch is not None:
        out[names.TEMPLATE_EPOCH_ANNOTATION] = str(record.epoch)
    if record.applied is not None:
        out[names.TEMPLATES_APPLIED_ANNOTATION] = record.applied
    return out


def cache_deployment(parent: str, replicas: int, template: Obj, record: TemplateRecord) -> Obj:
    """The cache; ``template`` is the current one while it waits for the shards to roll first."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(names.cache_name(parent), parent, names.CACHE, made(record)),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": names.selector_labels(parent, names.CACHE)},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": template,
        },
    }
