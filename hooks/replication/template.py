"""A member's pod template: today's shard pod made a Patroni member of one shard.

Built below the decision, as ``hooks/pod_templates.py`` is: the lifecycle compares it with what each
shard runs (``template_choice``) before ``objects`` renders the StatefulSet around it.
"""

from __future__ import annotations

import json
from typing import Any

from .. import names
from ..backup import member as backup_member
from ..backup import restore as backup_restore
from ..spec import ShardDBSpec
from . import incluster, stop, tls
from .config import (
    CONFIG_ANNOTATION,
    CONFIG_DIR,
    CONFIG_FILE,
    CONFIG_VOLUME,
    DOWNWARD_API_DEFAULT_MODE,
    PATRONI_PORT,
    PATRONI_PORT_NAME,
    PatroniConfig,
    slot_wal_keep_mb,
)
from .shape import Plan

Obj = dict[str, Any]

HOSTNAME_TOPOLOGY = "kubernetes.io/hostname"


def member_selector(parent: str, shard: int) -> dict[str, str]:
    """The members of one shard: its StatefulSet's selector, Patroni's scope and its budget's."""
    return {**names.selector_labels(parent, names.DB), names.SCOPE_LABEL: names.shard_name(parent, shard)}


def anti_affinity(parent: str, shard: int, affinity: Obj | None) -> Obj:
    """The user's affinity, plus: no two members of a shard on one node (required, not preferred).

    Required, because a standby on its primary's node is lost with it; a shard with more members
    than schedulable nodes waits, and says so, rather than run without its guarantee.
    """
    out: Obj = json.loads(json.dumps(affinity or {}))
    term = {"labelSelector": {"matchLabels": member_selector(parent, shard)}, "topologyKey": HOSTNAME_TOPOLOGY}
    anti = out.setdefault("podAntiAffinity", {})
    anti["requiredDuringSchedulingIgnoredDuringExecution"] = [
        term,
        *anti.get("requiredDuringSchedulingIgnoredDuringExecution", []),
    ]
    return out


def _field_env(name: str, path: str) -> Obj:
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}}


def patroni_env(port: int) -> list[Obj]:
    """What each member tells Patroni of itself; the pod IP first, as the addresses refer to it."""
    ip = "$(PATRONI_KUBERNETES_POD_IP)"
    return [
        {"name": "PATRONI_CONFIG_FILE", "value": f"{CONFIG_DIR}/{CONFIG_FILE}"},
        _field_env("PATRONI_NAME", "metadata.name"),
        _field_env("PATRONI_KUBERNETES_NAMESPACE", "metadata.namespace"),
        _field_env("PATRONI_KUBERNETES_POD_IP", "status.podIP"),
        {"name": "PATRONI_RESTAPI_CONNECT_ADDRESS", "value": f"{ip}:{PATRONI_PORT}"},
        {"name": "PATRONI_POSTGRESQL_CONNECT_ADDRESS", "value": f"{ip}:{port}"},
        # Patroni takes every PATRONI_ variable out of its environment as it reads it, so the role-change
        # callback it runs (``callback``) and the stop order (``stop``) read the member's name and namespace
        # from these.
        _field_env(incluster.MEMBER_ENV, "metadata.name"),
        _field_env(incluster.NAMESPACE_ENV, "metadata.namespace"),
    ]


def _http_probe(path: str, period: int, failures: int) -> Obj:
    """Patroni's REST API serves HTTPS only; the kubelet checks no certificate."""
    return {
        "httpGet": {"path": path, "port": PATRONI_PORT_NAME, "scheme": "HTTPS"},
        "periodSeconds": period,
        "failureThreshold": failures,
    }


# The primary, or the standby Patroni names synchronous: the members that hold every acknowledged commit.
ONLY_COMMIT_HOLDERS = "/read-only-sync"
# The primary, or any standby that runs (Patroni's own readiness).
RUNNING = "/readiness"


