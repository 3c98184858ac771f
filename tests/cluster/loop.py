"""The hook loop against a real API server: Metacontroller's write path, World's controllers.

Metacontroller itself cannot run here, so this module does what it does with a
sync answer, against the real API server: create new children (namespace,
owner reference, ``controller-uid`` label, last-applied annotation), update
existing ones in place the way its dynamic apply does (three-way merge of
desired over observed, then a PUT), delete children left out, and write the
returned status through the /status subresource when it differs.
``tests.world.World`` keeps playing the controllers that do not run here
(StatefulSet, Job, Deployment, EndpointSlice): its children are the real
stored objects, with only their ``status`` simulated.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from hooks import handler
from tests.world import GROUP_KEYS, World

from .kube import Kube, error_message, path

Obj = dict[str, Any]

LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration"
FINALIZER = "metacontroller.io/compositecontroller-sharddb"
SELECTOR_LABEL = "controller-uid"  # the CompositeController sets generateSelector: true
# Keys Metacontroller's apply guesses as list-map keys, highest precedence first.
LIST_MAP_KEYS = ("containerPort", "port", "mountPath", "name", "uid", "ip", "path")
# Child update strategy of the CompositeController: Jobs are OnDelete, the rest InPlace.
IN_PLACE = frozenset({"Service", "StatefulSet", "Deployment"})


def three_way_merge(observed: Any, last: Any, desired: Any) -> Any:
    """Desired over observed; fields in ``last`` but no longer desired are removed.

    Lists of objects sharing a conventional key (``name``, ``port``, ...) merge
    item by item; any other list is replaced whole.
    """
    if isinstance(observed, dict) and isinstance(desired, dict):
        previous = last if isinstance(last, dict) else {}
        merged = {k: v for k, v in observed.items() if not (k in previous and k not in desired)}
        for key, value in desired.items():
            merged[key] = three_way_merge(observed.get(key), previous.get(key), value)
        return merged
    if isinstance(observed, list) and isinstance(desired, list):
        previous_list = last if isinstance(last, list) else []
        key = _list_map_key(observed, previous_list, desired)
        if key is None:
            return copy.deepcopy(desired)
        return _merge_list_map(key, observed, previous_list, desired)
    return copy.deepcopy(desired)


def _list_map_key(*lists: list[Any]) -> str | None:
    common: set[str] | None = None
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                return None
            common = set(item) if common is None else common & set(item)
    return next((key for key in LIST_MAP_KEYS if common and key in common), None)


def _merge_list_map(key: str, observed: list[Obj], last: list[Obj], desired: list[Obj]) -> list[Obj]:
    def by_key(items: list[Obj]) -> dict[str, Obj]:
        return {str(item[key]): item for item in items}

    merged = three_way_merge(by_key(observed), by_key(last), by_key(desired))
    order = [str(item[key]) for item in observed] + [str(item[key]) for item in desired]
    return [merged[k] for k in dict.fromkeys(order) if k in merged]


def _with_selector_label(child: Obj, parent_uid: str) -> Obj:
    """With ``generateSelector: true`` Metacontroller labels every desired child with the parent's uid."""
    labelled = copy.deepcopy(child)
    labelled["metadata"].setdefault("labels", {}).setdefault(SELECTOR_LABEL, parent_uid)
    return labelled


def hook(request: Obj, finalize: bool) -> Obj:
    """The real hook code, from JSON bytes to answer body."""
    return handler.sync(json.dumps(request).encode(), finalize=finalize).body


@dataclass
class Loop:
    """One ShardDB in one namespace, driven round by round through the real API server."""

    kube: Kube
    namespace: str
    name: str = "demo"
    world: World = field(init=False)
    answers: list[Obj] = field(default_factory=list)
    status_writes: int = 0

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
        answer = hook(self.world.request(), self.world.finalizing)
        self.answers.append(answer)
        simulated = {
            (group, key): obj.get("status") for group, objs in self.world.children.items() for key, obj in objs.items()
        }
        self.world.apply(answer)
        uid = self.world.parent["metadata"]["uid"]
        for child in answer["children"]:
            self._write_child(_with_selector_label(child, uid))
        for deleted in self.world.deleted:
            group, _, key = deleted.partition(":")
            kind = next(k for k, g in GROUP_KEYS.items() if g == group)
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
            created = copy.deepcopy(desired)
            meta = created["metadata"]
            meta["namespace"] = self.namespace
            meta["ownerReferences"] = [self._owner_reference()]
            meta.setdefault("annotations", {})[LAST_APPLIED] = json.dumps(desired, sort_keys=True)
            response = self.kube.create(created)
            assert response.status_code == 201, f"create {kind}/{name}: {error_message(response)}"
            return
        assert observed_response.status_code == 200, error_message(observed_response)
        if kind not in IN_PLACE:
            return
        observed = observed_response.json()
        last = json.loads(observed["metadata"].get("annotations", {}).get(LAST_APPLIED, "{}"))
        merged = three_way_merge(observed, last, desired)
        merged["metadata"].setdefault("annotations", {})[LAST_APPLIED] = json.dumps(desired, sort_keys=True)
        if merged == observed:
            return
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

    def _refresh_children(self, simulated: dict[tuple[str, str], Any]) -> None:
        """World's children become the stored objects; status stays the simulated one."""
        for group, objs in self.world.children.items():
            kind = next(k for k, g in GROUP_KEYS.items() if g == group)
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
