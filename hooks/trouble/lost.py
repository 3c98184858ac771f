"""Pods whose node, as the pod itself shows, stopped reporting or is gone: they count at once, and a
stopping step they block says what a person may do.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import names
from ..hook_request import Pod
from .words import NOUNS, listed


@dataclass(frozen=True)
class LostPod:
    """A pod whose node, as the pod itself shows, stopped reporting or is gone.

    ``evidence`` says which of the pod's fields show it; it stays put while the node stays lost.
    """

    name: str
    component: str
    node: str
    evidence: str
    ordinal: int = -1
    terminating: bool = False

    def sort_key(self) -> tuple[str, int, int, str]:
        return (
            self.node,
            LOST_ORDER.index(self.component) if self.component in LOST_ORDER else 9,
            self.ordinal,
            self.name,
        )


LOST_ORDER = (names.DB, names.CACHE, names.SEED)

# How a pod shows that its node is lost; each stays put while the node does.
NOT_READY_BY_NODE_CONTROLLER = (
    "Ready=False while its containers are ready: the node controller's mark of a node that stopped reporting"
)
NODE_LOST_REASON = "status.reason NodeLost"
DELETED_NODE = "DisruptionTarget=True DeletionByPodGC: its Node object is gone"


def lost(pod: Pod, ordinal: int | None) -> LostPod | None:
    """The pod's node, if the pod shows the node is lost (Kubernetes 1.34's node lifecycle and pod GC).

    The kubelet sets Ready and ContainersReady together; only the node lifecycle controller turns a
    pod's Ready False alone (``MarkPodsNotReady``) when its node stops reporting.
    """
    node = pod.spec.node_name
    if not node:
        return None
    conditions = {c.type: c for c in pod.status.conditions}
    ready, containers = conditions.get("Ready"), conditions.get("ContainersReady")
    target = conditions.get("DisruptionTarget")
    if pod.status.reason == "NodeLost":
        evidence = NODE_LOST_REASON
    elif target is not None and target.status == "True" and target.reason == "DeletionByPodGC":
        evidence = DELETED_NODE
    elif ready is not None and ready.status == "False" and containers is not None and containers.status == "True":
        evidence = NOT_READY_BY_NODE_CONTROLLER
    else:
        return None
    component = pod.metadata.labels.get(names.COMPONENT_LABEL, "")
    terminating = pod.metadata.deletion_timestamp is not None
    return LostPod(pod.metadata.name, component, node, evidence, -1 if ordinal is None else ordinal, terminating)


def _on_node(pods: list[LostPod]) -> str:
    by_noun: dict[str, list[str]] = {}
    for pod in pods:
        by_noun.setdefault(NOUNS.get(pod.component, pod.component or "other"), []).append(pod.name)
    return ", ".join(f"{noun} {listed(on)}" for noun, on in by_noun.items())


def lost_message(pods: tuple[LostPod, ...]) -> str:
    """Per lost node, the condition that shows it and the shards and cache pods on it."""
    nodes: dict[str, list[LostPod]] = {}
    for pod in pods:
        nodes.setdefault(pod.node, []).append(pod)
    return "; ".join(
        f"node {node} is lost, as its pods show ({on[0].evidence}): on it {_on_node(on)}; "
        f"read `kubectl describe node {node}`"
        for node, on in nodes.items()
    )


def blocked_message(pods: tuple[LostPod, ...], component: str) -> str:
    """What a stopping step waits for on a lost node, and what a person may do (empty if nothing)."""
    blocking = [pod for pod in pods if pod.component == component]
    if not blocking:
        return ""
    nodes = sorted({pod.node for pod in blocking})
    shown = listed([pod.name for pod in blocking])
    where = f"node{'' if len(nodes) == 1 else 's'} {', '.join(nodes)}"
    return (
        f"{shown} {'is' if len(blocking) == 1 else 'are'} on {where}, which is lost ({blocking[0].evidence}): "
        f"once the node is known to be gone, taint it `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute` "
        f"or `kubectl delete pod <pod> --grace-period=0 --force`"
    )
