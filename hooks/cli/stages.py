"""A ShardDB walked offline through its lifecycle for the preview: each stage's world is the hooks' own
earlier answers, stored as the API server would once the controllers have done their part.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from .. import handler, kinds, names
from ..clock import Clock, rfc3339, system_clock

Obj = dict[str, Any]

# In lifecycle order; each stage is the one before it plus what the controllers do next.
STAGES = ("new", "ready", "available", "deleting")
DEFAULT_STAGE = "available"
DEFAULT_NAMESPACE = "default"  # what kubectl uses for a manifest without one


@dataclass(frozen=True)
class Preview:
    """What the hooks answer for one ShardDB at one stage."""

    name: str
    namespace: str
    stage: str
    children: list[Obj]
    status: Obj


class _World:
    """What Metacontroller would send for one ShardDB: the parent, its children as stored, pods, endpoints."""

    def __init__(self, parent: Obj, now: Clock) -> None:
        self.parent = parent
        self.now = now
        self.children: dict[str, dict[str, Obj]] = {}
        self.pods: dict[str, Obj] = {}
        self.slices: dict[str, Obj] = {}
        self.finalizing = False

    @property
    def name(self) -> str:
        return str(self.parent["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.parent["metadata"]["namespace"])

    def _key(self, name: str) -> str:
        return f"{self.namespace}/{name}"

    def stored(self, kind: kinds.Kind, name: str) -> Obj | None:
        return self.children.get(kind.group_key, {}).get(self._key(name))

    def sync(self) -> Obj:
        """One hook call on the world as it stands, its answer applied as Metacontroller would."""
        request = {
            "parent": self.parent,
            "children": self.children,
            "related": {kinds.ENDPOINTSLICE.group_key: self.slices, kinds.POD.group_key: self.pods},
            "finalizing": self.finalizing,
        }
        body = json.dumps(request).encode()
        answer = handler.sync(body, finalize=self.finalizing, now=self.now).body
        self._apply(answer)
        return answer

    def _apply(self, answer: Obj) -> None:
        """Desired children are stored (keeping what their controllers reported); the rest are gone."""
        desired: dict[str, dict[str, Obj]] = {}
        for child in answer["children"]:
            key = self._key(child["metadata"]["name"])
            group = kinds.BY_KIND[child["kind"]].group_key
            before = self.children.get(group, {}).get(key, {})
            stored = copy.deepcopy(child)
            stored["metadata"] = {**stored["metadata"], "namespace": self.namespace, "generation": 1}
            stored["status"] = before.get("status", {})
            desired.setdefault(group, {})[key] = stored
        self.children = desired
        self.parent["status"] = {**answer["status"], "observedGeneration": self.parent["metadata"]["generation"]}

    def _pod(self, name: str, component: str) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": names.labels(self.name, component)},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }

    def shards_ready(self) -> None:
        """The StatefulSet controller: every replica on the latest template, running and ready."""
        sts = self.stored(kinds.STATEFULSET, names.db_name(self.name))
        if sts is None:  # a paused ShardDB creates nothing
            return
        replicas = sts["spec"]["replicas"]
        revision = f"{names.db_name(self.name)}-preview"
        sts["status"] = {
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "currentReplicas": replicas,
            "updatedReplicas": replicas,
            "observedGeneration": 1,
            "currentRevision": revision,
            "updateRevision": revision,
        }
        for ordinal in range(replicas):
            pod = names.shard_pod_name(self.name, ordinal)
            self.pods[self._key(pod)] = self._pod(pod, names.DB)

    def seeds_done(self) -> None:
        """The Job controller: every seed Job has completed."""
        for job in self.children.get(kinds.JOB.group_key, {}).values():
            job["status"] = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}

    def shards_registered(self) -> None:
        """The EndpointSlice controller: every shard pod a ready endpoint of the headless Service."""
        service = names.db_name(self.name)
        endpoints = [
            {
                "conditions": {"ready": True},
                "hostname": pod["metadata"]["name"],
                "targetRef": {"kind": "Pod", "name": pod["metadata"]["name"]},
            }
            for pod in self.pods.values()
            if pod["metadata"]["labels"][names.COMPONENT_LABEL] == names.DB
        ]
        slice_name = f"{service}-preview"
        self.slices = {
            self._key(slice_name): {
                "apiVersion": kinds.ENDPOINTSLICE.api_version,
                "kind": kinds.ENDPOINTSLICE.kind,
                "metadata": {
                    "name": slice_name,
                    "namespace": self.namespace,
                    "labels": {names.SERVICE_NAME_LABEL: service},
                },
                "endpoints": endpoints,
            }
        }

    def cache_ready(self) -> None:
        """The Deployment controller: every cache replica on the latest template, running and ready."""
        cache = self.stored(kinds.DEPLOYMENT, names.cache_name(self.name))
        if cache is None:
            return
        replicas = cache["spec"]["replicas"]
        cache["status"] = {
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "updatedReplicas": replicas,
            "observedGeneration": 1,
            "conditions": [{"type": "Available", "status": "True"}],
        }
        for index in range(replicas):
            pod = f"{names.cache_name(self.name)}-preview-{index}"
            self.pods[self._key(pod)] = self._pod(pod, names.CACHE)

    def delete(self) -> None:
        """``kubectl delete``: Metacontroller calls the finalize hook from now on."""
        self.finalizing = True
        self.parent["metadata"]["deletionTimestamp"] = rfc3339(self.now())


def preview(manifest: Obj, stage: str = DEFAULT_STAGE, now: Clock = system_clock) -> Preview:
    """The hooks' answer for one ShardDB manifest at ``stage``; ``hooks.errors.HookError`` if they refuse it."""
    if stage not in STAGES:
        raise ValueError(f"stage {stage!r} is not one of {', '.join(STAGES)}")
    parent = copy.deepcopy(manifest)
    metadata = parent.get("metadata")
    if isinstance(metadata, dict):  # anything else is for the hook to refuse, naming the field
        metadata["namespace"] = metadata.get("namespace") or DEFAULT_NAMESPACE
        metadata.setdefault("generation", 1)
    world = _World(parent, now)
    answer = world.sync()  # new: nothing observed
    if stage != "new":
        world.shards_ready()
        answer = world.sync()  # ready: every shard ready, the seed asked for
    if stage in ("available", "deleting"):
        world.seeds_done()
        world.shards_registered()
        world.sync()  # gates open: the cache is asked for
        world.cache_ready()
        answer = world.sync()
    if stage == "deleting":
        world.delete()
        answer = world.sync()
    children = [_with_namespace(child, world.namespace) for child in answer["children"]]
    return Preview(world.name, world.namespace, stage, children, answer["status"])


def _with_namespace(child: Obj, namespace: str) -> Obj:
    """Where Metacontroller creates it: the ShardDB's namespace (placed after the name, for reading)."""
    meta = child["metadata"]
    placed = {"name": meta["name"], "namespace": namespace, **{k: v for k, v in meta.items() if k != "name"}}
    return {**child, "metadata": placed}
