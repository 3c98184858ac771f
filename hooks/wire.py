"""The request contract again, as msgspec structs: the fast path for well-formed requests.

A sync request is mostly pods and managed fields the lifecycle never reads;
msgspec skips unknown fields while parsing instead of building them, which makes
decoding several times cheaper than a full parse. These structs mirror
``contract`` field for field and are stricter (no lax coercion), so whatever
they accept ``contract`` accepts with the same values; anything they refuse is
parsed again by ``contract``, which gives the answer or the 4xx message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct, field


class _Lean(Struct, frozen=True, rename="camel"):
    pass


class ObjectMeta(_Lean, frozen=True):
    name: Annotated[str, Meta(min_length=1)]
    namespace: str = ""
    generation: int = 0
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    deletion_timestamp: str | None = None


class Condition(_Lean, frozen=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class ResourceRequirements(_Lean, frozen=True):
    requests: dict[str, str] = {}


class PVCSpec(_Lean, frozen=True):
    storage_class_name: str | None = None
    resources: ResourceRequirements = ResourceRequirements()


class PVCTemplate(_Lean, frozen=True):
    spec: PVCSpec = PVCSpec()


class StatefulSetSpec(_Lean, frozen=True):
    replicas: int | None = None
    volume_claim_templates: list[PVCTemplate] = []


class StatefulSetStatus(_Lean, frozen=True):
    replicas: int = 0
    ready_replicas: int = 0


class StatefulSet(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["StatefulSet"] | None = None
    spec: StatefulSetSpec = StatefulSetSpec()
    status: StatefulSetStatus = StatefulSetStatus()


class DeploymentSpec(_Lean, frozen=True):
    replicas: int | None = None


class DeploymentStatus(_Lean, frozen=True):
    replicas: int = 0
    ready_replicas: int = 0
    conditions: list[Condition] = []


class Deployment(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["Deployment"] | None = None
    spec: DeploymentSpec = DeploymentSpec()
    status: DeploymentStatus = DeploymentStatus()


class JobStatus(_Lean, frozen=True):
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    conditions: list[Condition] = []


class Job(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["Job"] | None = None
    status: JobStatus = JobStatus()


class Service(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["Service"] | None = None


class EndpointConditions(_Lean, frozen=True):
    ready: bool | None = None


class ObjectReference(_Lean, frozen=True):
    kind: str = ""
    name: str = ""


class Endpoint(_Lean, frozen=True):
    conditions: EndpointConditions = EndpointConditions()
    hostname: str | None = None
    target_ref: ObjectReference | None = None


class EndpointSlice(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["EndpointSlice"] | None = None
    endpoints: list[Endpoint] | None = None


class PodStatus(_Lean, frozen=True):
    phase: str = ""


class Pod(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["Pod"] | None = None
    status: PodStatus = PodStatus()


class Children(_Lean, frozen=True):
    statefulsets: dict[str, StatefulSet] | None = field(default=None, name="StatefulSet.apps/v1")
    services: dict[str, Service] | None = field(default=None, name="Service.v1")
    deployments: dict[str, Deployment] | None = field(default=None, name="Deployment.apps/v1")
    jobs: dict[str, Job] | None = field(default=None, name="Job.batch/v1")


class Related(_Lean, frozen=True):
    endpointslices: dict[str, EndpointSlice] | None = field(default=None, name="EndpointSlice.discovery.k8s.io/v1")
    pods: dict[str, Pod] | None = field(default=None, name="Pod.v1")


class Parent(_Lean, frozen=True):
    api_version: str
    kind: Literal["ShardDB"]
    metadata: ObjectMeta
    spec: dict[str, Any]
    status: dict[str, Any] | None = None


class SyncRequest(_Lean, frozen=True):
    parent: Parent
    children: Children | None = None
    related: Related | None = None
    finalizing: bool = False


class CustomizeRequest(_Lean, frozen=True):
    parent: Parent


_SYNC = msgspec.json.Decoder(SyncRequest)
_CUSTOMIZE = msgspec.json.Decoder(CustomizeRequest)


def sync_request(body: bytes) -> SyncRequest | None:
    """The request, or None when only ``contract`` can say what it is (or what is wrong)."""
    try:
        return _SYNC.decode(body)
    except (msgspec.MsgspecError, RecursionError):  # deep nesting: contract reports it as a 400
        return None


def customize_request(body: bytes) -> CustomizeRequest | None:
    try:
        return _CUSTOMIZE.decode(body)
    except (msgspec.MsgspecError, RecursionError):
        return None
