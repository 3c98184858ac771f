"""The objects a ShardDB with members needs, as apply-style desired state: Patroni runs each shard.

Per ShardDB: a ServiceAccount, Role and RoleBinding with only what Patroni's Kubernetes DCS calls, on
the names it calls them for. Per shard: a NetworkPolicy closing Patroni's REST API to all but the
shard's members, a StatefulSet of its members (as Crunchy's and Zalando's operators run one per cluster:
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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import names
from ..spec import ShardDBSpec
from .config import PATRONI_PORT
from .shape import Plan, record
from .template import member_selector

Obj = dict[str, Any]

# What Patroni's kubernetes DCS calls, read from patroni/dcs/kubernetes.py (4.1): on ConfigMaps it
# lists and watches them (one list call with watch=true), reads the leader one, creates and patches
# (never updates with PUT, never deletes one); ``patronictl remove`` would delete them by collection,
# which the hooks never need, so it is not granted. On pods it lists, watches and patches its own
# (the role label and the status annotation). With use_endpoints: false it touches no Endpoints and
# no Service.
#
# Kubernetes checks ``resourceNames`` for get, patch, update and delete, never for create, list or
# watch, so those three are granted on the kind and the rest only on the names Patroni uses: a
# member may patch its ShardDB's member pods and its shards' four ConfigMaps, and no other
# ShardDB's (``role``). The stop order (``stop``) reads its shard's StatefulSet, by name too.
NAMELESS_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "configmaps", ("create", "list", "watch")),
    ("", "pods", ("list", "watch")),
)
NAMED_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "configmaps", ("get", "patch")),
    ("", "pods", ("patch",)),
    ("apps", "statefulsets", ("get",)),
)
# Every verb granted, by group and resource: what Metacontroller must hold itself to create the Role.
RBAC_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "configmaps", ("create", "get", "list", "patch", "watch")),
    ("", "pods", ("list", "patch", "watch")),
    ("apps", "statefulsets", ("get",)),
)
# Patroni's ConfigMaps in Kubernetes mode (patroni/dcs/kubernetes.py): the history rides in -config.
CONFIG_MAP_SUFFIXES = ("leader", "config", "sync", "failover")


def _meta(
    name: str, parent: str, extra: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> Obj:
    meta: Obj = {"name": name, "labels": {**names.labels(parent, names.DB), **(extra or {})}}
    if annotations:
        meta["annotations"] = annotations
    return meta


def service_account(parent: str) -> Obj:
    """The identity Patroni talks to the API server as, unless ``spec.serviceAccountName`` names the user's."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(names.account_name(parent), parent)}


def role(parent: str, shards: int, members: int) -> Obj:
    """The least Patroni needs, in the ShardDB's namespace only, and by name wherever Kubernetes checks names.

    The names are those of ``shards`` shards of ``members`` each, so growing either widens the Role
    in the same answer that adds the pods.
    """
    scopes = [names.shard_name(parent, shard) for shard in range(shards)]
    named = {
        "configmaps": [f"{scope}-{suffix}" for scope in scopes for suffix in CONFIG_MAP_SUFFIXES],
        "pods": [names.member_name(parent, shard, member) for shard in range(shards) for member in range(members)],
        "statefulsets": scopes,
    }
    rules = [
        {"apiGroups": [group], "resources": [resource], "verbs": list(verbs)}
        for group, resource, verbs in NAMELESS_RULES
    ]
    rules += [
        {"apiGroups": [group], "resources": [resource], "resourceNames": named[resource], "verbs": list(verbs)}
        for group, resource, verbs in NAMED_RULES
    ]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(names.account_name(parent), parent),
        "rules": rules,
    }


def role_binding(parent: str, namespace: str, spec: ShardDBSpec) -> Obj:
    """The Role, granted to the account the member pods run as (the user's, when the spec names one)."""
    subject = spec.service_account_name or names.account_name(parent)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(names.account_name(parent), parent),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.account_name(parent)},
        "subjects": [{"kind": "ServiceAccount", "name": subject, "namespace": namespace}],
    }


def _db_ports(port: int) -> list[Obj]:
    return [{"name": names.DB, "port": port, "targetPort": names.DB, "protocol": "TCP"}]


def members_service(parent: str, shard: int, port: int) -> Obj:
    """Headless, the StatefulSet's serviceName: each member's stable DNS name within its shard."""
    scope = {names.SCOPE_LABEL: names.shard_name(parent, shard)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.shard_name(parent, shard), parent, scope),
        "spec": {"clusterIP": "None", "selector": member_selector(parent, shard), "ports": _db_ports(port)},
    }


