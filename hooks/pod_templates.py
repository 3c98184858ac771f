"""Pod templates of a ShardDB's workloads: shards, the seed Job and the cache.

Kept apart from the objects that carry them so the lifecycle can ask whether a
template is already rolled out (``applied.contains``) without rendering the rest.
Every optional field is left out when unset, and quantities are written as the
API server stores them, so a stored template contains exactly what is rendered.
"""

from __future__ import annotations

from typing import Any

from . import names, quantity
from .spec import (
    DEFAULT_CACHE_POD_SECURITY_CONTEXT,
    DEFAULT_CONTAINER_SECURITY_CONTEXT,
    DEFAULT_DB_POD_SECURITY_CONTEXT,
    PodFields,
    ShardDBSpec,
)

Obj = dict[str, Any]

DATA_VOLUME = "data"
HOSTNAME_TOPOLOGY = "kubernetes.io/hostname"


def _clone(value: Any) -> Any:
    """A copy of JSON-shaped data (dicts, lists, scalars), so no rendered object shares the spec's."""
    if isinstance(value, dict):
        return {key: _clone(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clone(item) for item in value]
    return value


def _probe(port: str, period: int, failures: int) -> Obj:
    return {"tcpSocket": {"port": port}, "periodSeconds": period, "failureThreshold": failures}


def _env(ours: list[Obj], theirs: list[Obj]) -> list[Obj]:
    """Our variables, then the user's; a user's variable of the same name replaces ours."""
    overridden = {var.get("name") for var in theirs}
    return [var for var in ours if var["name"] not in overridden] + [_clone(var) for var in theirs]


def _resources(resources: Obj | None) -> Obj | None:
    """Requests and limits in the server's spelling (``0.5`` is stored as ``500m``)."""
    if resources is None:
        return None
    out: Obj = _clone(resources)
    for part in ("requests", "limits"):
        if isinstance(out.get(part), dict):
            out[part] = {name: quantity.canonical(value) for name, value in out[part].items()}
    return out


def _spread(parent: str, component: str) -> list[Obj]:
    """A soft spread over nodes: one pod per node where possible, all on one node if that is all there is."""
    return [
        {
            "maxSkew": 1,
            "topologyKey": HOSTNAME_TOPOLOGY,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": names.selector_labels(parent, component)},
        }
    ]


def _metadata(parent: str, component: str, pod: PodFields) -> Obj:
    meta: Obj = {"labels": {**pod.pod_labels, **names.labels(parent, component)}}
    if pod.pod_annotations:
        meta["annotations"] = dict(pod.pod_annotations)
    return meta


def _placement(spec: ShardDBSpec, pod: PodFields, parent: str, component: str, *, spread: bool) -> Obj:
    """Scheduling, identity and pull secrets of a pod; the default spread unless the user placed it."""
    out: Obj = {}
    if spec.service_account_name:
        out["serviceAccountName"] = spec.service_account_name
    if spec.image_pull_secrets:
        out["imagePullSecrets"] = _clone(spec.image_pull_secrets)
    if pod.node_selector:
        out["nodeSelector"] = dict(pod.node_selector)
    if pod.tolerations:
        out["tolerations"] = _clone(pod.tolerations)
    if pod.priority_class_name:
        out["priorityClassName"] = pod.priority_class_name
    if not spread:
        return out
    if pod.affinity:
        out["affinity"] = _clone(pod.affinity)
    if pod.topology_spread_constraints:
        out["topologySpreadConstraints"] = _clone(pod.topology_spread_constraints)
    if not pod.affinity and not pod.topology_spread_constraints:
        out["topologySpreadConstraints"] = _spread(parent, component)
    return out


def _container(name: str, image: str, pod: PodFields, env: list[Obj], **fields: Any) -> Obj:
    container: Obj = {"name": name, "image": image, **fields, "env": _env(env, pod.env)}
    if pod.env_from:
        container["envFrom"] = _clone(pod.env_from)
    resources = _resources(pod.resources)
    if resources:
        container["resources"] = resources
    container["securityContext"] = _clone(pod.security_context or DEFAULT_CONTAINER_SECURITY_CONTEXT)
    return container


def shard_hosts(parent: str, shards: int) -> str:
    """Every shard's stable DNS name, so seed commands never rebuild names themselves."""
    service = names.db_name(parent)
    return " ".join(f"{names.shard_pod_name(parent, ordinal)}.{service}" for ordinal in range(shards))


def db_template(parent: str, spec: ShardDBSpec) -> Obj:
    """A shard: the database on its volume, draining connections before it stops."""
    db = spec.db
    env = [
        {"name": "SHARDDB_NAME", "value": parent},
        {"name": "SHARDDB_SERVICE", "value": names.db_name(parent)},
        {"name": "SHARDDB_PORT", "value": str(db.port)},
        {"name": "SHARDDB_DRAIN_SECONDS", "value": str(spec.drain_grace_period_seconds)},
        {"name": "PGDATA", "value": f"{db.data_path.rstrip('/')}/pgdata"},
    ]
    container = _container(
        names.DB,
        spec.db_image,
        db,
        env,
        ports=[{"name": names.DB, "containerPort": db.port, "protocol": "TCP"}],
        readinessProbe=_probe(names.DB, 5, 3),
        livenessProbe={**_probe(names.DB, 10, 6), "initialDelaySeconds": 30},
        lifecycle={"preStop": {"exec": {"command": spec.drain}}},
        volumeMounts=[{"name": DATA_VOLUME, "mountPath": db.data_path}],
    )
    return {
        "metadata": _metadata(parent, names.DB, db),
        "spec": {
            "terminationGracePeriodSeconds": spec.drain_grace_period_seconds,
            "securityContext": _clone(db.pod_security_context or DEFAULT_DB_POD_SECURITY_CONTEXT),
            **_placement(spec, db, parent, names.DB, spread=True),
            "containers": [container],
        },
    }


def seed_template(parent: str, namespace: str, spec: ShardDBSpec, shards: int, hosts: str | None = None) -> Obj:
    """The seed: runs once, against every shard, with the database image's own clients.

    ``hosts`` replaces each shard pod's DNS name where a shard is not one pod (its primary Service).
    """
    db = spec.db
    env = [
        {"name": "SHARDDB_NAME", "value": parent},
        {"name": "SHARDDB_NAMESPACE", "value": namespace},
        {"name": "SHARDDB_SERVICE", "value": names.db_name(parent)},
        {"name": "SHARDDB_SHARDS", "value": str(shards)},
        {"name": "SHARDDB_PORT", "value": str(db.port)},
        {"name": "SHARDDB_HOSTS", "value": shard_hosts(parent, shards) if hosts is None else hosts},
    ]
    container = _container(names.SEED, spec.db_image, db, env, command=spec.seed)
    container.pop("resources", None)  # the shards' resources are sized for a database, not a client
    return {
        "metadata": _metadata(parent, names.SEED, db),
        "spec": {
            "restartPolicy": "Never",
            "securityContext": _clone(db.pod_security_context or DEFAULT_DB_POD_SECURITY_CONTEXT),
            **_placement(spec, db, parent, names.SEED, spread=False),
            "containers": [container],
        },
    }


def cache_template(parent: str, spec: ShardDBSpec) -> Obj:
    """A cache replica, flushing what it holds before it stops."""
    cache = spec.cache
    env = [
        {"name": "SHARDDB_NAME", "value": parent},
        {"name": "SHARDDB_SERVICE", "value": names.db_name(parent)},
        {"name": "SHARDDB_PORT", "value": str(spec.db.port)},
        {"name": "SHARDDB_CACHE_PORT", "value": str(cache.port)},
    ]
    container = _container(
        names.CACHE,
        cache.image,
        cache,
        env,
        ports=[{"name": names.CACHE, "containerPort": cache.port, "protocol": "TCP"}],
        readinessProbe=_probe(names.CACHE, 5, 3),
        lifecycle={"preStop": {"exec": {"command": spec.flush}}},
    )
    return {
        "metadata": _metadata(parent, names.CACHE, cache),
        "spec": {
            "terminationGracePeriodSeconds": cache.flush_grace_period_seconds,
            "securityContext": _clone(cache.pod_security_context or DEFAULT_CACHE_POD_SECURITY_CONTEXT),
            **_placement(spec, cache, parent, names.CACHE, spread=True),
            "containers": [container],
        },
    }
