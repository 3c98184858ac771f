"""The stand-in node agent acts on the very pod it queued an action for, as a kubelet does.

A kubelet finalizes only a pod whose own ``deletionTimestamp`` is set; a removal queued
for a pod that has since gone, and whose name a new pod took, is dropped. As the
provisioner of the default class, it makes a volume only for a claim handed to it on a
node the scheduler chose, bound to that node, as a real dynamic provisioner does.
"""

from __future__ import annotations

import itertools
from typing import Any

from testbed.standins.node import (
    PROVISIONER,
    acted_on,
    kept_times,
    pod_address,
    provisioned_volume,
    reclaimable,
    selected_node,
    storage_class,
)

Obj = dict[str, Any]


def pod(uid: str, deleting: bool = False) -> Obj:
    meta: Obj = {"name": "db-db-3", "namespace": "fleet", "uid": uid}
    if deleting:
        meta.update(deletionTimestamp="2026-12-01T23:51:46Z", deletionGracePeriodSeconds=30)
    return {"metadata": meta}


def test_a_removal_goes_ahead_for_the_marked_pod_it_was_queued_for() -> None:
    marked = pod("uid-1", deleting=True)
    assert acted_on(marked, "uid-1", "remove") is marked


def test_a_removal_queued_for_a_pod_whose_name_a_replacement_took_is_dropped() -> None:
    assert acted_on(pod("uid-2"), "uid-1", "remove") is None


def test_a_removal_of_a_pod_nobody_marked_for_deletion_is_dropped() -> None:
    assert acted_on(pod("uid-1"), "uid-1", "remove") is None


def test_a_start_queued_for_a_pod_that_was_replaced_is_dropped() -> None:
    assert acted_on(pod("uid-2"), "uid-1", "start") is None


def test_a_start_goes_ahead_for_its_own_pod() -> None:
    own = pod("uid-1")
    assert acted_on(own, "uid-1", "start") is own


def test_nothing_is_done_for_a_pod_already_gone() -> None:
    assert acted_on(None, "uid-1", "remove") is None


def test_a_running_pod_keeps_its_address_when_the_agent_starts_again() -> None:
    # A restarted kubelet finds the pod's sandbox, and its network, as they were.
    assert pod_address({"podIP": "10.244.0.7"}, itertools.count(2), set()) == "10.244.0.7"


def test_a_new_pod_gets_an_address_no_pod_on_the_node_holds() -> None:
    held: set[str | None] = {"10.244.0.3", "10.244.0.4", None}
    assert pod_address({}, itertools.count(2), held) == "10.244.0.5"


def running(ready: str, at: str) -> Obj:
    return {
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": at},
            {"type": "Ready", "status": ready, "lastTransitionTime": at},
        ],
        "containerStatuses": [{"name": "db", "ready": ready == "True", "state": {"running": {"startedAt": at}}}],
    }


def test_a_condition_that_holds_keeps_when_it_last_changed() -> None:
    kept = kept_times(running("False", "2026-12-02T10:00:00Z"), running("True", "2026-12-02T10:00:09Z"))
    times = {c["type"]: c["lastTransitionTime"] for c in kept["conditions"]}
    assert times == {"Initialized": "2026-12-02T10:00:00Z", "Ready": "2026-12-02T10:00:09Z"}


def test_a_container_still_running_keeps_when_it_started() -> None:
    kept = kept_times(running("False", "2026-12-02T10:00:00Z"), running("True", "2026-12-02T10:00:09Z"))
    assert kept["containerStatuses"][0]["state"] == {"running": {"startedAt": "2026-12-02T10:00:00Z"}}


def test_a_container_that_was_not_running_starts_now() -> None:
    waiting = {"phase": "Pending", "containerStatuses": [{"name": "db", "state": {"waiting": {"reason": "x"}}}]}
    kept = kept_times(waiting, running("True", "2026-12-02T10:00:09Z"))
    assert kept["containerStatuses"][0]["state"] == {"running": {"startedAt": "2026-12-02T10:00:09Z"}}
    assert {c["lastTransitionTime"] for c in kept["conditions"]} == {"2026-12-02T10:00:09Z"}


def claim(annotations: dict[str, str], volume_name: str = "", storage_class_name: str | None = "standard") -> Obj:
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if volume_name:
        spec["volumeName"] = volume_name
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    meta: Obj = {"name": "data-db-db-0", "namespace": "fleet", "uid": "c-1", "annotations": annotations}
    return {"metadata": meta, "spec": spec}


HANDED = {"volume.kubernetes.io/storage-provisioner": PROVISIONER, "volume.kubernetes.io/selected-node": "node-1"}


def test_the_default_class_waits_for_the_first_consumer_and_names_the_stand_in() -> None:
    made = storage_class()
    assert made["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert (made["provisioner"], made["volumeBindingMode"]) == (PROVISIONER, "WaitForFirstConsumer")


def test_a_claim_handed_to_the_stand_in_on_a_chosen_node_is_provisioned_on_that_node() -> None:
    assert selected_node(claim(HANDED)) == "node-1"
    beta = {"volume.beta.kubernetes.io/storage-provisioner": PROVISIONER, "volume.kubernetes.io/selected-node": "n"}
    assert selected_node(claim(beta)) == "n"


def test_a_claim_is_not_provisioned_before_the_scheduler_chose_its_node() -> None:
    assert selected_node(claim({"volume.kubernetes.io/storage-provisioner": PROVISIONER})) is None


def test_a_claim_of_another_provisioner_or_of_no_class_or_bound_is_left_alone() -> None:
    other = {**HANDED, "volume.kubernetes.io/storage-provisioner": "rancher.io/local-path"}
    assert selected_node(claim(other)) is None
    assert selected_node(claim({"volume.kubernetes.io/selected-node": "node-1"})) is None
    assert selected_node(claim(HANDED, storage_class_name="")) is None
    assert selected_node(claim(HANDED, volume_name="pvc-c-1")) is None


def test_the_volume_has_the_nodes_affinity_the_claims_reference_and_the_class_policy() -> None:
    volume = provisioned_volume(claim(HANDED), {**storage_class(), "reclaimPolicy": "Retain"}, "node-1")
    assert volume["metadata"]["name"] == "pvc-c-1"
    assert volume["metadata"]["annotations"] == {"pv.kubernetes.io/provisioned-by": PROVISIONER}
    spec = volume["spec"]
    assert spec["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}
    ]
    assert (spec["claimRef"]["namespace"], spec["claimRef"]["name"], spec["claimRef"]["uid"]) == (
        "fleet",
        "data-db-db-0",
        "c-1",
    )
    assert (spec["storageClassName"], spec["persistentVolumeReclaimPolicy"]) == ("standard", "Retain")
    assert spec["capacity"] == {"storage": "1Gi"}


def test_only_a_released_volume_of_the_stand_in_with_the_delete_policy_is_reclaimed() -> None:
    volume = provisioned_volume(claim(HANDED), storage_class(), "node-1")
    assert not reclaimable({**volume, "status": {"phase": "Bound"}})
    assert reclaimable({**volume, "status": {"phase": "Released"}})
    retained = {**volume, "spec": {**volume["spec"], "persistentVolumeReclaimPolicy": "Retain"}}
    assert not reclaimable({**retained, "status": {"phase": "Released"}})
    foreign = {**volume, "metadata": {"name": "pv-1", "annotations": {}}}
    assert not reclaimable({**foreign, "status": {"phase": "Released"}})
