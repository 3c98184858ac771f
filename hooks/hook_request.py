"""Metacontroller's hook requests, modelled only as deep as the hooks read them.

A sync request is mostly pods and managed fields the lifecycle never reads;
these msgspec structs skip unknown fields while parsing instead of building
them, which makes decoding several times cheaper than a full parse (see the
benchmark). Child groups are keyed ``Kind.apiVersion``; the inner key is
``name`` (hook v1) or ``namespace/name`` (hook v2) and is never interpreted.
The user's spec stays a plain mapping here: ``spec`` validates it with pydantic
so its errors read like the CRD's.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import Meta, Struct, field

from . import errors, kinds, names

T = TypeVar("T")

# Kubernetes counts are int32 or int64; a larger number is no Kubernetes object (and could not be
# answered). Generations stay far below 2**53, where JSON numbers stop being exact everywhere.
Int64 = Annotated[int, Meta(ge=-(2**53 - 1), le=2**53 - 1)]
Int32 = Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)]


class _Lean(Struct, frozen=True, rename="camel"):
    pass


class ObjectMeta(_Lean, frozen=True):
    name: Annotated[str, Meta(min_length=1)]
    namespace: str = ""
    generation: Int64 = 0
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


class ManagedFieldsEntry(_Lean, frozen=True):
    """Who last wrote an object, and when: only the time and whether it was the status."""

    time: str | None = None
    subresource: str = ""


class WorkloadMeta(ObjectMeta, frozen=True):
    """A workload's metadata with its writers' times: when its spec may last have asked for more pods."""

    managed_fields: list[ManagedFieldsEntry] = []


class Condition(_Lean, frozen=True):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None


class StatefulSetSpec(_Lean, frozen=True):
    replicas: Int32 | None = None
    # Immutable once stored, so the hooks hand them back exactly as observed.
    pod_management_policy: str | None = None
    volume_claim_templates: list[dict[str, Any]] = []
    template: dict[str, Any] = {}
    update_strategy: dict[str, Any] = {}


class StatefulSetStatus(_Lean, frozen=True):
    replicas: Int32 = 0
    ready_replicas: Int32 = 0
    updated_replicas: Int32 = 0
    observed_generation: Int64 = 0
    current_revision: str = ""
    update_revision: str = ""


class StatefulSet(_Lean, frozen=True):
    metadata: WorkloadMeta
    kind: Literal["StatefulSet"] | None = None
    spec: StatefulSetSpec = StatefulSetSpec()
    status: StatefulSetStatus = StatefulSetStatus()


class DeploymentSpec(_Lean, frozen=True):
    replicas: Int32 | None = None
    template: dict[str, Any] = {}


class DeploymentStatus(_Lean, frozen=True):
    replicas: Int32 = 0
    ready_replicas: Int32 = 0
    updated_replicas: Int32 = 0
    observed_generation: Int64 = 0
    conditions: list[Condition] = []


class Deployment(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["Deployment"] | None = None
    spec: DeploymentSpec = DeploymentSpec()
    status: DeploymentStatus = DeploymentStatus()


class JobStatus(_Lean, frozen=True):
    active: Int32 = 0
    succeeded: Int32 = 0
    failed: Int32 = 0
    terminating: Int32 | None = None
    start_time: str | None = None  # set by the Job controller as it first syncs, before any pod
    conditions: list[Condition] = []


class Job(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["Job"] | None = None
    status: JobStatus = JobStatus()


class CronJobStatus(_Lean, frozen=True):
    active: list[dict[str, Any]] = []  # references to the running Jobs
    last_schedule_time: str | None = None
    last_successful_time: str | None = None


class CronJobSpec(_Lean, frozen=True):
    schedule: str | None = None


class CronJob(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["CronJob"] | None = None
    spec: CronJobSpec = CronJobSpec()
    status: CronJobStatus = CronJobStatus()


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


class ContainerStateWaiting(_Lean, frozen=True):
    reason: str = ""
    message: str = ""


class ContainerStateTerminated(_Lean, frozen=True):
    exit_code: Int32 = 0
    reason: str = ""
    # What the container wrote to its termination log: a member's refused restore names the field there.
    message: str = ""


class ContainerState(_Lean, frozen=True):
    waiting: ContainerStateWaiting | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(_Lean, frozen=True):
    name: str = ""
    image: str = ""
    ready: bool = False
    restart_count: Int32 = 0
    state: ContainerState = ContainerState()
    last_state: ContainerState = ContainerState()


class PodSpec(_Lean, frozen=True):
    node_name: str = ""


class PodStatus(_Lean, frozen=True):
    phase: str = ""
    reason: str = ""  # NodeLost: the pod's node stopped reporting
    conditions: list[Condition] = []
    container_statuses: list[ContainerStatus] = []
    init_container_statuses: list[ContainerStatus] = []


class Pod(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["Pod"] | None = None
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()


class PodDisruptionBudget(_Lean, frozen=True):
    metadata: ObjectMeta
    kind: Literal["PodDisruptionBudget"] | None = None


class Named(_Lean, frozen=True):
    """A child read only for its name and annotations (a ServiceAccount, Role or RoleBinding; a ConfigMap)."""

    metadata: ObjectMeta
    kind: str | None = None


class Children(_Lean, frozen=True):
    statefulsets: dict[str, StatefulSet] | None = field(default=None, name=kinds.STATEFULSET.group_key)
    services: dict[str, Service] | None = field(default=None, name=kinds.SERVICE.group_key)
    deployments: dict[str, Deployment] | None = field(default=None, name=kinds.DEPLOYMENT.group_key)
    jobs: dict[str, Job] | None = field(default=None, name=kinds.JOB.group_key)
    budgets: dict[str, PodDisruptionBudget] | None = field(default=None, name=kinds.PDB.group_key)
    service_accounts: dict[str, Named] | None = field(default=None, name=kinds.SERVICEACCOUNT.group_key)
    roles: dict[str, Named] | None = field(default=None, name=kinds.ROLE.group_key)
    role_bindings: dict[str, Named] | None = field(default=None, name=kinds.ROLEBINDING.group_key)
    cronjobs: dict[str, CronJob] | None = field(default=None, name=kinds.CRONJOB.group_key)


class Related(_Lean, frozen=True):
    endpointslices: dict[str, EndpointSlice] | None = field(default=None, name=kinds.ENDPOINTSLICE.group_key)
    pods: dict[str, Pod] | None = field(default=None, name=kinds.POD.group_key)
    config_maps: dict[str, Named] | None = field(default=None, name=kinds.CONFIGMAP.group_key)


class Parent(_Lean, frozen=True):
    api_version: Annotated[str, Meta(pattern=f"^{re.escape(names.GROUP)}/")]
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


# Not strict: JSON Schema counts 3.0 as an integer, so a count written 3.0 reads as 3 (3.5 is still refused).
_SYNC = msgspec.json.Decoder(SyncRequest, strict=False)
_CUSTOMIZE = msgspec.json.Decoder(CustomizeRequest, strict=False)


def decode_sync(body: bytes) -> SyncRequest:
    """The request, or a ``HookError`` naming what is wrong with it."""
    request = _decode(_SYNC, body)
    _check_passthrough(request)
    return request


def _check_passthrough(request: SyncRequest) -> None:
    """Parts of observed children the answer may carry back verbatim must be fit to go back out."""
    children = request.children
    if children is None:
        return
    parts: list[tuple[str, Any]] = []
    for key, sts in (children.statefulsets or {}).items():
        where = f"children.{kinds.STATEFULSET.group_key}.{key}.spec"
        parts += [
            (f"{where}.volumeClaimTemplates", sts.spec.volume_claim_templates),
            (f"{where}.template", sts.spec.template),
        ]
    for key, deployment in (children.deployments or {}).items():
        parts.append((f"children.{kinds.DEPLOYMENT.group_key}.{key}.spec.template", deployment.spec.template))
    for where, value in parts:
        problem = unfit(value, where)
        if problem:
            raise errors.InvalidRequestError(problem)


def decode_customize(body: bytes) -> CustomizeRequest:
    return _decode(_CUSTOMIZE, body)


class _AnyChildren(_Lean, frozen=True):
    children: dict[str, Any] | None = None


_ANY_CHILDREN = msgspec.json.Decoder(_AnyChildren)


# Kubernetes objects nest about twenty levels deep; anything far deeper is not one.
MAX_CHILD_DEPTH = 64


def observed_children(body: bytes) -> list[dict[str, Any]]:
    """Every observed child of our kinds, whole, in a stable order: what a paused ShardDB answers with.

    They go back out verbatim, so each must look like the object it claims to be.
    """
    groups = _decode(_ANY_CHILDREN, body).children or {}
    out = []
    for group in sorted(groups):
        kind = kinds.BY_GROUP_KEY.get(group)
        if kind is None or kind not in kinds.CHILDREN or groups[group] is None:
            continue
        if not isinstance(groups[group], dict):
            raise errors.invalid(f"children.{group}", errors.EXPECTED_OBJECT)
        for key, child in sorted(groups[group].items()):
            where = f"children.{group}.{key}"
            if not isinstance(child, dict):
                raise errors.invalid(where, errors.EXPECTED_OBJECT)
            metadata = child.get("metadata")
            if child.get("kind") not in (None, kind.kind) or not isinstance(metadata, dict):
                raise errors.invalid(where, errors.not_a(kind.kind))
            if not isinstance(metadata.get("name"), str) or not metadata["name"]:
                raise errors.invalid(f"{where}.metadata.name", errors.FIELD_REQUIRED)
            problem = unfit(child, where)
            if problem:
                raise errors.InvalidRequestError(problem)
            out.append({"apiVersion": kind.api_version, "kind": kind.kind, **child})
    return out


def unfit(value: Any, where: str = "") -> str:
    """Why ``value`` could not go back out as JSON a Kubernetes client reads (``path: problem``), or ''.

    Walked without recursion, so no input can exhaust the stack; paths are spelled out only
    for a value that has a problem, since nearly every value has none.
    """
    if _fit(value):
        return ""
    stack: list[tuple[Any, int, str]] = [(value, 1, where)]
    while stack:
        node, level, path = stack.pop()
        if level > MAX_CHILD_DEPTH:
            return errors.located(path, errors.nested_deeper_than(MAX_CHILD_DEPTH))
        if isinstance(node, int) and not isinstance(node, bool) and not -(2**63) <= node < 2**63:
            return errors.located(path, errors.BEYOND_64_BITS)
        if isinstance(node, dict):
            stack.extend((child, level + 1, f"{path}.{key}") for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, level + 1, f"{path}.{index}") for index, child in enumerate(node))
    return ""


def _fit(value: Any) -> bool:
    """``unfit``'s test without the paths: no level deeper than allowed, no integer beyond 64 bits."""
    level, current = 1, [value]
    while current:
        if level > MAX_CHILD_DEPTH:
            return False
        deeper: list[Any] = []
        for node in current:
            if isinstance(node, dict):
                deeper.extend(node.values())
            elif isinstance(node, list):
                deeper.extend(node)
            elif isinstance(node, int) and not isinstance(node, bool) and not -(2**63) <= node < 2**63:
                return False
        current, level = deeper, level + 1
    return True


def condition(raw: object) -> Condition | None:
    """One condition of the parent's own status, or None if it is unreadable."""
    try:
        return msgspec.convert(raw, Condition)
    except msgspec.ValidationError:
        return None


def _decode(decoder: msgspec.json.Decoder[T], body: bytes) -> T:
    try:
        return decoder.decode(body)
    except msgspec.ValidationError as error:
        raise errors.from_msgspec(error) from None
    except msgspec.DecodeError as error:
        raise errors.not_json(str(error)) from None
    except RecursionError:
        raise errors.not_json(errors.NESTED_TOO_DEEPLY) from None
