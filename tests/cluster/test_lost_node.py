"""Pods on a lost node, stored by the real API server, named in the status it stores.

No kubelet runs here, which is what a lost node looks like to the API server: a pod bound to
``node-2`` is written as the node lifecycle controller writes it (``MarkPodsNotReady``: Ready
False alone, through the status subresource), and a graceful delete leaves it ``Terminating``,
since no kubelet confirms it stopped. The pods the hook reads are those the API server returns.
"""

from __future__ import annotations

import copy
from typing import Any

from hooks.clock import rfc3339, system_clock

from ..support.kube import error_message
from .loop import Loop

Obj = dict[str, Any]
NODE = "node-2"


def _stored_pod(loop: Loop, name: str) -> Obj:
    """The World's pod ``name``, created for real on ``NODE``, running and ready, as its kubelet reported it."""
    simulated = loop.world.pods[name]
    container = simulated["spec"]["containers"][0]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": loop.namespace,
            "labels": copy.deepcopy(simulated["metadata"]["labels"]),
        },
        "spec": {"nodeName": NODE, "containers": [{"name": container["name"], "image": container["image"]}]},
    }
    response = loop.kube.create(pod)
    assert response.status_code == 201, error_message(response)
    stored: Obj = response.json()
    now = rfc3339(system_clock())
    stored["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": kind, "status": "True", "lastTransitionTime": now}
            for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
    }
    response = loop.kube.put(stored, subresource="status")
    assert response.status_code == 200, error_message(response)
    running: Obj = response.json()
    return running


def _mark_not_ready(loop: Loop, pod: Obj) -> Obj:
    """What ``MarkPodsNotReady`` writes once the node's lease is older than the node monitor's grace."""
    for condition in pod["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition.update(status="False", lastTransitionTime=rfc3339(system_clock()))
    response = loop.kube.put(pod, subresource="status")
    assert response.status_code == 200, error_message(response)
    marked: Obj = response.json()
    return marked


def _terminating(loop: Loop, name: str) -> Obj:
    """A graceful delete: with no kubelet on the node, the pod stays, Terminating."""
    url = f"/api/v1/namespaces/{loop.namespace}/pods/{name}"
    response = loop.kube.http.request("DELETE", url, json={"gracePeriodSeconds": 30})
    assert response.status_code == 200, error_message(response)
    stored = loop.kube.http.get(url)
    assert stored.status_code == 200, error_message(stored)
    pod: Obj = stored.json()
    assert pod["metadata"]["deletionTimestamp"]
    return pod


def _condition(loop: Loop, kind: str) -> Obj:
    found: Obj = next(c for c in loop.parent_stored["status"]["conditions"] if c["type"] == kind)
    return found


def _lose(loop: Loop, *names: str) -> None:
    for name in names:
        loop.world.pods[name] = _mark_not_ready(loop, _stored_pod(loop, name))


def test_a_shard_on_a_lost_node_is_named_with_the_node_in_the_stored_status(available: Loop) -> None:
    _lose(available, "demo-db-1")
    children = available.answers[-1]["children"]
    available.round()
    degraded = _condition(available, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "NodeLost")
    assert degraded["message"].startswith(f"node {NODE} is lost, as its pods show (Ready=False while its containers")
    assert f"on it shard demo-db-1; read `kubectl describe node {NODE}`" in degraded["message"]
    assert available.answers[-1]["children"] == children  # nothing deleted or changed


def test_a_terminating_pod_on_a_lost_node_stays_named_and_costs_no_more_writes(available: Loop) -> None:
    _lose(available, "demo-db-1")
    available.round()
    available.world.pods["demo-db-1"] = _terminating(available, "demo-db-1")
    writes = available.status_writes
    available.round()
    available.round()
    assert "on it shard demo-db-1" in _condition(available, "Degraded")["message"]
    assert available.status_writes == writes


def test_a_deletion_waiting_on_a_cache_pod_on_a_lost_node_says_what_blocks_it(available: Loop) -> None:
    cache_pod = sorted(name for name in available.world.pods if name.startswith("demo-cache-"))[0]
    _lose(available, cache_pod)
    available.delete()
    available.world.pods[cache_pod] = _terminating(available, cache_pod)
    answer = available.round()
    assert answer["finalized"] is False
    progressing = _condition(available, "Progressing")
    assert progressing["reason"] == "DrainingCache"
    assert f"{cache_pod} is on node {NODE}, which is lost (Ready=False" in progressing["message"]
    assert "node.kubernetes.io/out-of-service=nodeshutdown:NoExecute" in progressing["message"]
    assert "--grace-period=0 --force" in progressing["message"]
