"""The objects a ShardDB with members needs, as apply-style desired state: Patroni runs each shard.

Per ShardDB: a ServiceAccount, Role and RoleBinding with only what Patroni's Kubernetes DCS calls.
Per shard: a StatefulSet of its members (as Crunchy's and Zalando's operators run one per cluster:
a rollout, a switchover and a budget are each one shard's, and a shard's members share one headless
Service), a Service reaching only its primary and one for its standbys, and a budget. Patroni's
configuration rides in the member pods' template (an annotation projected as a file), so a change
to it rolls like any other template change and no ConfigMap is ever a child.

Patroni's own ConfigMaps (``<scope>-leader``, ``-config``, ``-sync``, ``-failover``) are Patroni's:
a child of that name would have Metacontroller and Patroni overwrite each other. This module
renders no ConfigMap or Endpoints at all, and ``children`` refuses, as a bug, any object that
Patroni owns. ``hooks/render.py`` calls ``children`` with the sets the lifecycle decided.

Every object follows ``hooks/render.py``'s rules: only fields we own, and in the form the API
server stores them wherever Metacontroller's merge would see a difference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import names
from .replication import (
    FOLLOWER_LABEL_VALUE,
    LEADER_LABEL_VALUE,
    PRIMARY,
    ROLE_LABEL,
    SCOPE_LABEL,
    STANDBY,
    Plan,
    record,
    role_service_name,
    shard_name,
)
from .spec import ShardDBSpec

Obj = dict[str, Any]

PATRONI_VERSION = "4.1.5"
PATRONI_PORT = 8008
PATRONI_PORT_NAME = "patroni"
HOSTNAME_TOPOLOGY = "kubernetes.io/hostname"
# A RollingUpdate replaces the highest ordinal first, which may be the primary, and then the new
# primary again: two hand-overs. OnDelete leaves the order to the rollout Job.
ON_DELETE = "OnDelete"

# Patroni's configuration, JSON (which is YAML) in a pod template annotation, projected by the
# downward API as the file the image's entrypoint hands to Patroni (PATRONI_CONFIG_FILE).
CONFIG_ANNOTATION = f"{names.GROUP}/patroni-config"
CONFIG_VOLUME = "patroni-config"
CONFIG_DIR = "/etc/patroni"
CONFIG_FILE = "patroni.yml"
# The API server's defaults for a downward API volume and an object field selector, written out so
# the stored template equals the rendered one.
DOWNWARD_API_DEFAULT_MODE = 0o644

# Patroni's kubernetes DCS with ConfigMaps keeps a scope's state in <scope>-<suffix>: the leader
# lock, the cluster config (its history and initialize key are annotations of it), the synchronous
# state and a requested switchover. "history" is a key of its own in the other DCSs; reserved too.
PATRONI_OWNED_SUFFIXES = ("leader", "config", "sync", "failover", "history")

# Timing (seconds). Patroni raises a ttl under 20 to 20 and keeps loop_wait + 2 * retry_timeout
# <= ttl, so a primary that loses the API server demotes itself before its lock can expire. The
# floor ttl and a 5 s loop bound a lost node's failover at ttl + loop_wait (25 s) rather than the
# 40 s of Patroni's 30/10/10, for one leader-lock patch per shard every 5 s.
TTL = 20
LOOP_WAIT = 5
RETRY_TIMEOUT = 7
# A standby more than this far behind (bytes) is not promoted on a failover.
MAXIMUM_LAG_ON_FAILOVER = 1024 * 1024
SUPERUSER = "postgres"
REPLICATION_USER = "replicator"

# What Patroni's kubernetes DCS calls, read from patroni/dcs/kubernetes.py (4.1): on ConfigMaps it
# lists and watches them (one list call with watch=true), reads the leader one, creates and patches
# (never updates with PUT, never deletes one); ``patronictl remove`` would delete them by collection,
# which the hooks never need, so it is not granted. On pods it lists, watches and patches its own
# (the role label and the status annotation). With use_endpoints: false it touches no Endpoints and
# no Service.
RBAC_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("configmaps", ("create", "get", "list", "patch", "watch")),
    ("pods", ("list", "patch", "watch")),
)


def patroni_owned(scope: str) -> frozenset[str]:
    """The names Patroni itself writes for ``scope``: never a child's."""
    return frozenset(f"{scope}-{suffix}" for suffix in PATRONI_OWNED_SUFFIXES)


