"""A ShardDB walked offline through its lifecycle for the preview: each stage's world is the hooks' own
earlier answers, stored as the API server would once the controllers have done their part.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

from .. import handler, kinds, names
from ..clock import Clock, system_clock
from .world import Obj, World

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


class _PreviewWorld(World):
    """The shared world, with controllers that do their part at once and completely: the preview shows each stage
    as reached, not the way there."""

    def sync(self) -> Obj:
        """One hook call on the world as it stands, its answer applied as Metacontroller would."""
        return self.step(self._hook)

    def _hook(self, request: Obj, finalizing: bool) -> Obj:
        """The decision itself, as the service calls it (``finalizing`` picks the finalize hook)."""
        return handler.sync(json.dumps(request).encode(), finalize=finalizing, now=self.now).body

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
            self.pods[pod] = self._pod(pod, names.DB)

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
            slice_name: {
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
            self.pods[pod] = self._pod(pod, names.CACHE)


def preview(manifest: Obj, stage: str = DEFAULT_STAGE, now: Clock = system_clock) -> Preview:
    """The hooks' answer for one ShardDB manifest at ``stage``; ``hooks.errors.HookError`` if they refuse it."""
    if stage not in STAGES:
        raise ValueError(f"stage {stage!r} is not one of {', '.join(STAGES)}")
    parent = copy.deepcopy(manifest)
    metadata = parent.get("metadata")
    if isinstance(metadata, dict):  # anything else is for the hook to refuse, naming the field
        metadata["namespace"] = metadata.get("namespace") or DEFAULT_NAMESPACE
        metadata.setdefault("generation", 1)
    world = _PreviewWorld(parent, now)
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
