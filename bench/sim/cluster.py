"""The rest of the cluster, simulated against the real API server: kubelet and built-in controllers.

Each is another component with its own client, so none of its writes spends
Metacontroller's tokens. They write real objects, with the shapes the hooks
read: shard pods made by the StatefulSet controller (one at a time for
OrderedReady, all at once for Parallel), cache pods for the Deployment, a pod
per seed Job, Running and Ready (or Succeeded) after a delay as a kubelet would
report them, the controllers' status, the EndpointSlice of each Service and the
status of each PodDisruptionBudget.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx

from .api import Api, Obj
from .informers import DELETED, Event, Store
from .workqueue import Workers, WorkQueue

NODE = "node-1"
HOST_IP = "10.0.0.1"
MANAGED_BY_SLICE_CONTROLLER = "endpointslice-controller.k8s.io"


@dataclass(frozen=True)
class Timings:
    """How long the cluster takes: a pod from created to Ready, a seed Job from started to done."""

    pod_start_seconds: float = 2.0
    job_seconds: float = 2.0


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def short_hash(*parts: str, size: int = 10) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:size]


def owner_of(obj: Obj, kind: str) -> tuple[str, str] | None:
    """(name, uid) of the controller of ``obj`` if it is a ``kind``."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == kind:
            return str(ref["name"]), str(ref["uid"])
    return None


def controller_ref(obj: Obj) -> Obj:
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def deleting(obj: Obj) -> bool:
    return obj["metadata"].get("deletionTimestamp") is not None


def pod_ready(pod: Obj) -> bool:
    if deleting(pod):
        return False
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def selects(selector: Obj | None, labels: Obj | None) -> bool:
    """A Service's selector (a plain map); an empty one selects nothing."""
    if not selector:
        return False
    given = labels or {}
    return all(given.get(key) == value for key, value in selector.items())


def check(response: httpx.Response, what: str) -> None:
    """A refused write fails the reconcile (retried with backoff); 404/409 mean someone got there first."""
    if response.status_code >= 400 and response.status_code not in (404, 409):
        raise RuntimeError(f"{what}: {response.status_code} {response.text[:300]}")


class Controller:
    """A keyed reconcile loop fed by informer events; ``keys`` maps an event to the keys it touches."""

    name = "controller"
    workers = 2

    def __init__(self, api: Api, store: Store, namespace: str, timings: Timings) -> None:
        self.api = api
        self.store = store
        self.namespace = namespace
        self.timings = timings
        self.queue = WorkQueue()
        self.loop = Workers(self.name, self.queue, self.reconcile, self.workers)

    def on_event(self, event: Event) -> None:
        for key in self.keys(event):
            self.queue.add(key)

    def keys(self, event: Event) -> list[str]:
        del event
        return []

    async def reconcile(self, key: str) -> None:
        raise NotImplementedError

    def owned_pods(self, kind: str, uid: str) -> list[Obj]:
        return [pod for pod in self.store.list("Pod") if (owner_of(pod, kind) or ("", ""))[1] == uid]

    async def create_pod(self, owner: Obj, name: str, template: Obj, labels: dict[str, str], extra: Obj) -> None:
        """A pod from ``template``, bound to the node at once (there is no scheduler here)."""
        spec = {**template.get("spec", {}), **extra, "nodeName": NODE}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {**(template.get("metadata", {}).get("labels") or {}), **labels},
                "ownerReferences": [controller_ref(owner)],
            },
            "spec": spec,
        }
        check(await self.api.create(pod), f"create pod {name}")

    async def delete_pod(self, pod: Obj) -> None:
        meta = pod["metadata"]
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}}
        check(await self.api.delete("Pod", meta["name"], self.namespace, body), f"delete pod {meta['name']}")

    async def patch_status(self, obj: Obj, status: Obj) -> None:
        meta = obj["metadata"]
        response = await self.api.merge_patch(obj["kind"], meta["name"], self.namespace, {"status": status}, "status")
        check(response, f"status of {obj['kind']}/{meta['name']}")


