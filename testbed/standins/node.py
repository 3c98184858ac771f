"""Stand-in: a node agent that does a kubelet's API work without containers.

Where hundreds of pods must start on 2 cores (the end-to-end tier's fleets and the
fleet benchmark), a real kubelet cannot keep up; the data tier runs the real node
(``realnode.py``) instead. This agent registers a Node and then, for the
pods the real scheduler binds to it, writes the statuses a kubelet would: Running
and Ready after a short delay, Job pods that succeed (or fail when told to), the
kubelet's waiting reasons for an image that cannot be pulled, a missing Secret or
ConfigMap and a crash loop, and a drain delay before a deleted pod goes. A pod keeps its
address for its life, across the agent's own restart, as its sandbox outlives a kubelet's.

It is also the cluster's volume provisioner, as kind ships one: the default
StorageClass ``standard`` (``storage_class()``, applied by the stack) binds
``WaitForFirstConsumer`` and names this agent's provisioner, ``sharddb.test/stand-in``.
So the real scheduler never rejects a shard pod for an unbound claim: it picks the
node, writes it on the claim (``volume.kubernetes.io/selected-node``) and waits; the
real persistent-volume controller then hands the claim to the provisioner it names
(``volume.kubernetes.io/storage-provisioner``), and this agent makes the volume as
rancher's local-path-provisioner does: bound to that node by its node affinity, its
claim reference, class and reclaim policy the claim's class's, named ``pvc-<claim uid>``.
The real controller binds the two, and the scheduler binds the pod. A released
volume whose policy is ``Delete`` is deleted, as that provisioner deletes it.
The agent once made a volume pre-bound to each claim of no class instead, which no
real cluster does: the scheduler then rejected each new shard pod for its unbound
claim, and retried it only at its 5-minute sweep if its own volume cache saw the
binding late.

Everything else — StatefulSets, Jobs, EndpointSlices, scheduling, binding — is the
real controllers' work.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from testbed.real.apiclient import ApiClient, events

Obj = dict[str, Any]
NODE_NAME = "node-1"
PROVISIONER = "sharddb.test/stand-in"
STORAGE_CLASS = "standard"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
# The persistent-volume controller writes both when it hands a claim to an external provisioner.
STORAGE_PROVISIONER = ("volume.kubernetes.io/storage-provisioner", "volume.beta.kubernetes.io/storage-provisioner")
log = logging.getLogger("testbed.standins.node")


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Behaviour:
    """What the node does with a pod; a test changes it to provoke a failure."""

    start_seconds: float = 0.5  # from binding to Running and Ready
    job_seconds: float = 1.0  # from Running to Succeeded, for a Job's pod
    drain_seconds: float = 1.0  # a deleted pod's preStop and shutdown, capped by its grace period
    unpullable_prefix: str = "registry.invalid/"  # images under it never pull
    crashing_images: set[str] = field(default_factory=set)  # images whose container keeps exiting 1
    failing_jobs: set[str] = field(default_factory=set)  # Job names whose pods exit 1


@dataclass
class _Pending:
    """One due action for one incarnation of a pod (its uid), ordered by time."""

    due: float
    seq: int
    key: str  # namespace/name
    uid: str
    action: str

    def __lt__(self, other: _Pending) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)


class NodeAgent:
    """Registers ``node-1`` and keeps its pods' statuses and the cluster's claims as a kubelet and provisioner would."""

    def __init__(self, url: str, token: str, ca_file: Path, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.http = ApiClient(url, token, ca_file, timeout=30.0)
        self._stop = threading.Event()
        self._lock = threading.Condition()
        self._queue: list[_Pending] = []
        self._seq = itertools.count()
        self._pods: dict[str, Obj] = {}  # namespace/name -> latest pod seen
        self._removing: set[str] = set()  # uids of pods with a removal queued
        self._ips = itertools.count(2)
        self._pod_ips: dict[str, str] = {}  # pod uid -> IP
        self._provisioned: set[str] = set()  # claim uids with a volume made (or being made) for them
        self._threads: list[threading.Thread] = []

    # --- lifecycle ----------------------------------------------------------

    def start(self) -> None:
        self._register_node()
        pods = f"/api/v1/pods?fieldSelector=spec.nodeName%3D{NODE_NAME}"
        for name, target, args in (
            ("pods", self._watch, (pods, self._on_pod)),
            ("claims", self._watch, ("/api/v1/persistentvolumeclaims", self._on_claim)),
            ("volumes", self._watch, ("/api/v1/persistentvolumes", self._on_volume)),
            ("actions", self._run_actions, ()),
        ):
            thread = threading.Thread(target=target, args=args, name=f"node-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            self._lock.notify_all()
        for thread in self._threads:
            thread.join(timeout=5)
        self.http.close()

    def _register_node(self, timeout: float = 120.0) -> None:
        """Register (again, after a restart); a kubelet keeps trying while the API server is away."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._register_once()
                return
            except (httpx.HTTPError, RuntimeError, ValueError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)

    def _register_once(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": NODE_NAME,
                "labels": {
                    "kubernetes.io/hostname": NODE_NAME,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "topology.kubernetes.io/zone": "zone-a",
                },
            },
        }
        response = self.http.post("/api/v1/nodes", json=node)
        if response.status_code not in (201, 409):
            raise RuntimeError(f"node registration failed: {response.status_code} {response.text}")
        stored = self.http.get(f"/api/v1/nodes/{NODE_NAME}").json()
        stamp = now_rfc3339()
        capacity = {"cpu": "1000", "memory": "4Ti", "pods": "2000", "ephemeral-storage": "100Ti"}
        stored["status"] = {
            "capacity": capacity,
            "allocatable": capacity,
            "addresses": [{"type": "InternalIP", "address": "10.0.1.1"}, {"type": "Hostname", "address": NODE_NAME}],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "stand-in node agent is posting ready status",
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                },
                *(
                    {
                        "type": kind,
                        "status": "False",
                        "reason": f"KubeletHas{reason}",
                        "message": "",
                        "lastHeartbeatTime": stamp,
                        "lastTransitionTime": stamp,
                    }
                    for kind, reason in (
                        ("MemoryPressure", "SufficientMemory"),
                        ("DiskPressure", "NoDiskPressure"),
                        ("PIDPressure", "SufficientPID"),
                    )
                ),
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "v1.34.4",
                "kubeProxyVersion": "",
                "containerRuntimeVersion": "none://stand-in",
                "kernelVersion": "",
                "osImage": "stand-in",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        }
        response = self.http.put(f"/api/v1/nodes/{NODE_NAME}/status", json=stored)
        if response.status_code != 200:
            raise RuntimeError(f"node status failed: {response.status_code} {response.text}")
        # A new Node gets the not-ready taint at admission; the node lifecycle controller (off here,
        # as there are no heartbeats) lifts it once the node reports Ready, and so does this agent.
        node = self.http.get(f"/api/v1/nodes/{NODE_NAME}").json()
        taints = [t for t in node["spec"].get("taints", []) if t["key"] != "node.kubernetes.io/not-ready"]
        node["spec"]["taints"] = taints
        response = self.http.put(f"/api/v1/nodes/{NODE_NAME}", json=node)
        if response.status_code != 200:
            raise RuntimeError(f"node untaint failed: {response.status_code} {response.text}")

    # --- watching -----------------------------------------------------------

    def _watch(self, path: str, handle: Callable[[str, Obj], None]) -> None:
        """List, then watch from that version; relist after any break. ``handle`` must be idempotent."""
        separator = "&" if "?" in path else "?"
        while not self._stop.is_set():
            try:
                listing = self.http.get(path).json()
                for item in listing.get("items", []):
                    handle("ADDED", item)
                version = listing["metadata"]["resourceVersion"]
                watch = f"{path}{separator}watch=1&allowWatchBookmarks=true&timeoutSeconds=30&resourceVersion={version}"
                with self.http.stream("GET", watch, timeout=httpx.Timeout(60.0, read=45.0)) as response:
                    for event in events(response):
                        if self._stop.is_set():
                            return
                        if event["type"] == "ERROR":
                            break
                        if event["type"] != "BOOKMARK":
                            handle(event["type"], event["object"])
            except (httpx.HTTPError, KeyError, ValueError) as error:
                if self._stop.is_set():
                    return
                log.debug("watch %s: %s; relisting", path, error)
                time.sleep(0.2)

    def _on_pod(self, event: str, pod: Obj) -> None:
        meta, status = pod["metadata"], pod.get("status", {})
        key, uid = f"{meta['namespace']}/{meta['name']}", meta["uid"]
        with self._lock:
            if event == "DELETED":
                if self._pods.get(key, {}).get("metadata", {}).get("uid") == uid:
                    del self._pods[key]
                self._removing.discard(uid)
                return
            known = self._pods.get(key, {}).get("metadata", {}).get("uid") == uid
            self._pods[key] = pod
            removal = bool(meta.get("deletionTimestamp")) and uid not in self._removing
            if removal:
                self._removing.add(uid)
        if meta.get("deletionTimestamp"):
            if removal:
                grace = float(meta.get("deletionGracePeriodSeconds") or 0)
                self._later(min(self.behaviour.drain_seconds, grace), pod, "remove")
        elif not status.get("startTime"):
            self._later(self.behaviour.start_seconds, pod, "start")
        elif not known and status.get("phase") not in ("Succeeded", "Failed"):
            # Started by an agent before this one (a restart): pick up where it left off, as a kubelet does.
            self._later(0.0, pod, "start")

    def _on_claim(self, event: str, claim: Obj) -> None:
        """Provision a volume for a claim handed to this provisioner on a node the scheduler chose, once."""
        uid = claim["metadata"]["uid"]
        if event == "DELETED":
            self._provisioned.discard(uid)
            return
        node = selected_node(claim)
        if node is None or uid in self._provisioned:
            return
        self._provisioned.add(uid)
        meta = claim["metadata"]
        what = f"volume for {meta['namespace']}/{meta['name']}"
        try:
            found = self.http.get(f"/apis/storage.k8s.io/v1/storageclasses/{claim['spec']['storageClassName']}")
            if found.status_code != 200 or found.json().get("provisioner") != PROVISIONER:
                log.warning(
                    "%s: class %s is not this provisioner's: %s", what, claim["spec"]["storageClassName"], found.text
                )
                return
            response = self.http.post("/api/v1/persistentvolumes", json=provisioned_volume(claim, found.json(), node))
        except httpx.HTTPError as error:
            log.debug("%s: %s; retried on the next relist", what, error)
            self._provisioned.discard(uid)
            return
        log.info("%s on %s: %s", what, node, response.status_code)
        if response.status_code not in (201, 409):  # 409: made already (by an agent before this one)
            log.warning("%s: %s", what, response.text)
            self._provisioned.discard(uid)

    def _on_volume(self, event: str, volume: Obj) -> None:
        """Delete a released volume of this provisioner's whose policy says so, as the real provisioner does."""
        if event == "DELETED" or not reclaimable(volume):
            return
        name, uid = volume["metadata"]["name"], volume["metadata"]["uid"]
        options = {"preconditions": {"uid": uid}}
        try:
            response = self.http.request("DELETE", f"/api/v1/persistentvolumes/{name}", json=options)
        except httpx.HTTPError as error:
            log.debug("delete volume %s: %s; retried on the next relist", name, error)
            return
        log.info("delete released volume %s: %s", name, response.status_code)

    # --- actions ------------------------------------------------------------

    def _later(self, delay: float, pod: Obj, action: str) -> None:
        """``action`` for this very pod (this uid) in ``delay`` seconds; never for a pod that replaces it."""
        meta = pod["metadata"]
        item = _Pending(
            time.monotonic() + delay, next(self._seq), f"{meta['namespace']}/{meta['name']}", meta["uid"], action
        )
        with self._lock:
            heapq.heappush(self._queue, item)
            self._lock.notify()

    def _run_actions(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                while not self._stop.is_set() and (not self._queue or self._queue[0].due > time.monotonic()):
                    wait = self._queue[0].due - time.monotonic() if self._queue else None
                    self._lock.wait(timeout=wait)
                if self._stop.is_set():
                    return
                item = heapq.heappop(self._queue)
                pod = acted_on(self._pods.get(item.key), item.uid, item.action)
            if pod is None:
                log.info(
                    "%s %s (uid %s): that pod is gone or not marked for deletion; dropped",
                    item.action,
                    item.key,
                    item.uid,
                )
                continue
            try:
                if item.action == "remove":
                    self._remove(pod)
                else:
                    self._advance(pod, item.action)
            except httpx.HTTPError as error:
                log.debug("%s %s: %s; retrying", item.action, item.key, error)
                self._later(0.5, pod, item.action)

    def _pod_path(self, pod: Obj) -> str:
        meta = pod["metadata"]
        return f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"

    def _remove(self, pod: Obj) -> None:
        """The kubelet's last word on a pod that has drained: delete it for good, this very pod only."""
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": pod["metadata"]["uid"]}}
        response = self.http.request("DELETE", self._pod_path(pod), json=options)
        log.info("remove %s (uid %s): %s", self._pod_path(pod), pod["metadata"]["uid"], response.status_code)
        if response.status_code not in (404, 409):  # gone already, or another pod by now: nothing left to do
            response.raise_for_status()  # the API server away: retried

    def _advance(self, pod: Obj, action: str) -> None:
        """Write the status the kubelet would have for this pod now; schedule what comes next."""
        current = self.http.get(self._pod_path(pod))
        if current.status_code == 404:
            return
        current.raise_for_status()
        stored: Obj = current.json()
        if stored["metadata"].get("deletionTimestamp") or stored["metadata"]["uid"] != pod["metadata"]["uid"]:
            return
        status, follow_up = self._status(stored, action)
        if status is None:
            return
        if _gist(status) == _gist(stored.get("status", {})):
            # A kubelet writes a pod's status only when it changes; what comes next still comes.
            if follow_up is not None:
                self._later(follow_up[0], stored, follow_up[1])
            return
        stored["status"] = kept_times(stored.get("status", {}), status)
        response = self.http.put(f"{self._pod_path(stored)}/status", json=stored)
        log.info(
            "%s %s (uid %s): %s, %s",
            action,
            self._pod_path(stored),
            stored["metadata"]["uid"],
            status.get("phase"),
            response.status_code,
        )
        if response.status_code == 409:
            self._later(0.1, stored, action)
            return
        response.raise_for_status()
        if follow_up is not None:
            delay, next_action = follow_up
            self._later(delay, stored, next_action)

    def _status(self, pod: Obj, action: str) -> tuple[Obj | None, tuple[float, str] | None]:
        spec, previous = pod["spec"], pod.get("status", {})
        if previous.get("phase") in ("Succeeded", "Failed"):
            return None, None
        stamp = now_rfc3339()
        uid = pod["metadata"]["uid"]
        with self._lock:
            if uid not in self._pod_ips:
                # Which addresses are held is needed only for a pod that has none yet (once per pod, not per status).
                held: set[str | None] = set()
                if not previous.get("podIP"):
                    held = {p.get("status", {}).get("podIP") for p in self._pods.values()} | set(self._pod_ips.values())
                self._pod_ips[uid] = pod_address(previous, self._ips, held)
            ip = self._pod_ips[uid]
        job = next((ref["name"] for ref in pod["metadata"].get("ownerReferences", []) if ref["kind"] == "Job"), None)
        waiting = self._waiting(pod)
        base: Obj = {
            "hostIP": "10.0.1.1",
            "hostIPs": [{"ip": "10.0.1.1"}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": previous.get("startTime") or stamp,
            "qosClass": previous.get("qosClass", "BestEffort"),
        }
        scheduled = [c for c in previous.get("conditions", []) if c["type"] == "PodScheduled"]

        def conditions(ready: bool, done: bool = False) -> list[Obj]:
            flag = "True" if ready else "False"
            reason = {} if ready else {"reason": "PodCompleted" if done else "ContainersNotReady"}
            return [
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": stamp},
                {"type": "Initialized", "status": "True", "lastTransitionTime": stamp},
                {"type": "Ready", "status": flag, "lastTransitionTime": stamp, **reason},
                {"type": "ContainersReady", "status": flag, "lastTransitionTime": stamp, **reason},
                *scheduled,
            ]

        def containers(state: Obj, ready: bool, restarts: int = 0) -> list[Obj]:
            return [
                {
                    "name": c["name"],
                    "image": c["image"],
                    "imageID": "",
                    "ready": ready,
                    "started": ready,
                    "restartCount": restarts,
                    "state": state,
                }
                for c in spec["containers"]
            ]

        if waiting is not None:
            reason, message = waiting
            if reason == "CrashLoopBackOff":
                crashed = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": stamp, "finishedAt": stamp}}
                status = {
                    **base,
                    "phase": "Running",
                    "conditions": conditions(False),
                    "containerStatuses": [
                        {**s, "lastState": crashed}
                        for s in containers({"waiting": {"reason": reason, "message": message}}, False, 3)
                    ],
                }
                return status, None
            status = {
                **base,
                "phase": "Pending",
                "conditions": conditions(False),
                "containerStatuses": containers({"waiting": {"reason": reason, "message": message}}, False),
            }
            # The kubelet retries; a Secret created later lets the pod start.
            return status, (1.0, "start")
        if job is not None and action == "finish":
            failed = job in self.behaviour.failing_jobs
            ended = {
                "terminated": {
                    "exitCode": 1 if failed else 0,
                    "reason": "Error" if failed else "Completed",
                    "startedAt": base["startTime"],
                    "finishedAt": stamp,
                }
            }
            status = {
                **base,
                "phase": "Failed" if failed else "Succeeded",
                "conditions": conditions(False, done=True),
                "containerStatuses": containers(ended, False),
            }
            return status, None
        running = {"running": {"startedAt": stamp}}
        status = {
            **base,
            "phase": "Running",
            "conditions": conditions(True),
            "containerStatuses": containers(running, True),
        }
        return status, ((self.behaviour.job_seconds, "finish") if job is not None else None)

    def _waiting(self, pod: Obj) -> tuple[str, str] | None:
        """Why the kubelet could not start this pod's containers, if it could not."""
        namespace = pod["metadata"]["namespace"]
        for container in pod["spec"]["containers"]:
            image = container["image"]
            if image.startswith(self.behaviour.unpullable_prefix):
                return "ImagePullBackOff", f'Back-off pulling image "{image}"'
            for reference in self._references(container):
                kind, name, key = reference
                if not self._exists(namespace, kind, name, key):
                    what = "secret" if kind == "secrets" else "configmap"
                    return "CreateContainerConfigError", f'{what} "{name}" not found'
            if image in self.behaviour.crashing_images:
                return "CrashLoopBackOff", f"back-off 40s restarting failed container={container['name']}"
        return None

    @staticmethod
    def _references(container: Obj) -> list[tuple[str, str, str | None]]:
        """The Secrets and ConfigMaps a container's environment needs (optional ones left out)."""
        found: list[tuple[str, str, str | None]] = []
        for variable in container.get("env") or []:
            source = variable.get("valueFrom") or {}
            for field_name, kind in (("secretKeyRef", "secrets"), ("configMapKeyRef", "configmaps")):
                ref = source.get(field_name)
                if ref and not ref.get("optional"):
                    found.append((kind, ref["name"], ref.get("key")))
        for source in container.get("envFrom") or []:
            for field_name, kind in (("secretRef", "secrets"), ("configMapRef", "configmaps")):
                ref = source.get(field_name)
                if ref and not ref.get("optional"):
                    found.append((kind, ref["name"], None))
        return found

    def _exists(self, namespace: str, kind: str, name: str, key: str | None) -> bool:
        response = self.http.get(f"/api/v1/namespaces/{namespace}/{kind}/{name}")
        if response.status_code != 200:
            return False
        return (
            key is None
            or key in (response.json().get("data") or {})
            or key in (response.json().get("stringData") or {})
        )


def storage_class() -> Obj:
    """The cluster's default StorageClass, as kind ships its ``standard``, naming this agent's provisioner."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }


def selected_node(claim: Obj) -> str | None:
    """The node to provision ``claim``'s volume on, if this provisioner is to provision it now.

    As the external-provisioner library decides: the claim is still unbound, the
    persistent-volume controller has handed it to this provisioner, and the scheduler has
    chosen its node (a node-bound volume cannot be made before that).
    """
    meta, spec = claim["metadata"], claim["spec"]
    annotations = meta.get("annotations") or {}
    if spec.get("volumeName") or meta.get("deletionTimestamp") or not spec.get("storageClassName"):
        return None
    named = next((annotations[key] for key in STORAGE_PROVISIONER if key in annotations), None)
    node = annotations.get(SELECTED_NODE)
    return node if named == PROVISIONER and node else None


def provisioned_volume(claim: Obj, storage_class: Obj, node: str) -> Obj:
    """The volume rancher's local-path-provisioner makes for ``claim`` on ``node``, with the library's additions.

    Its name, claim reference, class and ``provisioned-by`` annotation come from the
    external-provisioner library; its node affinity (the node's hostname, which on this
    agent's node is its name), capacity, access modes and host path from the provisioner.
    """
    meta, spec = claim["metadata"], claim["spec"]
    name = f"pvc-{meta['uid']}"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER}},
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": spec["storageClassName"],
            "volumeMode": "Filesystem",
            "hostPath": {
                "path": f"/var/lib/stand-in/{name}_{meta['namespace']}_{meta['name']}",
                "type": "DirectoryOrCreate",
            },
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
                    ]
                }
            },
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "resourceVersion": meta.get("resourceVersion", ""),
            },
        },
    }


def reclaimable(volume: Obj) -> bool:
    """A volume of this provisioner's, released by its claim, whose policy is ``Delete`` and not yet deleted."""
    meta = volume["metadata"]
    return (
        (meta.get("annotations") or {}).get(PROVISIONED_BY) == PROVISIONER
        and not meta.get("deletionTimestamp")
        and volume.get("status", {}).get("phase") == "Released"
        and volume["spec"].get("persistentVolumeReclaimPolicy") == "Delete"
    )


def acted_on(pod: Obj | None, uid: str, action: str) -> Obj | None:
    """The pod a due action is for: the very incarnation it was queued for, and a removal only once it is marked.

    A kubelet finalizes only a pod whose own ``deletionTimestamp`` is set; a pod that has
    taken the name of one that went is another pod, and a removal queued for the old one
    is not for it.
    """
    if pod is None or pod["metadata"]["uid"] != uid:
        return None
    if action == "remove" and not pod["metadata"].get("deletionTimestamp"):
        return None
    return pod


def pod_address(previous: Obj, counter: Iterator[int], held: set[str | None]) -> str:
    """A pod's IP: the one it has (its sandbox outlives a kubelet's restart), else the next one no pod holds."""
    if previous.get("podIP"):
        return str(previous["podIP"])
    while (address := f"10.244.{(n := next(counter)) // 250}.{n % 250 + 1}") in held:
        pass
    return address


def kept_times(previous: Obj, status: Obj) -> Obj:
    """``status`` with the times that did not move: a kubelet keeps a condition's ``lastTransitionTime``
    while its status holds, and a running container's ``startedAt`` while it runs."""
    held = {c["type"]: c for c in previous.get("conditions", [])}
    statuses = previous.get("containerStatuses", [])
    running = {c["name"]: c["state"]["running"] for c in statuses if "running" in c.get("state", {})}

    def condition(c: Obj) -> Obj:
        before = held.get(c["type"])
        if before is None or before.get("status") != c["status"] or "lastTransitionTime" not in before:
            return c
        return {**c, "lastTransitionTime": before["lastTransitionTime"]}

    def container(c: Obj) -> Obj:
        if "running" not in c.get("state", {}) or c["name"] not in running:
            return c
        return {**c, "state": {"running": dict(running[c["name"]])}}

    kept = {**status, "conditions": [condition(c) for c in status.get("conditions", [])]}
    if "containerStatuses" in status:
        kept["containerStatuses"] = [container(c) for c in status["containerStatuses"]]
    return kept


def _gist(status: Obj) -> tuple[Any, ...]:
    """What a status says, without its times: equal gists need no write."""
    containers = tuple(
        (c.get("name"), c.get("ready"), json.dumps({k: v.get("reason") for k, v in c.get("state", {}).items()}))
        for c in status.get("containerStatuses", [])
    )
    conditions = tuple(sorted((c["type"], c["status"]) for c in status.get("conditions", [])))
    return status.get("phase"), status.get("podIP"), containers, conditions
