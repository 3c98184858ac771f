"""The cluster around one ShardDB as Metacontroller shows it to the hooks: the one model of it, so the preview and
the test bed cannot drift apart.

It holds the parent, its children as stored and the pods and EndpointSlices the hooks watch; ``request()`` is
what Metacontroller sends, ``apply()`` what it does with the answer. The children are stored as a bare API server
would store them; ``testbed.models.world`` builds on this, storing them the way a real one does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from .. import kinds
from ..clock import Clock, rfc3339

Obj = dict[str, Any]
Children = dict[str, dict[str, Obj]]  # group key (``StatefulSet.apps/v1``) -> request key -> object
Hook = Callable[[Obj, bool], Obj]  # a request and whether it finalizes -> the hooks' answer

# What Metacontroller names itself in every request: the CompositeController of the manifests.
CONTROLLER: Obj = {
    "apiVersion": "metacontroller.k8s.io/v1alpha1",
    "kind": "CompositeController",
    "metadata": {"name": "sharddb"},
}


class World:
    """Observed state for one ShardDB; ``step()`` is one Metacontroller round (send ``request()``, ``apply()``)."""

    def __init__(self, parent: Obj, now: Clock) -> None:
        self.parent = parent
        self.now = now  # what a deletion is stamped with (the preview passes it on to the hooks too)
        self.children: Children = {}
        # By name, as the namespace holds them; keyed for the request only when it is sent.
        self.pods: dict[str, Obj] = {}
        self.slices: dict[str, Obj] = {}
        self.finalizing = False
        self.finalized = False

    @property
    def name(self) -> str:
        return str(self.parent["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.parent["metadata"]["namespace"])

    def _key(self, name: str) -> str:
        """How a request keys an object of the ShardDB's namespace (``namespace/name``, hook version v2)."""
        return f"{self.namespace}/{name}"

    def stored(self, kind: kinds.Kind, name: str) -> Obj | None:
        return self.children.get(kind.group_key, {}).get(self._key(name))

    def request(self) -> Obj:
        """What Metacontroller sends: copies, so the hooks cannot touch the world; the watched objects in name order,
        as Go writes a map."""
        related = {
            kinds.ENDPOINTSLICE.group_key: {self._key(name): obj for name, obj in sorted(self.slices.items())},
            kinds.POD.group_key: {self._key(name): obj for name, obj in sorted(self.pods.items())},
        }
        return copy.deepcopy(
            {
                "controller": CONTROLLER,
                "parent": self.parent,
                "children": self.children,
                "related": related,
                "finalizing": self.finalizing,
            }
        )

    def step(self, hook: Hook) -> Obj:
        """One Metacontroller round: send the observed world, apply the answer."""
        answer = hook(self.request(), self.finalizing)
        self.apply(answer)
        return answer

    def apply(self, answer: Obj) -> None:
        """Store the children and the parent's status (for the generation it answers); honour ``finalized``."""
        self.store(self.desired(answer))
        status = copy.deepcopy(answer["status"])
        status["observedGeneration"] = self.parent["metadata"]["generation"]
        self.parent["status"] = status
        if answer.get("finalized"):
            self.finalized = True

    def desired(self, answer: Obj) -> Children:
        """The answer's children as a request keys them."""
        desired: Children = {}
        for child in answer["children"]:
            group = kinds.BY_KIND[child["kind"]].group_key
            desired.setdefault(group, {})[self._key(child["metadata"]["name"])] = child
        return desired

    def store(self, desired: Children) -> None:
        """A bare API server: each desired child stored as sent (keeping what its controller reported), the rest
        gone."""
        stored: Children = {}
        for group, objs in desired.items():
            for key, child in objs.items():
                before = self.children.get(group, {}).get(key, {})
                obj = copy.deepcopy(child)
                obj["metadata"] = {**obj["metadata"], "namespace": self.namespace, "generation": 1}
                obj["status"] = before.get("status", {})
                stored.setdefault(group, {})[key] = obj
        self.children = stored

    def delete(self) -> None:
        """``kubectl delete``: Metacontroller calls the finalize hook from now on."""
        self.finalizing = True
        self.parent["metadata"]["deletionTimestamp"] = rfc3339(self.now())