class Kubelet(Controller):
    """Pods start after the pod start delay: Running and Ready, or Succeeded for a Job's pod."""

    name = "kubelet"

    def __init__(self, api: Api, store: Store, namespace: str, timings: Timings) -> None:
        super().__init__(api, store, namespace, timings)
        self._seen: set[str] = set()
        self._ips = itertools.count(1)

    def on_event(self, event: Event) -> None:
        """A new pod starts once, after its delay."""
        pod = event.new
        uid = pod["metadata"]["uid"]
        if event.kind != "Pod" or event.type == DELETED or uid in self._seen or pod.get("status", {}).get("startTime"):
            return
        self._seen.add(uid)
        job = owner_of(pod, "Job") is not None
        delay = self.timings.job_seconds if job else self.timings.pod_start_seconds
        self.queue.add_after(pod["metadata"]["name"], delay)

    async def reconcile(self, key: str) -> None:
        pod = self.store.get("Pod", key)
        if pod is None or deleting(pod) or pod.get("status", {}).get("phase") in ("Running", "Succeeded"):
            return
        done = owner_of(pod, "Job") is not None
        await self.patch_status(pod, self._status(pod, succeeded=done))

    def _ip(self) -> str:
        n = next(self._ips)
        return f"10.244.{n // 250}.{n % 250 + 2}"

    def _status(self, pod: Obj, succeeded: bool) -> Obj:
        stamp = now()
        ready = "False" if succeeded else "True"
        reason = {"reason": "PodCompleted"} if succeeded else {}
        conditions = [
            {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": stamp, **extra}
            for kind, status, extra in (
                ("PodReadyToStartContainers", "True", {}),
                ("Initialized", "True", {}),
                ("Ready", ready, reason),
                ("ContainersReady", ready, reason),
                ("PodScheduled", "True", {}),
            )
        ]
        ip = self._ip()
        state = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": stamp, "finishedAt": stamp}}
        containers = [
            {
                "name": container["name"],
                "image": container["image"],
                "imageID": f"docker.io/library/{container['image']}@sha256:{'0' * 64}",
                "containerID": f"containerd://{short_hash(pod['metadata']['uid'], container['name'], size=64)}",
                "ready": not succeeded,
                "started": not succeeded,
                "restartCount": 0,
                "state": state if succeeded else {"running": {"startedAt": stamp}},
            }
            for container in pod["spec"]["containers"]
        ]
        return {
            "phase": "Succeeded" if succeeded else "Running",
            "conditions": conditions,
            "hostIP": HOST_IP,
            "hostIPs": [{"ip": HOST_IP}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": stamp,
            "containerStatuses": containers,
            "qosClass": pod.get("status", {}).get("qosClass", "BestEffort"),  # set by the server, immutable
        }


class StatefulSetController(Controller):
    """Shard pods by ordinal: OrderedReady one at a time, each after the previous is Ready; Parallel all at once."""

    name = "statefulset-controller"

    def keys(self, event: Event) -> list[str]:
        if event.kind == "StatefulSet":
            return [event.new["metadata"]["name"]]
        owner = owner_of(event.new, "StatefulSet") if event.kind == "Pod" else None
        return [owner[0]] if owner else []

    async def reconcile(self, key: str) -> None:
        sts = self.store.get("StatefulSet", key)
        if sts is None:
            return
        spec = sts["spec"]
        replicas = int(spec.get("replicas", 1))
        ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        owned = self.owned_pods("StatefulSet", sts["metadata"]["uid"])
        pods = {int(pod["metadata"]["name"].rsplit("-", 1)[1]): pod for pod in owned}
        await self._scale_down(pods, replicas, ordered)
        await self._scale_up(sts, pods, replicas, ordered)
        await self._status(sts, pods)

    async def _scale_down(self, pods: dict[int, Obj], replicas: int, ordered: bool) -> None:
        extra = sorted((o for o in pods if o >= replicas), reverse=True)
        for ordinal in extra[:1] if ordered else extra:
            if not deleting(pods[ordinal]):
                await self.delete_pod(pods[ordinal])

    async def _scale_up(self, sts: Obj, pods: dict[int, Obj], replicas: int, ordered: bool) -> None:
        for ordinal in range(replicas):
            pod = pods.get(ordinal)
            if pod is None:
                await self._create(sts, ordinal)
                if ordered:
                    return
            elif ordered and not pod_ready(pod):
                return

    async def _create(self, sts: Obj, ordinal: int) -> None:
        name = f"{sts['metadata']['name']}-{ordinal}"
        claim_names = [claim["metadata"]["name"] for claim in sts["spec"].get("volumeClaimTemplates") or []]
        claims = [{"name": c, "persistentVolumeClaim": {"claimName": f"{c}-{name}"}} for c in claim_names]
        template = sts["spec"]["template"]
        volumes = [*(template["spec"].get("volumes") or []), *claims]
        labels = {
            "statefulset.kubernetes.io/pod-name": name,
            "apps.kubernetes.io/pod-index": str(ordinal),
            "controller-revision-hash": self._revision(sts),
        }
        extra: Obj = {"hostname": name, "subdomain": sts["spec"].get("serviceName", "")}
        if volumes:
            extra["volumes"] = volumes
        await self.create_pod(sts, name, template, labels, extra)

    @staticmethod
    def _revision(sts: Obj) -> str:
        return f"{sts['metadata']['name']}-{short_hash(sts['metadata']['uid'])}"

    async def _status(self, sts: Obj, pods: dict[int, Obj]) -> None:
        live = [pod for pod in pods.values() if not deleting(pod)]
        ready = sum(pod_ready(pod) for pod in live)
        status = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(live),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "currentReplicas": len(live),
            "updatedReplicas": len(live),
            "currentRevision": self._revision(sts),
            "updateRevision": self._revision(sts),
            "collisionCount": 0,
        }
        stored = sts.get("status") or {}
        if any(stored.get(key, 0) != value for key, value in status.items()):
            await self.patch_status(sts, status)


class DeploymentController(Controller):
    """Cache pods for the Deployment's replicas (no ReplicaSet in between); status counts the Ready ones."""

    name = "deployment-controller"

    def keys(self, event: Event) -> list[str]:
        if event.kind == "Deployment":
            return [event.new["metadata"]["name"]]
        owner = owner_of(event.new, "Deployment") if event.kind == "Pod" else None
        return [owner[0]] if owner else []

    async def reconcile(self, key: str) -> None:
        deployment = self.store.get("Deployment", key)
        if deployment is None:
            return
        replicas = int(deployment["spec"].get("replicas", 1))
        template_hash = short_hash(deployment["metadata"]["uid"])
        pods = {p["metadata"]["name"]: p for p in self.owned_pods("Deployment", deployment["metadata"]["uid"])}
        wanted = [f"{key}-{template_hash}-{index}" for index in range(replicas)]
        for name, pod in pods.items():
            if name not in wanted and not deleting(pod):
                await self.delete_pod(pod)
        for name in wanted:
            if name not in pods:
                labels = {"pod-template-hash": template_hash}
                await self.create_pod(deployment, name, deployment["spec"]["template"], labels, {})
        await self._status(deployment, [pods[n] for n in wanted if n in pods])

    async def _status(self, deployment: Obj, pods: list[Obj]) -> None:
        replicas = int(deployment["spec"].get("replicas", 1))
        ready = sum(pod_ready(pod) for pod in pods)
        stamp = deployment["metadata"]["creationTimestamp"]
        available = "True" if ready >= replicas else "False"
        status: Obj = {
            "observedGeneration": deployment["metadata"].get("generation", 1),
            "replicas": len(pods),
            "updatedReplicas": len(pods),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": (replicas - ready) or None,  # None: absent (merge patch removes it)
            "conditions": [
                {
                    "type": "Available",
                    "status": available,
                    "reason": "MinimumReplicasAvailable" if available == "True" else "MinimumReplicasUnavailable",
                    "message": "Deployment has minimum availability." if available == "True" else "Waiting for pods.",
                    "lastUpdateTime": stamp,
                    "lastTransitionTime": stamp,
                },
                {
                    "type": "Progressing",
                    "status": "True",
                    "reason": "NewReplicaSetAvailable",
                    "message": "ReplicaSet has successfully progressed.",
                    "lastUpdateTime": stamp,
                    "lastTransitionTime": stamp,
                },
            ],
        }
        stored = deployment.get("status") or {}
        if any(stored.get(key) != value for key, value in status.items()):
            await self.patch_status(deployment, status)


class JobController(Controller):
    """One pod per Job; the Job completes when its pod has Succeeded.

    It remembers what it wrote, as the real one tracks its own updates: a cache a
    moment behind must not make it set ``startTime`` twice (the API server refuses that).
    """

    name = "job-controller"

    def __init__(self, api: Api, store: Store, namespace: str, timings: Timings) -> None:
        super().__init__(api, store, namespace, timings)
        self._started: dict[str, str] = {}
        self._finished: set[str] = set()

    def keys(self, event: Event) -> list[str]:
        if event.kind == "Job":
            return [event.new["metadata"]["name"]]
        owner = owner_of(event.new, "Job") if event.kind == "Pod" else None
        return [owner[0]] if owner else []

    async def reconcile(self, key: str) -> None:
        job = self.store.get("Job", key)
        uid = (job or {}).get("metadata", {}).get("uid", "")
        if job is None or deleting(job) or uid in self._finished:
            return
        status = job.get("status") or {}
        if any(c.get("type") in ("Complete", "Failed") for c in status.get("conditions") or []):
            return
        pods = self.owned_pods("Job", uid)
        if not pods:
            name = f"{key}-{short_hash(uid, size=5)}"
            await self.create_pod(job, name, job["spec"]["template"], {}, {})
        if uid not in self._started:
            started = status.get("startTime") or now()
            await self.patch_status(job, {"startTime": started, "active": 1, "ready": 0})
            self._started[uid] = started
        if pods and pods[0].get("status", {}).get("phase") == "Succeeded":
            await self.patch_status(job, self._complete(self._started[uid]))
            self._finished.add(uid)

    @staticmethod
    def _complete(started: str) -> Obj:
        stamp = now()
        return {
            "startTime": started,
            "completionTime": stamp,
            "active": 0,
            "ready": 0,
            "succeeded": 1,
            "terminating": 0,
            "uncountedTerminatedPods": {},
            "conditions": [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                    "lastProbeTime": stamp,
                    "lastTransitionTime": stamp,
                },
                {
                    "type": "Complete",
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                    "lastProbeTime": stamp,
                    "lastTransitionTime": stamp,
                },
            ],
        }


