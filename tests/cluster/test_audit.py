"""The control plane's audit log says which pod a deletion took, so a node's deletions can be judged by uid,
and what a ShardDB's status write wrote, so a write in an idle window says what it changed."""

from __future__ import annotations

import time

from testbed.real.audit import AuditLog
from testbed.real.controlplane import ControlPlane

from ..support.kube import Kube
from .loop import Loop


def test_a_pods_deletion_is_logged_with_the_uid_of_the_pod_it_took(
    control_plane: ControlPlane, kube: Kube, namespace: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "shard", "namespace": namespace},
        "spec": {"nodeName": "node-1", "containers": [{"name": "db", "image": "postgres:16"}]},
    }
    created = kube.create(pod)
    assert created.status_code == 201, created.text
    uid = created.json()["metadata"]["uid"]
    audit = AuditLog(control_plane.audit_log)
    mark = audit.mark()
    deleted = kube.http.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/shard", json={"gracePeriodSeconds": 0})
    assert deleted.status_code == 200, deleted.text
    deadline = time.monotonic() + 10
    while not (writes := [w for w in audit.since(mark, namespace=namespace) if w.verb == "delete"]):
        assert time.monotonic() < deadline, "the deletion never reached the audit log"
        time.sleep(0.1)
    assert [(w.name, w.uid) for w in writes] == [("shard", uid)]


def test_a_sharddb_status_write_is_logged_with_what_it_wrote(control_plane: ControlPlane, available: Loop) -> None:
    audit = AuditLog(control_plane.audit_log)
    mark = audit.mark()
    parent = available.parent_stored
    parent["status"] = {**parent["status"], "readyShards": 2}
    response = available.kube.put(parent, subresource="status")
    assert response.status_code == 200, response.text
    deadline = time.monotonic() + 10
    while not (writes := [w for w in audit.since(mark, namespace=available.namespace) if w.subresource == "status"]):
        assert time.monotonic() < deadline, "the status write never reached the audit log"
        time.sleep(0.1)
    assert '"readyShards":2' in writes[0].status, writes[0]
