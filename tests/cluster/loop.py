"""The hook loop against a real API server: Metacontroller's write path, World's controllers.

A fast stand-in for the cluster tier (the end-to-end tier runs the real
Metacontroller): this module does what Metacontroller does with a sync answer,
against the real API server: create new children (namespace,
owner reference, ``controller-uid`` label, last-applied annotation), update
existing ones in place the way its dynamic apply does (three-way merge of
desired over observed, then a PUT), delete children left out, and write the
returned status through the /status subresource when it differs.
``testbed.models.world.World`` plays the controllers, step by step as a test says
(StatefulSet, Job, Deployment, EndpointSlice): its children are the real
stored objects, with only their ``status`` simulated.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from hooks import handler, kinds
from hooks.clock import Clock, system_clock
from testbed.models.metacontroller import FINALIZER, apply_update, desired_as_sent, difference, for_create
from testbed.models.world import World

from ..support.kube import Kube, error_message, path

Obj = dict[str, Any]

# Kinds Metacontroller updates in place (the CompositeController's strategies).
IN_PLACE = frozenset(kind.kind for kind in kinds.CHILDREN if kind.update == "InPlace")


def hook(request: Obj, finalize: bool, now: Clock = system_clock) -> Obj:
    """The real hook code, from JSON bytes to answer body."""
    return handler.sync(json.dumps(request).encode(), finalize=finalize, now=now).body


@dataclass
class Loop:
    """One ShardDB in one namespace, driven round by round through the real API server."""

    kube: Kube
    namespace: str
    name: str = "demo"
    world: World = field(init=False)
    answers: list[Obj] = field(default_factory=list)
    status_writes: int = 0
    # Every in-place update sent, as (kind, name, what differed): a no-op one is a bug.
    updates: list[tuple[str, str, list[str]]] = field(default_factory=list)
    clock: Clock = system_clock  # what the hook reads as now; a test may set it

    def create(self, spec: Obj) -> Obj:
        """Create the ShardDB as a user would, with Metacontroller's finalizer on it."""
        parent = {
            "apiVersion": "mygroup.example.com/v1alpha1",
            "kind": "ShardDB",
            "metadata": {"name": self.name, "namespace": self.namespace, "finalizers": [FINALIZER]},
            "spec": spec,
        }
        response = self.kube.create(parent)
        assert response.status_code == 201, error_message(response)
        self.world = World(parent=response.json())
        return self.world.parent

    @property
    def parent_stored(self) -> Obj:
        return self.kube.get("ShardDB", self.name, self.namespace)

    # --- one Metacontroller round -----------------------------------------------

    def round(self) -> Obj:
        """Send the observed world to the hook and carry out its answer for real."""
        self.world.parent = self.parent_stored
        answer = hook(self.world.request(), self.world.finalizing, self.clock)
        self.answers.append(answer)
        simulated = {
            (group, key): obj.get("status") for group, objs in self.world.children.items() for key, obj in objs.items()
        }
        self.world.apply(answer)
        uid = self.world.parent["metadata"]["uid"]
        for child in answer["children"]:
            self._write_child(desired_as_sent(child, self.namespace, uid))
        for deleted in self.world.deleted:
            group, _, key = deleted.partition(":")
            kind = kinds.BY_GROUP_KEY[group].kind
            response = self.kube.http.delete(path(kind, key.rsplit("/", 1)[-1], self.namespace))
            assert response.status_code in (200, 202, 404), error_message(response)
        self.world.deleted.clear()
        self._refresh_children(simulated)
        self._write_status(answer)
        if answer.get("finalized"):
            self._remove_finalizer()
        return answer

    def _write_child(self, desired: Obj) -> None:
        kind, name = desired["kind"], desired["metadata"]["name"]
        observed_response = self.kube.http.get(path(kind, name, self.namespace))
        if observed_response.status_code == 404:
            response = self.kube.create(for_create(desired, self._owner_reference()))
            assert response.status_code == 201, f"create {kind}/{name}: {error_message(response)}"
            return
        assert observed_response.status_code == 200, error_message(observed_response)
        if kind not in IN_PLACE:
            return
        observed = observed_response.json()
        merged = apply_update(observed, desired)
        if merged == observed:
            return
        self.updates.append((kind, name, difference(observed, desired)))
        response = self.kube.put(merged)
        assert response.status_code == 200, f"in-place update of {kind}/{name}: {error_message(response)}"

    def _owner_reference(self) -> Obj:
        meta = self.world.parent["metadata"]
        return {
            "apiVersion": self.world.parent["apiVersion"],
            "kind": "ShardDB",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def refresh(self) -> None:
        """After a write of the test's own to a child: the world sees it as stored, status kept."""
        self._refresh_children({})

    def _refresh_children(self, simulated: dict[tuple[str, str], Any]) -> None:
        """World's children become the stored objects; status stays the simulated one."""
        for group, objs in self.world.children.items():
            kind = kinds.BY_GROUP_KEY[group].kind
            for key, obj in list(objs.items()):
                stored = self.kube.get(kind, obj["metadata"]["name"], self.namespace)
                status = simulated.get((group, key), obj.get("status"))
                if status is not None:
                    stored["status"] = status
                objs[key] = stored

    def _write_status(self, answer: Obj) -> None:
        """Metacontroller's status update: the answer's status plus observedGeneration, via /status.

        Like Metacontroller, nothing is written when the stored status already equals it.
        """
        parent = self.parent_stored
        status = copy.deepcopy(answer["status"])
        status["observedGeneration"] = parent["metadata"]["generation"]
        if parent.get("status") == status:
            self.world.parent = parent
            return
        self.status_writes += 1
        parent["status"] = status
        response = self.kube.put(parent, subresource="status")
        assert response.status_code == 200, f"status update: {error_message(response)}"
        stored = response.json()["status"]
        assert stored == status, f"status pruned or changed by the API server:\nsent   {status}\nstored {stored}"
        self.world.parent = response.json()

    def _remove_finalizer(self) -> None:
        parent = self.parent_stored
        parent["metadata"]["finalizers"] = [f for f in parent["metadata"].get("finalizers", []) if f != FINALIZER]
        response = self.kube.put(parent)
        assert response.status_code == 200, f"finalizer removal: {error_message(response)}"

    # --- the user, and the controllers that do not run here ------------------------

    def edit(self, patch: Obj) -> None:
        """A user's merge patch of the spec."""
        response = self.kube.merge_patch("ShardDB", self.name, self.namespace, {"spec": patch})
        assert response.status_code == 200, error_message(response)

    def delete(self) -> None:
        """A user's delete: the finalizer keeps the ShardDB while the finalize hook runs."""
        response = self.kube.http.delete(path("ShardDB", self.name, self.namespace))
        assert response.status_code in (200, 202), error_message(response)
        self.world.finalizing = True

    def settle(self) -> None:
        """Every controller catches up: shard pods ready, seeds done, cache pods ready."""
        self.world.run_statefulset()
        for job in self.world.jobs():
            if not job.get("status", {}).get("conditions"):
                self.world.finish_job(int(job["metadata"]["name"].rsplit("-", 1)[1]))
        self.world.run_cache()

    def until(self, phase: str, max_rounds: int = 12) -> Obj:
        """Rounds, letting controllers catch up in between, until the answer's phase is ``phase``."""
        for _ in range(max_rounds):
            answer = self.round()
            if answer["status"]["phase"] == phase:
                return answer
            self.settle()
        raise AssertionError(f"phase {phase} not reached; last status {self.answers[-1]['status']}")
