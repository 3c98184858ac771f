"""Pods whose node, as the pod itself shows, stopped reporting or is gone: they count at once, and a
stopping step they block says what a person may do.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import names
from ..hook_request import Pod


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
