"""The kinds of object a ShardDB owns or watches: the one table everything else reads.

Metacontroller keys observed objects ``Kind.apiVersion`` (``Service.v1``,
``StatefulSet.apps/v1``); the CompositeController lists each child's plural and
update strategy. Adding a child kind means a row here, its rendering and its
place in the lifecycle; the manifests are tested against this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Strategy = Literal["InPlace", "OnDelete"]


@dataclass(frozen=True)
class Kind:
    kind: str
    api_version: str
    plural: str
    # How Metacontroller changes an existing child: InPlace updates it, OnDelete never does.
    update: Strategy | None = None

    @property
    def group_key(self) -> str:
        """The key of this kind's map in a hook request's ``children`` or ``related``."""
        return f"{self.kind}.{self.api_version}"

    @property
    def api_prefix(self) -> str:
        """REST path prefix: ``/api/v1`` for the core group, ``/apis/<group>/<version>`` otherwise."""
        return f"/apis/{self.api_version}" if "/" in self.api_version else f"/api/{self.api_version}"


SERVICE = Kind("Service", "v1", "services", "InPlace")
STATEFULSET = Kind("StatefulSet", "apps/v1", "statefulsets", "InPlace")
DEPLOYMENT = Kind("Deployment", "apps/v1", "deployments", "InPlace")
# A Job's pod template is immutable: one Job per shard count instead of updates.
JOB = Kind("Job", "batch/v1", "jobs", "OnDelete")
PDB = Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", "InPlace")
# Patroni's identity and its least privilege, rendered only for a ShardDB whose shards have members.
SERVICEACCOUNT = Kind("ServiceAccount", "v1", "serviceaccounts", "InPlace")
ROLE = Kind("Role", "rbac.authorization.k8s.io/v1", "roles", "InPlace")
ROLEBINDING = Kind("RoleBinding", "rbac.authorization.k8s.io/v1", "rolebindings", "InPlace")
# Who may reach a shard's members: Patroni's REST API only from the shard's own members.
NETWORKPOLICY = Kind("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", "InPlace")
# Each shard's base backup on ``spec.backup.schedule``, for a ShardDB with members that backs up.
CRONJOB = Kind("CronJob", "batch/v1", "cronjobs", "InPlace")

CHILDREN: tuple[Kind, ...] = (
    SERVICE,
    STATEFULSET,
    DEPLOYMENT,
    JOB,
    PDB,
    SERVICEACCOUNT,
    ROLE,
    ROLEBINDING,
    NETWORKPOLICY,
    CRONJOB,
)
# Children only a ShardDB with members has: one member per shard owns none of them.
MEMBERS_ONLY: tuple[Kind, ...] = (SERVICEACCOUNT, ROLE, ROLEBINDING, NETWORKPOLICY, CRONJOB)

# Watched through the customize hook, never written.
ENDPOINTSLICE = Kind("EndpointSlice", "discovery.k8s.io/v1", "endpointslices")
POD = Kind("Pod", "v1", "pods")
# Patroni's ``<scope>-sync`` ConfigMaps, read by name for the roles; Patroni's own, never a child.
CONFIGMAP = Kind("ConfigMap", "v1", "configmaps")

RELATED: tuple[Kind, ...] = (ENDPOINTSLICE, POD, CONFIGMAP)

BY_KIND = {kind.kind: kind for kind in (*CHILDREN, *RELATED)}
BY_GROUP_KEY = {kind.group_key: kind for kind in (*CHILDREN, *RELATED)}
