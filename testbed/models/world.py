"""Model: the cluster around the hooks, small and honest: it builds Metacontroller's requests, for tests and benchmarks.

The world itself (the request Metacontroller builds, a round, the status it stores,
a deletion) is ``hooks.cli.world``'s, the one the offline preview walks; this adds
what tests need on top. It keeps objects shaped as the API server returns them
(uids, managedFields, defaulted specs, status) and applies an answer's children
the way Metacontroller does: create what is new, update what is listed, delete
what is left out. Controllers (StatefulSet, Deployment, Job, EndpointSlice) are
simulated by explicit steps so a test says exactly which event happens when.
"""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from hooks import kinds
from hooks.cli import world as model
from testbed.models.metacontroller import LAST_APPLIED, serialize

# The model's names, under which the tests and the benchmarks import them from here.
Obj = model.Obj
Hook = model.Hook

GROUP_KEYS = {kind.kind: kind.group_key for kind in kinds.CHILDREN}
CREATED = "2026-01-01T00:00:00Z"
DELETED = datetime(2026, 1, 2, tzinfo=UTC)  # when ``delete()`` marks the parent, a day after CREATED


def _revision(template: Obj) -> str:
    """A stand-in for the controller's revision hash: changes exactly when the template does."""
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


def _uid(*parts: str) -> str:
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def sharddb(name: str = "demo", namespace: str = "default", **spec: Any) -> Obj:
    """A ShardDB parent as stored: spec defaults filled in like the CRD does."""
    body: Obj = {"shards": 3, "dbImage": "postgres:16", "cache": {"image": "redis:7", "replicas": 2}}
    body.update(spec)
    return {
        "apiVersion": "mygroup.example.com/v1alpha1",
        "kind": "ShardDB",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": _uid("parent", namespace, name),
            "generation": 1,
            "resourceVersion": "1",
            "creationTimestamp": CREATED,
            "finalizers": ["metacontroller.io/compositecontroller-sharddb"],
        },
        "spec": body,
    }


# Ways a pod cannot start, in the shapes the kubelet and the scheduler write them.
FAILURES = (
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CrashLoopBackOff",
    "crashed, running again, not ready",
    "CreateContainerConfigError",
    "Unschedulable",
)


def failed_status(failure: str, container: str, image: str, since: str = CREATED) -> Obj:
    """A pod status that is not getting better: ``failure`` is one of ``FAILURES``.

    ``since`` is when the scheduler placed the pod, or found no place for it (the ``PodScheduled``
    condition's last transition): a trouble that can pass by itself counts from then.
    """
    if failure == "Unschedulable":
        message = "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available."
        scheduled = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastTransitionTime": since,
        }
        return {"phase": "Pending", "conditions": [scheduled]}
    crashed = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": CREATED, "finishedAt": CREATED}}
    if failure == "crashed, running again, not ready":
        state: Obj = {"running": {"startedAt": CREATED}}
    elif failure == "CrashLoopBackOff":
        state = {"waiting": {"reason": failure, "message": "back-off 40s restarting failed container"}}
    elif failure == "CreateContainerConfigError":
        state = {"waiting": {"reason": failure, "message": 'secret "pg-auth" not found'}}
    else:
        state = {"waiting": {"reason": failure, "message": f'Back-off pulling image "{image}": not found'}}
    restarts = 3 if "rash" in failure else 0
    status = {
        "name": container,
        "image": image,
        "imageID": "",
        "ready": False,
        "restartCount": restarts,
        "started": False,
        "state": state,
        "lastState": crashed if restarts else {},
    }
    return {
        "phase": "Running" if restarts else "Pending",
        "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": since},
        ],
        "containerStatuses": [status],
    }


def _pod_spec(component: str, image: str) -> Obj:
    """A pod's spec as the API server defaults it, scheduled on the one node."""
    return {
        "containers": [
            {
                "name": component,
                "image": image,
                "ports": [{"containerPort": 5432 if component == "db" else 6379, "protocol": "TCP"}],
                "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
                "volumeMounts": [
                    {
                        "name": "kube-api-access",
                        "readOnly": True,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    }
                ],
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "nodeName": "node-1",
        "schedulerName": "default-scheduler",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        ],
    }


def _pod_status(component: str, ready: bool, image: str) -> Obj:
    """A running pod's status as the kubelet writes it, its one container ``ready`` or not."""
    return {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": CREATED},
            {"type": "ContainersReady", "status": "True" if ready else "False", "lastTransitionTime": CREATED},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": CREATED},
        ],
        "hostIP": "10.0.0.1",
        "podIP": "10.1.0.1",
        "podIPs": [{"ip": "10.1.0.1"}],
        "startTime": CREATED,
        "containerStatuses": [
            {
                "name": component,
                "ready": ready,
                "restartCount": 0,
                "image": image,
                "imageID": f"docker.io/library/{image}@sha256:{'0' * 64}",
                "containerID": f"containerd://{'1' * 64}",
                "started": True,
                "state": {"running": {"startedAt": CREATED}},
            }
        ],
        "qosClass": "BestEffort",
    }