def account_name(parent: str) -> str:
    """The ServiceAccount, Role and RoleBinding Patroni runs as, one set per ShardDB."""
    return f"{parent}-patroni"


def member_selector(parent: str, shard: int) -> dict[str, str]:
    """The members of one shard: its StatefulSet's selector, Patroni's scope and its budget's."""
    return {**names.selector_labels(parent, names.DB), SCOPE_LABEL: shard_name(parent, shard)}


@dataclass(frozen=True)
class PatroniConfig:
    """What Patroni is told in every member of one shard; the pod-specific and secret parts come from its env.

    The pod's name, namespace and IP come from the downward API (PATRONI_NAME,
    PATRONI_KUBERNETES_NAMESPACE, PATRONI_KUBERNETES_POD_IP), and the passwords from the user's
    Secret through ``spec.db.env`` (PATRONI_SUPERUSER_PASSWORD, PATRONI_REPLICATION_PASSWORD):
    Patroni's environment overrides its file, so no secret is ever in a template.
    """

    parent: str
    shard: int
    port: int
    data_path: str
    synchronous: bool

    @property
    def scope(self) -> str:
        return shard_name(self.parent, self.shard)

    def as_dict(self) -> Obj:
        data = self.data_path.rstrip("/")
        return {
            "scope": self.scope,
            "kubernetes": {
                # ConfigMaps: Endpoints are deprecated since Kubernetes 1.33; Patroni 4.1 has no Leases.
                # No ``ports``: Patroni writes them only into Endpoints.
                "use_endpoints": False,
                "labels": names.selector_labels(self.parent, names.DB),
                "scope_label": SCOPE_LABEL,
                "role_label": ROLE_LABEL,
                "leader_label_value": LEADER_LABEL_VALUE,
                "follower_label_value": FOLLOWER_LABEL_VALUE,
            },
            "restapi": {"listen": f"0.0.0.0:{PATRONI_PORT}"},
            "bootstrap": {
                # Read once, when a shard's cluster is first bootstrapped: hence the refusal to change it later.
                "dcs": {
                    "ttl": TTL,
                    "loop_wait": LOOP_WAIT,
                    "retry_timeout": RETRY_TIMEOUT,
                    "maximum_lag_on_failover": MAXIMUM_LAG_ON_FAILOVER,
                    "synchronous_mode": self.synchronous,
                    # Not strict: with its only standby gone, the primary drops it from
                    # synchronous_standby_names and writes go on, rather than hang until a person
                    # acts (cloudnative-pg#5257). Only the synchronous standby is ever promoted.
                    "synchronous_mode_strict": False,
                    # The API server unreachable but every member answering Patroni's REST API: the
                    # primary keeps serving instead of demoting after retry_timeout. A primary that
                    # cannot reach its standby either still demotes, so it stays fenced.
                    "failsafe_mode": True,
                    "postgresql": {"use_pg_rewind": True, "use_slots": True},
                },
                # Checksums let pg_rewind bring an old primary back as a standby.
                "initdb": [{"encoding": "UTF8"}, "data-checksums"],
            },
            "postgresql": {
                "listen": f"0.0.0.0:{self.port}",
                "data_dir": f"{data}/pgdata",
                # On the volume: the root filesystem may be read-only.
                "pgpass": f"{data}/pgpass",
                "authentication": {
                    "superuser": {"username": SUPERUSER},
                    "replication": {"username": REPLICATION_USER},
                },
                # Trust on the pod's own socket only (as the official image does, and as the image
                # recipe's Patroni tests ran); every address needs a password.
                "pg_hba": [
                    "local all all trust",
                    f"host replication {REPLICATION_USER} all scram-sha-256",
                    "host all all all scram-sha-256",
                ],
            },
        }

    def as_text(self) -> str:
        """JSON, which Patroni reads as YAML; keys sorted, so the template is the same bytes every time."""
        return json.dumps(self.as_dict(), indent=2, sort_keys=True)


def _meta(
    name: str, parent: str, extra: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> Obj:
    meta: Obj = {"name": name, "labels": {**names.labels(parent, names.DB), **(extra or {})}}
    if annotations:
        meta["annotations"] = annotations
    return meta


def service_account(parent: str) -> Obj:
    """The identity Patroni talks to the API server as, unless ``spec.serviceAccountName`` names the user's."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(account_name(parent), parent)}


def role(parent: str) -> Obj:
    """The least Patroni needs, in the ShardDB's namespace only."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(account_name(parent), parent),
        "rules": [{"apiGroups": [""], "resources": [resource], "verbs": list(verbs)} for resource, verbs in RBAC_RULES],
    }