def readiness_path(plan: Plan) -> str:
    """What makes a member Ready, and so what the shard's budget counts: with two synchronous members, only the
    primary and its synchronous standby.

    A drain evicts the primary only while the budget counts another member. A standby made anew
    streams a few seconds before Patroni names it synchronous; Ready on ``/readiness`` then, it
    let a drain evict the primary with no member that could take over (measured: the shard had no
    primary until a person uncordoned the node). On ``/read-only-sync`` it is Ready only once it
    holds every commit, so the eviction waits for that. With three members only one standby is
    synchronous, and the third would never be Ready: the budget would refuse every eviction, so
    three members keep ``/readiness``; so do asynchronous shards, which have no synchronous standby.
    """
    return ONLY_COMMIT_HOLDERS if plan.synchronous_standbys and plan.members == 2 else RUNNING


def member_template(parent: str, shard: int, spec: ShardDBSpec, plan: Plan, base: Obj) -> Obj:
    """Today's shard pod template (``base``, from ``pods.db_template``) made a Patroni member of ``shard``.

    Patroni's REST API decides readiness (``readiness_path``) and liveness (``/liveness``: its loop
    runs). The default drain is left out: it would end the walsenders as client sessions, and
    Patroni's own shutdown on SIGTERM is the drain; a ``drainCommand`` the user wrote runs inside the
    stop order (``stop``), which keeps a whole shard's primary for last.
    """
    template: Obj = json.loads(json.dumps(base))
    config = PatroniConfig(
        parent,
        shard,
        spec.db.port,
        spec.db.data_path,
        plan.synchronous,
        slot_wal_keep_mb(spec),
        plan.strict,
        spec.backup,
        spec.restore,
    )
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**meta.get("labels", {}), names.SCOPE_LABEL: names.shard_name(parent, shard)}
    meta["annotations"] = {**meta.get("annotations", {}), CONFIG_ANNOTATION: config.as_text()}
    pod = template["spec"]
    pod["serviceAccountName"] = spec.service_account_name or names.account_name(parent)
    pod["affinity"] = anti_affinity(parent, shard, spec.db.affinity)
    container = next(each for each in pod["containers"] if each["name"] == names.DB)
    taken = {var["name"] for var in container.get("env", [])}
    store_env, store_mounts, store_volumes = _stores(spec)
    ours = [*patroni_env(spec.db.port), *store_env]
    container["env"] = [var for var in ours if var["name"] not in taken] + container.get("env", [])
    container["ports"] = [
        *container.get("ports", []),
        {"name": PATRONI_PORT_NAME, "containerPort": PATRONI_PORT, "protocol": "TCP"},
    ]
    container["readinessProbe"] = _http_probe(readiness_path(plan), 5, 3)
    container["livenessProbe"] = {**_http_probe("/liveness", 10, 6), "initialDelaySeconds": 30}
    container["lifecycle"] = stop.pre_stop(parent, shard, spec.drain_command)
    container["volumeMounts"] = [
        *container.get("volumeMounts", []),
        {"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True},
        tls.mount(),
        *store_mounts,
    ]
    # The member's TLS key and certificate, made before PostgreSQL or Patroni starts (``tls``).
    pod["initContainers"] = [*pod.get("initContainers", []), tls.init_container(container)]
    annotation = f"metadata.annotations['{CONFIG_ANNOTATION}']"
    pod["volumes"] = [
        *pod.get("volumes", []),
        {
            "name": CONFIG_VOLUME,
            "downwardAPI": {
                "items": [{"path": CONFIG_FILE, "fieldRef": {"apiVersion": "v1", "fieldPath": annotation}}],
                "defaultMode": DOWNWARD_API_DEFAULT_MODE,
            },
        },
        tls.volume(),
        *store_volumes,
    ]
    return template


def _stores(spec: ShardDBSpec) -> tuple[list[Obj], list[Obj], list[Obj]]:
    """The env, mounts and volumes of the object stores a member reaches: its own archive's, and a restore's source."""
    env, mounts, volumes = [], [], []
    if spec.backup is not None:
        env += backup_member.env(spec.backup)
        mounts += backup_member.mounts(spec.backup)
        volumes += backup_member.volumes(spec.backup)
    if spec.restore is not None:
        env += backup_restore.env(spec.restore)
        mounts += backup_restore.mounts(spec.restore)
        volumes += backup_restore.volumes(spec.restore)
    return env, mounts, volumes
