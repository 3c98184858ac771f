"""The objects a ShardDB with members will own, stored by a real API server: each is a fixed point of Metacontroller.

Created as Metacontroller creates a child (its namespace, selector label and last-applied record),
read back as stored, then asked for again: the in-place update decision must send nothing.
"""

from __future__ import annotations

from hooks.replication import Plan
from testbed.models.metacontroller import LAST_APPLIED, desired_as_sent, difference, needs_update, serialize

from ..support.kube import Kube
from ..support.replication import members, rendered

PARENT_UID = "00000000-0000-0000-0000-000000000000"
PATHS = {
    "ServiceAccount": "/api/v1/namespaces/{namespace}/serviceaccounts",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
    "Service": "/api/v1/namespaces/{namespace}/services",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
    "StatefulSet": "/apis/apps/v1/namespaces/{namespace}/statefulsets",
}


def test_every_object_for_members_is_stored_as_a_fixed_point(kube: Kube, namespace: str) -> None:
    for desired in rendered(members(3), Plan(3, True)):
        sent = desired_as_sent(desired, namespace, PARENT_UID)
        created = desired_as_sent(desired, namespace, PARENT_UID)
        created["metadata"].setdefault("annotations", {})[LAST_APPLIED] = serialize(sent)
        collection = PATHS[desired["kind"]].format(namespace=namespace)
        response = kube.http.post(collection, json=created, params={"fieldValidation": "Strict"})
        assert response.status_code == 201, response.text
        stored = kube.http.get(f"{collection}/{desired['metadata']['name']}").json()
        assert not needs_update(stored, sent), (desired["kind"], difference(stored, sent))
