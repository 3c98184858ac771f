"""Metacontroller's hook requests, modelled only as deep as the hooks read them.

Observed objects arrive whole from the API server; declaring just the fields the
lifecycle reads keeps parsing cheap and lets unrelated fields change freely.
Child groups are keyed ``Kind.apiVersion``; the inner key is ``name`` (hook v1)
or ``namespace/name`` (hook v2) and is never interpreted. ``wire`` decodes the
same contract faster; these models are the reference and explain bad requests.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Lean(BaseModel):
    # Only the API server's (camelCase) names are read, as ``wire`` reads them.
    model_config = ConfigDict(extra="ignore", frozen=True)


class ObjectMeta(_Lean):
    name: str = Field(min_length=1)
    namespace: str = ""
    generation: int = 0
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    deletion_timestamp: str | None = Field(default=None, alias="deletionTimestamp")


class Condition(_Lean):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = Field(default=None, alias="lastTransitionTime")


# --- StatefulSet -----------------------------------------------------------


class ResourceRequirements(_Lean):
    requests: dict[str, str] = Field(default_factory=dict)


class PVCSpec(_Lean):
    storage_class_name: str | None = Field(default=None, alias="storageClassName")
    resources: ResourceRequirements = ResourceRequirements()


class PVCTemplate(_Lean):
    spec: PVCSpec = PVCSpec()


class StatefulSetSpec(_Lean):
    replicas: int | None = None
    volume_claim_templates: list[PVCTemplate] = Field(default_factory=list, alias="volumeClaimTemplates")


class StatefulSetStatus(_Lean):
    replicas: int = 0
    ready_replicas: int = Field(default=0, alias="readyReplicas")


class StatefulSet(_Lean):
    kind: Literal["StatefulSet"] | None = None
    metadata: ObjectMeta
    spec: StatefulSetSpec = StatefulSetSpec()
    status: StatefulSetStatus = StatefulSetStatus()


# --- Deployment ------------------------------------------------------------


class DeploymentSpec(_Lean):
    replicas: int | None = None


class DeploymentStatus(_Lean):
    replicas: int = 0
    ready_replicas: int = Field(default=0, alias="readyReplicas")
    conditions: list[Condition] = Field(default_factory=list)


class Deployment(_Lean):
    kind: Literal["Deployment"] | None = None
    metadata: ObjectMeta
    spec: DeploymentSpec = DeploymentSpec()
    status: DeploymentStatus = DeploymentStatus()


# --- Job, Service, EndpointSlice, Pod ----------------------------------------


class JobStatus(_Lean):
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    conditions: list[Condition] = Field(default_factory=list)


class Job(_Lean):
    kind: Literal["Job"] | None = None
    metadata: ObjectMeta
    status: JobStatus = JobStatus()


class Service(_Lean):
    kind: Literal["Service"] | None = None
    metadata: ObjectMeta


class EndpointConditions(_Lean):
    ready: bool | None = None


class ObjectReference(_Lean):
    kind: str = ""
    name: str = ""


class Endpoint(_Lean):
    conditions: EndpointConditions = EndpointConditions()
    hostname: str | None = None
    target_ref: ObjectReference | None = Field(default=None, alias="targetRef")


class EndpointSlice(_Lean):
    kind: Literal["EndpointSlice"] | None = None
    metadata: ObjectMeta
    endpoints: list[Endpoint] | None = None


class PodStatus(_Lean):
    phase: str = ""


class Pod(_Lean):
    kind: Literal["Pod"] | None = None
    metadata: ObjectMeta
    status: PodStatus = PodStatus()


# --- groups and requests ---------------------------------------------------


class Children(_Lean):
    """Observed children by ``Kind.apiVersion``; a missing or null group is empty."""

    statefulsets: dict[str, StatefulSet] | None = Field(default=None, alias="StatefulSet.apps/v1")
    services: dict[str, Service] | None = Field(default=None, alias="Service.v1")
    deployments: dict[str, Deployment] | None = Field(default=None, alias="Deployment.apps/v1")
    jobs: dict[str, Job] | None = Field(default=None, alias="Job.batch/v1")


class Related(_Lean):
    endpointslices: dict[str, EndpointSlice] | None = Field(default=None, alias="EndpointSlice.discovery.k8s.io/v1")
    pods: dict[str, Pod] | None = Field(default=None, alias="Pod.v1")


class PriorStatus(_Lean):
    """The parent's current status: memory the hook wrote earlier (possibly stale)."""

    seeded_shards: int = Field(default=0, alias="seededShards")
    conditions: list[Condition] = Field(default_factory=list)


class Parent(_Lean):
    api_version: str = Field(alias="apiVersion")
    kind: Literal["ShardDB"]
    metadata: ObjectMeta
    spec: dict[str, Any]
    status: dict[str, Any] | None = None


class SyncRequest(_Lean):
    parent: Parent
    children: Children | None = None
    related: Related | None = None
    finalizing: bool = False


class CustomizeRequest(_Lean):
    parent: Parent
