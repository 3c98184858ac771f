"""Partitions on a real API server: every rendered object is accepted, and the partition label is fixed at creation.

The ValidatingAdmissionPolicy and its binding of a two-partition install (p0, p1)
are stored for real and stay for the session; nothing else in the tier labels a
ShardDB. Each case creates its ShardDBs in a namespace of its own and asserts the
API server's answer and, for a refusal, the message a user reads.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from testbed.real import partitions
from testbed.real.partitions import LABEL

from ..support.kube import Kube, collection, error_message, path
from ..support.samples import sharddb

Obj = dict[str, Any]

DEV = partitions.DEPLOY / "overlays" / "dev"
FIELD = f"metadata.labels[{LABEL}]"
PARTITION_FINALIZER = "metacontroller.io/compositecontroller-sharddb-p1"


def labelled(name: str, namespace: str, partition: str | None, **metadata: Any) -> Obj:
    obj = sharddb(name, namespace)
    if partition is not None:
        obj["metadata"]["labels"] = {LABEL: partition}
    obj["metadata"].update(metadata)
    return obj


def created(kube: Kube, obj: Obj) -> Obj:
    response = kube.create(obj)
    assert response.status_code == 201, error_message(response)
    result: Obj = response.json()
    return result


def relabel(kube: Kube, namespace: str, name: str, value: str | None) -> Any:
    return kube.merge_patch("ShardDB", name, namespace, {"metadata": {"labels": {LABEL: value}}})


def stored_label(kube: Kube, namespace: str, name: str) -> str | None:
    label: str | None = kube.get("ShardDB", name, namespace)["metadata"].get("labels", {}).get(LABEL)
    return label


# --- every object of a partitioned install ------------------------------------------------------


@pytest.mark.parametrize("count", partitions.counts(), ids=[f"{n}-partitions" for n in partitions.counts()])
def test_a_partitioned_install_applies_with_strict_validation(with_metacontroller: Kube, count: int) -> None:
    docs = partitions.render_objects(DEV, count)
    for name in sorted({doc["metadata"]["namespace"] for doc in docs if doc["metadata"].get("namespace")}):
        response = with_metacontroller.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        assert response.status_code in (201, 409), error_message(response)
    result = with_metacontroller.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "--field-manager=sharddb-partitions-test",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(docs),
    )
    assert result.returncode == 0, result.stderr
    applied = [line for line in result.stdout.splitlines() if "serverside-applied (server dry run)" in line]
    assert len(applied) == len(docs), result.stdout


# --- the policy, in force ----------------------------------------------------------------------------


def _enforced(kube: Kube, namespace: str, timeout: float = 60.0) -> bool:
    """Whether the API server refuses a stray label yet: policies take effect a moment after they are stored."""
    probe = labelled("probe", namespace, "no-such-partition")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = kube.http.post(collection("ShardDB", namespace), json=probe, params={"dryRun": "All"})
        if response.status_code == 422:
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="module")
def policy(kube: Kube) -> Iterator[None]:
    """The two-partition policy and binding, stored and enforced; deleted afterwards, so later dry runs of
    the overlays (another field manager) meet no object of ours."""
    setup = partitions.render(DEV, 2)
    objects = setup.of("ValidatingAdmissionPolicy") + setup.of("ValidatingAdmissionPolicyBinding")
    manifest = yaml.safe_dump_all(objects)
    applied = kube.kubectl("apply", "--server-side", "--field-manager=sharddb-tests", "-f", "-", stdin=manifest)
    assert applied.returncode == 0, applied.stderr
    response = kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "partition-policy-probe"}})
    assert response.status_code in (201, 409), error_message(response)
    assert _enforced(kube, "partition-policy-probe"), "the partition policy was not enforced within 60s"
    yield
    deleted = kube.kubectl("delete", "--wait", "-f", "-", stdin=manifest)
    assert deleted.returncode == 0, deleted.stderr


enforced = pytest.mark.usefixtures("policy")


@enforced
def test_a_sharddb_may_be_created_in_a_partition_that_runs(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, "p1"))
    assert stored_label(kube, namespace, "orders") == "p1"


@enforced
def test_an_unlabelled_sharddb_is_created_as_before(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, None))
    assert stored_label(kube, namespace, "orders") is None


@enforced
def test_a_label_naming_no_partition_that_runs_is_refused_at_creation(kube: Kube, namespace: str) -> None:
    response = kube.create(labelled("orders", namespace, "p2"))
    assert response.status_code == 422
    message = error_message(response)
    assert f"{FIELD}: 'p2' is not a partition this cluster runs (p0, p1)" in message
    assert not kube.exists("ShardDB", "orders", namespace)


@enforced
def test_changing_the_partition_is_refused_with_the_reason(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, "p1"))
    result = kube.kubectl("-n", namespace, "label", "sharddb", "orders", f"{LABEL}=p0", "--overwrite")
    assert result.returncode != 0
    assert f"{FIELD}: the partition 'p1' is fixed once set and cannot become 'p0'" in result.stderr
    assert "to move a ShardDB, recreate it" in result.stderr
    assert stored_label(kube, namespace, "orders") == "p1"


@enforced
def test_removing_the_partition_is_refused(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, "p1"))
    response = relabel(kube, namespace, "orders", None)
    assert response.status_code == 422
    assert f"{FIELD}: the partition 'p1' is fixed once set and cannot be removed" in error_message(response)
    assert stored_label(kube, namespace, "orders") == "p1"


@enforced
def test_an_unlabelled_sharddb_may_be_labelled_p0_where_it_already_is(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, None))
    response = relabel(kube, namespace, "orders", "p0")
    assert response.status_code == 200, error_message(response)
    assert stored_label(kube, namespace, "orders") == "p0"


@enforced
def test_an_unlabelled_sharddb_may_not_be_moved_out_of_p0(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, None))
    response = relabel(kube, namespace, "orders", "p1")
    assert response.status_code == 422
    expected = f"{FIELD}: an unlabelled ShardDB is in partition p0 and may only be labelled p0, not 'p1'"
    assert expected in error_message(response)
    assert stored_label(kube, namespace, "orders") is None


@enforced
def test_a_spec_edit_of_a_labelled_sharddb_is_admitted(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, "p1"))
    response = kube.merge_patch("ShardDB", "orders", namespace, {"spec": {"cache": {"replicas": 3}}})
    assert response.status_code == 200, error_message(response)
    assert response.json()["spec"]["cache"]["replicas"] == 3


@enforced
def test_other_labels_of_a_labelled_sharddb_may_change(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, "p1"))
    response = kube.merge_patch("ShardDB", "orders", namespace, {"metadata": {"labels": {"team": "payments"}}})
    assert response.status_code == 200, error_message(response)
    assert response.json()["metadata"]["labels"] == {LABEL: "p1", "team": "payments"}


@enforced
def test_the_status_of_a_labelled_sharddb_is_written_as_before(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, "p1"))
    patch = {"status": {"observedGeneration": 1}}
    response = kube.merge_patch("ShardDB", "orders", namespace, patch, subresource="status")
    assert response.status_code == 200, error_message(response)
    assert response.json()["status"]["observedGeneration"] == 1


@enforced
def test_a_labelled_sharddb_being_deleted_can_drop_its_finalizer(kube: Kube, namespace: str) -> None:
    created(kube, labelled("orders", namespace, "p1", finalizers=[PARTITION_FINALIZER]))
    deleting = kube.http.delete(path("ShardDB", "orders", namespace))
    assert deleting.status_code in (200, 202), error_message(deleting)
    response = kube.merge_patch("ShardDB", "orders", namespace, {"metadata": {"finalizers": None}})
    assert response.status_code == 200, error_message(response)
    assert not kube.exists("ShardDB", "orders", namespace)