def role_service(parent: str, shard: int, port: int, role_name: str) -> Obj:
    """``<shard>-primary`` selects the pod Patroni labels leader, ``<shard>-standby`` those it labels replica.

    Patroni moves the label on a switchover or failover, so the Service follows the primary
    without the hooks ever deciding who it is.
    """
    value = names.LEADER_LABEL_VALUE if role_name == names.PRIMARY else names.FOLLOWER_LABEL_VALUE
    scope = {names.SCOPE_LABEL: names.shard_name(parent, shard)}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.role_service_name(parent, shard, role_name), parent, scope),
        "spec": {
            "type": "ClusterIP",
            "selector": {**member_selector(parent, shard), names.ROLE_LABEL: value},
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
    scope = {names.SCOPE_LABEL: names.shard_name(parent, shard)}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(names.shard_name(parent, shard), parent, scope),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": member_selector(parent, shard)}},
    }


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
    name = names.shard_name(parent, shard)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(name, parent, {names.SCOPE_LABEL: name}, {**(annotations or {}), **record(plan)}),
        "spec": {
            "serviceName": name,
            "replicas": plan.members if replicas is None else replicas,
            # Members start together; Patroni's initialize key lets exactly one bootstrap the cluster.
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": member_selector(parent, shard)},
            # Pods change only when the rollout Job evicts them (``hooks/replication/rollout.py``): the
            # standbys first, then the primary, so a rollout moves each shard's primary once.
            "updateStrategy": {"type": names.ON_DELETE},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": template,
            "volumeClaimTemplates": [json.loads(json.dumps(claim)) for claim in claim_templates],
        },
    }


def member_policy(
    parent: str, shard: int, port: int, clients: Sequence[Obj] | None = None, *, backups: bool = False
) -> Obj:
    """Patroni's REST API reachable only from the shard's own members; PostgreSQL's port from the clients declared.

    Patroni's API (``PATRONI_PORT``) answers switchover, failover, restart, reinitialize and config
    changes to anyone who reaches it; only the members of the same shard ever call it (Patroni
    asks its peers' state before it promotes, and its failsafe asks them too). The kubelet's
    probes come from the node, which NetworkPolicy does not filter. PostgreSQL's port asks every
    client for a password over TLS; with no ``clients`` declared (``spec.replication.clients``) it
    stays open to every source, as before the field, so today's clients keep working. Declared, it is
    open to them and to what needs it of ours: the shard's members (replication, ``pg_rewind``), the
    ShardDB's seed Job and cache, which are handed the shards' addresses, and (``backups``) its base backups' and
    restore points' Jobs.
    Ports are numbers, not names: a policy agent resolves a named port only on the pods a rule selects.
    """
    selector = member_selector(parent, shard)
    scope = {names.SCOPE_LABEL: names.shard_name(parent, shard)}
    database: Obj = {"ports": [{"protocol": "TCP", "port": port}]}
    if clients is not None:
        components = (names.SEED, names.CACHE, names.BACKUP) if backups else (names.SEED, names.CACHE)
        ours = [selector, *(names.selector_labels(parent, each) for each in components)]
        peers = [{"podSelector": {"matchLabels": each}} for each in ours] + json.loads(json.dumps(list(clients)))
        database = {"from": peers, **database}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(names.shard_name(parent, shard), parent, scope),
        "spec": {
            "podSelector": {"matchLabels": selector},
            "policyTypes": ["Ingress"],
            "ingress": [
                database,
                {
                    "from": [{"podSelector": {"matchLabels": selector}}],
                    "ports": [{"protocol": "TCP", "port": PATRONI_PORT}],
                },
            ],
        },
    }


# The kinds this module renders: never a ConfigMap or Endpoints, the kinds Patroni keeps its state in.
RENDERED_KINDS = frozenset(
    {"ServiceAccount", "Role", "RoleBinding", "Service", "PodDisruptionBudget", "StatefulSet", "NetworkPolicy"}
)


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
    shards = max((each.shard + 1 for each in sets), default=0)
    out = [] if spec.service_account_name else [service_account(parent)]
    out += [role(parent, shards, plan.members), role_binding(parent, namespace, spec)]
    for each in sets:
        shard = each.shard
        out += [
            members_service(parent, shard, spec.db.port),
            role_service(parent, shard, spec.db.port, names.PRIMARY),
            role_service(parent, shard, spec.db.port, names.STANDBY),
            member_policy(parent, shard, spec.db.port, spec.replication.clients, backups=spec.backup is not None),
        ]
        if budgets:
            out.append(shard_budget(parent, shard))
        claims = list(each.claim_templates) or claim_templates
        out.append(
            shard_statefulset(
                parent, shard, plan, each.template, claims, replicas=each.replicas, annotations=dict(each.annotations)
            )
        )
    never_patronis(parent, shards, out)
    return out


def never_patronis(parent: str, shards: int, objects: list[Obj]) -> None:
    """Raise if any object is of a kind Patroni keeps state in, or bears one of its names."""
    owned = frozenset().union(*(names.patroni_owned(names.shard_name(parent, shard)) for shard in range(shards)))
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] not in RENDERED_KINDS or name in owned:
            raise PatroniObjectError(f"{obj['kind']} {name} is Patroni's own, never a child")