def role_binding(parent: str, namespace: str, spec: ShardDBSpec) -> Obj:
    """The Role, granted to the account the member pods run as (the user's, when the spec names one)."""
    subject = spec.service_account_name or account_name(parent)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(account_name(parent), parent),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account_name(parent)},
        "subjects": [{"kind": "ServiceAccount", "name": subject, "namespace": namespace}],
    }


def _db_ports(port: int) -> list[Obj]:
    return [{"name": names.DB, "port": port, "targetPort": names.DB, "protocol": "TCP"}]


def members_service(parent: str, shard: int, port: int) -> Obj:
    """Headless, the StatefulSet's serviceName: each member's stable DNS name within its shard."""
    scope = {SCOPE_LABEL: shard_name(parent, shard)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(shard_name(parent, shard), parent, scope),
        "spec": {"clusterIP": "None", "selector": member_selector(parent, shard), "ports": _db_ports(port)},
    }


def role_service(parent: str, shard: int, port: int, role_name: str) -> Obj:
    """``<shard>-primary`` selects the pod Patroni labels leader, ``<shard>-standby`` those it labels replica.

    Patroni moves the label on a switchover or failover, so the Service follows the primary
    without the hooks ever deciding who it is.
    """
    value = LEADER_LABEL_VALUE if role_name == PRIMARY else FOLLOWER_LABEL_VALUE
    scope = {SCOPE_LABEL: shard_name(parent, shard)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(role_service_name(parent, shard, role_name), parent, scope),
        "spec": {
            "type": "ClusterIP",
            "selector": {**member_selector(parent, shard), ROLE_LABEL: value},
            "ports": _db_ports(port),
        },
    }


def shard_budget(parent: str, shard: int) -> Obj:
    """One member of a shard evicted at a time, so a drain never takes a shard's primary and its standby together.

    Evicting the primary stops its Patroni (SIGTERM): it shuts PostgreSQL down and, once a standby
    has the shutdown checkpoint, releases the leader lock, so the synchronous standby takes over
    without waiting out the ttl and without losing a commit. Only one budget may cover a pod (the
    eviction API refuses more), so a ShardDB with members has these instead of ``<name>-db``'s.
    """
    scope = {SCOPE_LABEL: shard_name(parent, shard)}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(shard_name(parent, shard), parent, scope),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": member_selector(parent, shard)}},
    }


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
    ]


def _http_probe(path: str, period: int, failures: int) -> Obj:
    return {
        "httpGet": {"path": path, "port": PATRONI_PORT_NAME, "scheme": "HTTP"},
        "periodSeconds": period,
        "failureThreshold": failures,
    }


def member_template(parent: str, shard: int, spec: ShardDBSpec, plan: Plan, base: Obj) -> Obj:
    """Today's shard pod template (``base``, from ``pods.db_template``) made a Patroni member of ``shard``.

    Patroni's REST API decides readiness (``/readiness``: the leader, or a standby that streams)
    and liveness (``/liveness``: its loop runs). The default drain is left out: it would end the
    walsenders as client sessions, and Patroni's own shutdown on SIGTERM is the drain; a
    ``drainCommand`` the user wrote is kept.
    """
    template: Obj = json.loads(json.dumps(base))
    config = PatroniConfig(parent, shard, spec.db.port, spec.db.data_path, plan.synchronous)
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**meta.get("labels", {}), SCOPE_LABEL: shard_name(parent, shard)}
    meta["annotations"] = {**meta.get("annotations", {}), CONFIG_ANNOTATION: config.as_text()}
    pod = template["spec"]
    pod["serviceAccountName"] = spec.service_account_name or account_name(parent)
    pod["affinity"] = anti_affinity(parent, shard, spec.db.affinity)
    container = next(each for each in pod["containers"] if each["name"] == names.DB)
    taken = {var["name"] for var in container.get("env", [])}
    container["env"] = [var for var in patroni_env(spec.db.port) if var["name"] not in taken] + container.get("env", [])
    container["ports"] = [
        *container.get("ports", []),
        {"name": PATRONI_PORT_NAME, "containerPort": PATRONI_PORT, "protocol": "TCP"},
    ]
    container["readinessProbe"] = _http_probe("/readiness", 5, 3)
    container["livenessProbe"] = {**_http_probe("/liveness", 10, 6), "initialDelaySeconds": 30}
    if spec.drain_command is None:
        container.pop("lifecycle", None)
    container["volumeMounts"] = [
        *container.get("volumeMounts", []),
        {"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True},
    ]
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
    ]
    return template