class World(model.World):
    """The shared world for one ShardDB, its objects shaped as the API server returns them; ``request()`` and
    ``apply()`` close the loop."""

    def __init__(self, parent: Obj | None = None, hook_version: str = "v2") -> None:
        super().__init__(parent or sharddb(), now=lambda: DELETED)
        self.hook_version = hook_version
        self._rv = 100
        self.deleted: list[str] = []

    # --- identities -----------------------------------------------------

    def _key(self, name: str) -> str:
        """Metacontroller keys objects by bare name for hook version v1."""
        return name if self.hook_version == "v1" else super()._key(name)

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def child(self, kind: str, name: str) -> Obj | None:
        return self.stored(kinds.BY_KIND[kind], name)

    def statefulset(self) -> Obj | None:
        return self.child("StatefulSet", f"{self.name}-db")

    def cache(self) -> Obj | None:
        return self.child("Deployment", f"{self.name}-cache")

    def job(self, shards: int) -> Obj | None:
        return self.child("Job", f"{self.name}-seed-{shards}")

    def jobs(self) -> list[Obj]:
        return list(self.children.get(GROUP_KEYS["Job"], {}).values())

    # --- Metacontroller applying an answer ---------------------------------

    def store(self, desired: model.Children) -> None:
        """As the API server does: create what is new, update in place (Jobs are OnDelete), delete the rest."""
        for group, observed in list(self.children.items()):
            for key in list(observed):
                if key not in desired.get(group, {}):
                    self.deleted.append(f"{group}:{key}")
                    del observed[key]
        for group, objs in desired.items():
            for key, obj in objs.items():
                current = self.children.setdefault(group, {}).get(key)
                if current is None:
                    self.children[group][key] = self._create(obj)
                elif obj["kind"] != "Job":  # Jobs are OnDelete: never updated in place
                    self._update(current, obj)

    def _create(self, desired: Obj) -> Obj:
        obj = copy.deepcopy(desired)
        meta = obj["metadata"]
        meta.setdefault("annotations", {})[LAST_APPLIED] = serialize(desired)
        meta.update(
            namespace=self.namespace,
            uid=_uid(obj["kind"], self.namespace, meta["name"]),
            resourceVersion=self._next_rv(),
            generation=1,
            creationTimestamp=CREATED,
            ownerReferences=[
                {
                    "apiVersion": self.parent["apiVersion"],
                    "kind": "ShardDB",
                    "name": self.name,
                    "uid": self.parent["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            managedFields=[
                {
                    "manager": "metacontroller",
                    "operation": "Update",
                    "apiVersion": obj["apiVersion"],
                    "time": CREATED,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {".": {}}},
                }
            ],
        )
        kind = obj["kind"]
        if kind == "StatefulSet":
            obj["spec"].setdefault("revisionHistoryLimit", 10)
            obj["spec"]["template"]["spec"].setdefault("restartPolicy", "Always")
            obj["spec"]["template"]["spec"].setdefault("dnsPolicy", "ClusterFirst")
            for claim in obj["spec"]["volumeClaimTemplates"]:
                claim.update(apiVersion="v1", kind="PersistentVolumeClaim")
                claim["spec"].setdefault("volumeMode", "Filesystem")
            obj["status"] = {"replicas": 0, "availableReplicas": 0, "observedGeneration": 1}
        elif kind == "Deployment":
            obj["spec"].setdefault("revisionHistoryLimit", 10)
            obj["spec"].setdefault("progressDeadlineSeconds", 600)
            obj["status"] = {"observedGeneration": 1}
        elif kind == "Job":
            obj["spec"].setdefault("completions", 1)
            obj["spec"].setdefault("parallelism", 1)
            obj["status"] = {"active": 1, "startTime": CREATED}
        elif kind == "Service":
            obj["spec"].update(clusterIPs=["None"], type="ClusterIP", sessionAffinity="None")
            obj["status"] = {"loadBalancer": {}}
        return obj

    def _update(self, current: Obj, desired: Obj) -> None:
        def merge(into: Obj, patch: Obj) -> None:
            for key, value in patch.items():
                if isinstance(value, dict) and isinstance(into.get(key), dict):
                    merge(into[key], value)
                else:
                    into[key] = copy.deepcopy(value)

        before = copy.deepcopy(current.get("spec"))
        merge(current, {k: v for k, v in desired.items() if k != "status"})
        current["metadata"].setdefault("annotations", {})[LAST_APPLIED] = serialize(desired)
        if current.get("spec") != before:
            current["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
        current["metadata"]["resourceVersion"] = self._next_rv()

    # --- the parent's own life ----------------------------------------------

    def edit_spec(self, **changes: Any) -> None:
        self.parent["spec"].update(changes)
        self.parent["metadata"]["generation"] += 1

    # --- controllers, one explicit step at a time -------------------------------

    def _pod(self, name: str, component: str, ready: bool, image: str) -> Obj:
        """A pod as the API server returns it: the kubelet's managedFields, a defaulted spec, its status."""
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "uid": _uid("pod", self.namespace, name),
                "resourceVersion": self._next_rv(),
                "creationTimestamp": CREATED,
                "labels": {
                    "app.kubernetes.io/name": "sharddb",
                    "app.kubernetes.io/instance": self.name,
                    "app.kubernetes.io/component": component,
                    "app.kubernetes.io/part-of": "sharddb",
                    "app.kubernetes.io/managed-by": "metacontroller",
                },
                "managedFields": [
                    {
                        "manager": "kubelet",
                        "operation": "Update",
                        "apiVersion": "v1",
                        "time": CREATED,
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:status": {"f:conditions": {}}},
                        "subresource": "status",
                    }
                ],
            },
            "spec": _pod_spec(component, image),
            "status": _pod_status(component, ready, image),
        }

    def run_statefulset(self, ready: int | None = None) -> None:
        """Shard pods exist for every replica on the latest template; the first ``ready`` of them are ready."""
        sts = self.statefulset()
        if sts is None:
            return
        replicas = sts["spec"]["replicas"]
        self.roll_statefulset(updated=replicas, ready=replicas if ready is None else min(ready, replicas))

    def roll_statefulset(self, updated: int, ready: int | None = None) -> None:
        """A rolling update part way: ``updated`` shards (highest ordinals) on the latest template.

        By default the shard being replaced is the one not ready; the revision becomes
        current only once every shard is updated and ready, as the StatefulSet controller does.
        """
        sts = self.statefulset()
        assert sts is not None
        replicas = sts["spec"]["replicas"]
        revision = f"{self.name}-db-{_revision(sts['spec']['template'])}"
        previous = sts.get("status", {}).get("currentRevision", revision)
        if ready is None:
            ready = replicas if updated >= replicas else replicas - 1
        image = sts["spec"]["template"]["spec"]["containers"][0]["image"]
        for pod in [p for p in self.pods if p.startswith(f"{self.name}-db-")]:
            if int(pod.rsplit("-", 1)[1]) >= replicas:
                del self.pods[pod]
        for ordinal in range(replicas):
            name = f"{self.name}-db-{ordinal}"
            self.pods[name] = self._pod(name, "db", ordinal < ready, image)
        done = updated >= replicas and ready >= replicas
        sts["status"] = {
            "replicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "currentReplicas": replicas if done else replicas - updated,
            "updatedReplicas": updated,
            "observedGeneration": sts["metadata"].get("generation", 1),
            "currentRevision": revision if done else previous,
            "updateRevision": revision,
            "collisionCount": 0,
        }
        self.publish_endpoints()

    def publish_endpoints(self, only: set[int] | None = None, ready_unset: bool = False) -> None:
        """The EndpointSlice controller: ready shard pods become ready endpoints."""
        endpoints = []
        for name in sorted(self.pods):
            pod = self.pods[name]
            if pod["metadata"]["labels"]["app.kubernetes.io/component"] != "db":
                continue
            ordinal = int(name.rsplit("-", 1)[1])
            ready = pod["status"]["conditions"][0]["status"] == "True"
            if only is not None and ordinal not in only:
                continue
            conditions = {} if ready_unset else {"ready": ready, "serving": ready, "terminating": False}
            endpoints.append(
                {
                    "addresses": [f"10.1.{ordinal // 250}.{ordinal % 250 + 1}"],
                    "conditions": conditions,
                    "hostname": name,
                    "nodeName": "node-1",
                    "targetRef": {
                        "kind": "Pod",
                        "name": name,
                        "namespace": self.namespace,
                        "uid": pod["metadata"]["uid"],
                    },
                }
            )
        slice_name = f"{self.name}-db-abcde"
        self.slices = {
            slice_name: {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": slice_name,
                    "namespace": self.namespace,
                    "uid": _uid("slice", self.namespace, slice_name),
                    "resourceVersion": self._next_rv(),
                    "generateName": f"{self.name}-db-",
                    "labels": {
                        "kubernetes.io/service-name": f"{self.name}-db",
                        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                        "service.kubernetes.io/headless": "",
                    },
                },
                "addressType": "IPv4",
                "endpoints": endpoints,
                "ports": [{"name": "db", "port": 5432, "protocol": "TCP"}],
            }
        }

    def finish_job(self, shards: int, succeeded: bool = True) -> None:
        job = self.job(shards)
        assert job is not None, f"no seed Job for {shards} shards"
        kind = "Complete" if succeeded else "Failed"
        job["status"] = {
            "startTime": CREATED,
            "completionTime": CREATED,
            "succeeded": 1 if succeeded else 0,
            "failed": 0 if succeeded else 7,
            "active": 0,
            "conditions": [
                {"type": "SuccessCriteriaMet" if succeeded else "FailureTarget", "status": "True"},
                {"type": kind, "status": "True", "lastProbeTime": CREATED, "lastTransitionTime": CREATED},
            ],
        }

    def run_cache(self, ready: int | None = None, updated: int | None = None) -> None:
        """Cache pods follow the Deployment's replicas: ``ready`` of them ready, ``updated`` on the latest template."""
        deployment = self.cache()
        if deployment is None:
            return
        replicas = deployment["spec"]["replicas"]
        ready = replicas if ready is None else min(ready, replicas)
        updated = replicas if updated is None else min(updated, replicas)
        image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        for pod in [p for p in self.pods if p.startswith(f"{self.name}-cache-")]:
            del self.pods[pod]
        for index in range(replicas):
            name = f"{self.name}-cache-7c9f-{index}"
            self.pods[name] = self._pod(name, "cache", index < ready, image)
        deployment["status"] = {
            "observedGeneration": deployment["metadata"].get("generation", 1),
            "replicas": replicas,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "conditions": [{"type": "Available", "status": "True" if ready >= replicas else "False"}],
        }

    def terminate_pods(self, component: str) -> list[str]:
        """Mark pods of a component Terminating (still present, maybe still flushing)."""
        names = self._pods_of(component)
        for name in names:
            self.pods[name]["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:10Z"
        return names

    def _pods_of(self, component: str) -> list[str]:
        return [n for n, p in self.pods.items() if p["metadata"]["labels"]["app.kubernetes.io/component"] == component]

    def fail_pod(self, name: str, failure: str, since: str | None = None) -> None:
        """The pod ``name`` cannot start, as the kubelet or scheduler reports it (one of ``FAILURES``).

        With ``since`` the pod is new: created then, and placed (or found no place) then.
        """
        pod = self.pods[name]
        container = pod["spec"]["containers"][0]
        if since is not None:
            pod["metadata"]["creationTimestamp"] = since
        pod["status"] = failed_status(failure, container["name"], container["image"], since or CREATED)
        pod["metadata"]["resourceVersion"] = self._next_rv()

    def run_seed_pod(self, shards: int, failure: str | None = None) -> str:
        """The Job controller's pod for the seed Job of ``shards``: running, or stuck with ``failure``."""
        job = self.job(shards)
        assert job is not None, f"no seed Job for {shards} shards"
        name = f"{job['metadata']['name']}-x7k2p"
        image = job["spec"]["template"]["spec"]["containers"][0]["image"]
        self.pods[name] = self._pod(name, "seed", False, image)
        if failure is not None:
            self.fail_pod(name, failure)
        return name

    def remove_pods(self, component: str) -> None:
        for name in self._pods_of(component):
            del self.pods[name]
        if component == "db":
            self.publish_endpoints()


def step(world: World, hook: Hook) -> Obj:
    """One Metacontroller round (``World.step``), kept as the function the tests and benchmarks call."""
    return world.step(hook)


def bring_up(world: World, hook: Hook, max_rounds: int = 20) -> Obj:
    """Let every controller do its job until the ShardDB reports Available."""
    for _ in range(max_rounds):
        answer = step(world, hook)
        if answer["status"]["phase"] == "Available":
            return answer
        world.run_statefulset()
        for job in world.jobs():
            if not job["status"].get("conditions"):
                world.finish_job(int(job["metadata"]["name"].rsplit("-", 1)[1]))
        world.run_cache()
    raise AssertionError(f"not Available after {max_rounds} rounds: {world.parent.get('status')}")


def tear_down(world: World, hook: Hook, max_rounds: int = 20) -> list[str]:
    """Delete the ShardDB and play controllers until finalized; returns the phases seen."""
    world.delete()
    phases: list[str] = []
    for _ in range(max_rounds):
        answer = step(world, hook)
        phases.append(answer["status"]["phase"])
        if world.finalized:
            return phases
        world.run_cache()
        world.run_statefulset()
    raise AssertionError(f"not finalized after {max_rounds} rounds: phases {phases}")