class EndpointSliceController(Controller):
    """One EndpointSlice per Service with a selector: every selected pod with an IP, ready as its Ready condition."""

    name = "endpointslice-controller"

    def keys(self, event: Event) -> list[str]:
        if event.kind == "Service":
            return [event.new["metadata"]["name"]]
        if event.kind != "Pod":
            return []
        labels = [(obj or {}).get("metadata", {}).get("labels") for obj in (event.old, event.new)]
        return [
            svc["metadata"]["name"]
            for svc in self.store.list("Service")
            if any(selects(svc["spec"].get("selector"), given) for given in labels)
        ]

    async def reconcile(self, key: str) -> None:
        service = self.store.get("Service", key)
        if service is None or not service["spec"].get("selector"):
            return
        desired = self._slice(service)
        name = desired["metadata"]["name"]
        current = self.store.get("EndpointSlice", name)
        if current is None:
            check(await self.api.create(desired), f"create EndpointSlice {name}")
        elif any(current.get(k) != desired.get(k) for k in ("endpoints", "ports")) or (
            current["metadata"].get("labels") != desired["metadata"]["labels"]
        ):
            patch = {"metadata": {"labels": desired["metadata"]["labels"]}, "endpoints": desired["endpoints"]}
            patch["ports"] = desired["ports"]
            response = await self.api.merge_patch("EndpointSlice", name, self.namespace, patch)
            check(response, f"update EndpointSlice {name}")

    def _slice(self, service: Obj) -> Obj:
        meta = service["metadata"]
        pods = sorted(
            (p for p in self.store.list("Pod") if selects(service["spec"]["selector"], p["metadata"].get("labels"))),
            key=lambda p: str(p["metadata"]["name"]),
        )
        endpoints = [self._endpoint(service, pod) for pod in pods if pod.get("status", {}).get("podIP")]
        labels = {
            **(meta.get("labels") or {}),
            "kubernetes.io/service-name": meta["name"],
            "endpointslice.kubernetes.io/managed-by": MANAGED_BY_SLICE_CONTROLLER,
        }
        if service["spec"].get("clusterIP") == "None":
            labels["service.kubernetes.io/headless"] = ""
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{meta['name']}-{short_hash(meta['uid'], size=5)}",
                "namespace": self.namespace,
                "generateName": f"{meta['name']}-",
                "labels": labels,
                "ownerReferences": [controller_ref(service)],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": [self._port(service, port) for port in service["spec"].get("ports") or []],
        }

    @staticmethod
    def _endpoint(service: Obj, pod: Obj) -> Obj:
        meta = pod["metadata"]
        ready = pod_ready(pod)
        endpoint: Obj = {
            "addresses": [pod["status"]["podIP"]],
            "conditions": {"ready": ready, "serving": ready, "terminating": deleting(pod)},
            "nodeName": pod["spec"].get("nodeName", NODE),
            "targetRef": {"kind": "Pod", "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
        }
        if pod["spec"].get("hostname") and pod["spec"].get("subdomain") == service["metadata"]["name"]:
            endpoint["hostname"] = pod["spec"]["hostname"]
        return endpoint

    def _port(self, service: Obj, port: Obj) -> Obj:
        """The container port a named targetPort resolves to (5432 for ``db``), as the real controller does."""
        target = port.get("targetPort", port["port"])
        number = target if isinstance(target, int) else self._named_port(service, str(target)) or port["port"]
        return {"name": port.get("name", ""), "port": number, "protocol": port.get("protocol", "TCP")}

    def _named_port(self, service: Obj, name: str) -> int | None:
        for pod in self.store.list("Pod"):
            if selects(service["spec"]["selector"], pod["metadata"].get("labels")):
                for container in pod["spec"]["containers"]:
                    for port in container.get("ports") or []:
                        if port.get("name") == name:
                            return int(port["containerPort"])
        return None


class DisruptionController(Controller):
    """PodDisruptionBudget status from the pods it selects: healthy, desired, disruptions allowed."""

    name = "disruption-controller"

    def keys(self, event: Event) -> list[str]:
        if event.kind == "PodDisruptionBudget":
            return [event.new["metadata"]["name"]]
        if event.kind != "Pod":
            return []
        labels = [(obj or {}).get("metadata", {}).get("labels") for obj in (event.old, event.new)]
        return [
            pdb["metadata"]["name"]
            for pdb in self.store.list("PodDisruptionBudget")
            if any(selects(pdb["spec"].get("selector", {}).get("matchLabels"), given) for given in labels)
        ]

    async def reconcile(self, key: str) -> None:
        pdb = self.store.get("PodDisruptionBudget", key)
        if pdb is None:
            return
        spec = pdb["spec"]
        match = spec.get("selector", {}).get("matchLabels")
        pods = [p for p in self.store.list("Pod") if selects(match, p["metadata"].get("labels")) and not deleting(p)]
        expected, healthy = len(pods), sum(pod_ready(pod) for pod in pods)
        if "minAvailable" in spec:
            desired = _count(spec["minAvailable"], expected)
        else:
            desired = expected - _count(spec.get("maxUnavailable", 0), expected)
        allowed = max(healthy - max(desired, 0), 0)
        status = {
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": max(desired, 0),
            "expectedPods": expected,
        }
        stored = pdb.get("status") or {}
        condition = self._condition(stored, allowed > 0, status["observedGeneration"])
        if any(stored.get(k) != v for k, v in status.items()) or stored.get("conditions") != [condition]:
            await self.patch_status(pdb, {**status, "conditions": [condition]})

    @staticmethod
    def _condition(stored: Obj, allowed: bool, generation: int) -> Obj:
        """DisruptionAllowed; its transition time moves only when its status does."""
        value = "True" if allowed else "False"
        conditions: list[Obj] = stored.get("conditions") or []
        previous: Obj = next((c for c in conditions if c.get("type") == "DisruptionAllowed"), {})
        return {
            "type": "DisruptionAllowed",
            "status": value,
            "reason": "SufficientPods" if allowed else "InsufficientPods",
            "message": "",
            "observedGeneration": generation,
            "lastTransitionTime": previous.get("lastTransitionTime") if previous.get("status") == value else now(),
        }


def _count(value: int | str, total: int) -> int:
    """An int-or-percent of ``total``, rounded up as the disruption controller does."""
    if isinstance(value, str) and value.endswith("%"):
        return -(-int(value[:-1]) * total // 100)
    return int(value)


CONTROLLERS: tuple[Callable[[Api, Store, str, Timings], Controller], ...] = (
    Kubelet,
    StatefulSetController,
    DeploymentController,
    JobController,
    EndpointSliceController,
    DisruptionController,
)


class Cluster:
    """Every simulated component over one namespace's informer cache, with one client of their own."""

    def __init__(self, api: Api, store: Store, namespace: str, timings: Timings) -> None:
        self.controllers = [make(api, store, namespace, timings) for make in CONTROLLERS]

    def on_event(self, event: Event) -> None:
        for controller in self.controllers:
            controller.on_event(event)

    def start(self) -> None:
        for controller in self.controllers:
            controller.loop.start()

    async def stop(self) -> None:
        for controller in self.controllers:
            await controller.loop.stop()

    @property
    def failures(self) -> dict[str, str]:
        """Last error of each component that failed a reconcile (retried with backoff)."""
        return {c.name: repr(c.loop.last_error) for c in self.controllers if c.loop.last_error is not None}
