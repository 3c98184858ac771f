"""Kubernetes objects for a decision, as apply-style desired state.

Only fields we own are set: no status, uid, resourceVersion or defaults the API
server fills in, so Metacontroller's in-place updates touch exactly these.
"""

from __future__ import annotations

from typing import Any

from . import last_applied, names, pod_templates, template_choice
from .last_applied import contains
from .lifecycle import Decision
from .snapshot import Snapshot, TemplateRecord
from .spec import ShardDBSpec

Obj = dict[str, Any]


def children(snap: Snapshot, decision: Decision) -> list[Obj]:
    """The full desired set; anything observed and not listed here would be deleted."""
    out = [service(snap.name, snap.spec.db.port), statefulset(snap.name, decision)]
    if names.DB in decision.budgets:
        out.append(budget(snap.name, names.DB))
    out.extend(seed_job(snap.name, snap.namespace, snap.spec, shards) for shards in decision.seed_jobs)
    if decision.cache_replicas is not None:
        out.append(cache_deployment(snap.name, decision.cache_replicas, decision.cache_template, decision.cache_made))
    if decision.cache_service:
        out.append(cache_service(snap.name, snap.spec.cache.port))
    if names.CACHE in decision.budgets:
        out.append(budget(snap.name, names.CACHE))
    return out


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


def seed_job(parent: str, namespace: str, spec: ShardDBSpec, shards: int) -> Obj:
    """Seeds data and sets up replication for ``shards`` shards; Jobs are never updated."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(names.seed_job_name(parent, shards), parent, names.SEED),
        "spec": {
            "activeDeadlineSeconds": spec.seed_timeout_seconds,
            "backoffLimit": 6,
            "template": pod_templates.seed_template(parent, namespace, spec, shards),
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