def shard_statefulset(
    parent: str,
    shard: int,
    plan: Plan,
    template: Obj,
    claim_templates: list[Obj],
    *,
    replicas: int | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    """One shard's members; ``replicas`` below ``plan.members`` only for the teardown, which scales to zero.

    ``template`` is the member template the lifecycle keeps (``member_template``, or the one last
    applied); ``claim_templates`` are today's shard volume, and an existing StatefulSet's as observed.
    The shape it was made with is recorded on it (``replication.record``), for the refusals.
    """
    name = shard_name(parent, shard)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(name, parent, {SCOPE_LABEL: name}, {**(annotations or {}), **record(plan)}),
        "spec": {
            "serviceName": name,
            "replicas": plan.members if replicas is None else replicas,
            # Members start together; Patroni's initialize key lets exactly one bootstrap the cluster.
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": member_selector(parent, shard)},
            # Pods change only when the rollout Job evicts them (``hooks/patroni_rollout.py``): the
            # standbys first, then the primary, so a rollout moves each shard's primary once.
            "updateStrategy": {"type": ON_DELETE},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": template,
            "volumeClaimTemplates": [json.loads(json.dumps(claim)) for claim in claim_templates],
        },
    }


# The kinds this module renders: never a ConfigMap or Endpoints, the kinds Patroni keeps its state in.
RENDERED_KINDS = frozenset({"ServiceAccount", "Role", "RoleBinding", "Service", "PodDisruptionBudget", "StatefulSet"})


class PatroniObjectError(AssertionError):
    """A child would be one of Patroni's own objects: a bug, never an answer."""


@dataclass(frozen=True)
class ShardSet:
    """One shard's StatefulSet as the lifecycle decided it.

    ``template``: the member template to run (``member_template``, or the one it keeps);
    ``replicas``: None asks for ``plan.members``, a teardown asks for 0; ``annotations``: its
    records (seed memory, what the template was made from); ``claim_templates``: an existing
    StatefulSet's, as observed (immutable), else empty for the fresh ones.
    """

    shard: int
    template: Obj
    replicas: int | None = None
    annotations: tuple[tuple[str, str], ...] = ()
    claim_templates: tuple[Obj, ...] = ()


def children(
    parent: str,
    namespace: str,
    spec: ShardDBSpec,
    plan: Plan,
    sets: list[ShardSet],
    claim_templates: list[Obj],
    *,
    budgets: bool = True,
) -> list[Obj]:
    """Every object a ShardDB with members owns besides today's (the headless Service, the seed Job, the cache).

    ``claim_templates`` are a new shard's volume; ``budgets`` False in a teardown, whose
    budgets go before the shards drain, as today's do.
    """
    if not plan.patroni:
        return []
    out = [] if spec.service_account_name else [service_account(parent)]
    out += [role(parent), role_binding(parent, namespace, spec)]
    for each in sets:
        shard = each.shard
        out += [
            members_service(parent, shard, spec.db.port),
            role_service(parent, shard, spec.db.port, PRIMARY),
            role_service(parent, shard, spec.db.port, STANDBY),
        ]
        if budgets:
            out.append(shard_budget(parent, shard))
        claims = list(each.claim_templates) or claim_templates
        out.append(
            shard_statefulset(
                parent, shard, plan, each.template, claims, replicas=each.replicas, annotations=dict(each.annotations)
            )
        )
    never_patronis(parent, max((each.shard + 1 for each in sets), default=0), out)
    return out


def never_patronis(parent: str, shards: int, objects: list[Obj]) -> None:
    """Raise if any object is of a kind Patroni keeps state in, or bears one of its names."""
    owned = frozenset().union(*(patroni_owned(shard_name(parent, shard)) for shard in range(shards)))
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] not in RENDERED_KINDS or name in owned:
            raise PatroniObjectError(f"{obj['kind']} {name} is Patroni's own, never a child")
