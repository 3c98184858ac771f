"""What admission refuses is named in Degraded, on the real stack: a quota, Pod Security, a refused child.

The refusals are the real API server's own (the ResourceQuota and PodSecurity admission plugins,
its refusal of privileged containers); the StatefulSet controller and Metacontroller are the real ones.
The stack runs no resource quota controller, so the test writes the quota's first status as that
controller would; from then on the admission plugin counts the pods it admits itself.
"""

from __future__ import annotations

from typing import Any

from tests.support.kube import Kube, error_message

from ..support.sharddbs import SPEC, ShardDBs, condition, wait_until

Obj = dict[str, Any]
GRACE = 10  # spec.podStartGraceSeconds


def _degraded(sharddbs: ShardDBs, name: str, reason: str, timeout: float = 90.0) -> Obj:
    found: Obj = wait_until(
        f"Degraded={reason}",
        lambda: (c := condition(sharddbs.get(name), "Degraded")).get("reason") == reason and c,
        timeout=timeout,
    )
    return found


def _events(kube: Kube, namespace: str, kind: str, name: str) -> list[Obj]:
    response = kube.http.get(f"/api/v1/namespaces/{namespace}/events")
    assert response.status_code == 200, error_message(response)
    items: list[Obj] = response.json()["items"]
    return [e for e in items if e["involvedObject"].get("kind") == kind and e["involvedObject"].get("name") == name]


def _quota(kube: Kube, namespace: str, pods: int) -> None:
    """A ResourceQuota ``q`` over ``pods`` pods, with the first status its controller would write."""
    quotas = f"/api/v1/namespaces/{namespace}/resourcequotas"
    hard = {"pods": str(pods)}
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": hard}}
    response = kube.http.post(quotas, json=quota)
    assert response.status_code == 201, error_message(response)
    stored = response.json()
    stored["status"] = {"hard": hard, "used": {"pods": "0"}}
    response = kube.http.put(f"{quotas}/q/status", json=stored)
    assert response.status_code == 200, error_message(response)


def test_a_shard_pod_a_quota_refuses_is_named_after_the_grace(kube: Kube, namespace: str, sharddbs: ShardDBs) -> None:
    _quota(kube, namespace, 2)

    sharddbs.create("q", {**SPEC, "podStartGraceSeconds": GRACE})
    degraded = _degraded(sharddbs, "q", "ShardPodsMissing")
    pods = {pod["metadata"]["name"] for pod in sharddbs.items("Pod", "app.kubernetes.io/component=db")}
    assert len(pods) == 2, pods
    (missing,) = {f"q-db-{ordinal}" for ordinal in range(3)} - pods
    assert degraded["message"] == (
        f"shard pod {missing} does not exist {GRACE} s after the StatefulSet asked for it: "
        "read `kubectl describe statefulset q-db` (its FailedCreate events)"
    )
    refusals = [e["message"] for e in _events(kube, namespace, "StatefulSet", "q-db") if e["reason"] == "FailedCreate"]
    assert any("exceeded quota: q" in message for message in refusals), refusals


def test_a_seed_pod_a_quota_refuses_is_named_after_the_grace(kube: Kube, namespace: str, sharddbs: ShardDBs) -> None:
    """Room for the shards only: the seed Job starts, and its pod is refused."""
    _quota(kube, namespace, 3)
    sharddbs.create("qs", {**SPEC, "podStartGraceSeconds": GRACE})
    degraded = _degraded(sharddbs, "qs", "SeedPodsMissing", timeout=180)
    assert degraded["message"] == (
        f"seed Job qs-seed-3 has no pod {GRACE} s after it started: "
        "read `kubectl describe job qs-seed-3` (its FailedCreate events)"
    )
    refusals = [e["message"] for e in _events(kube, namespace, "Job", "qs-seed-3") if e["reason"] == "FailedCreate"]
    assert any("exceeded quota: q" in message for message in refusals), refusals


def test_cache_pods_a_quota_refuses_are_named_with_its_words_after_the_grace(
    kube: Kube, namespace: str, sharddbs: ShardDBs
) -> None:
    """Room for the shards and the seed (the admission plugin counts each pod it admits): none for the cache."""
    _quota(kube, namespace, 4)
    sharddbs.create("qc", {**SPEC, "podStartGraceSeconds": GRACE})
    degraded = _degraded(sharddbs, "qc", "CachePodsMissing", timeout=180)
    assert degraded["message"].startswith('cache pods cannot be created: pods "qc-cache-')
    assert "is forbidden: exceeded quota: q" in degraded["message"]
    assert degraded["message"].endswith(
        "read `kubectl describe deployment qc-cache` (its ReplicaFailure condition) and its ReplicaSet's "
        "FailedCreate events"
    )


def test_shard_pods_pod_security_refuses_are_named_after_the_grace(
    kube: Kube, namespace: str, sharddbs: ShardDBs
) -> None:
    labels = {"pod-security.kubernetes.io/enforce": "baseline"}
    response = kube.merge_patch("Namespace", namespace, "", {"metadata": {"labels": labels}})
    assert response.status_code == 200, error_message(response)
    # Allowed by the API server, refused by the namespace's level: the StatefulSet exists, its pods do not.
    context = {"capabilities": {"add": ["NET_ADMIN"]}}
    sharddbs.create("psa", {**SPEC, "db": {"securityContext": context}, "podStartGraceSeconds": GRACE})
    degraded = _degraded(sharddbs, "psa", "ShardPodsMissing")
    assert degraded["message"].startswith(f"shard pods psa-db-0, psa-db-1, psa-db-2 do not exist {GRACE} s after")
    refusals = [
        e["message"] for e in _events(kube, namespace, "StatefulSet", "psa-db") if e["reason"] == "FailedCreate"
    ]
    assert any('violates PodSecurity "baseline:latest": non-default capabilities' in m for m in refusals), refusals


def test_a_statefulset_admission_refuses_is_named_after_the_grace(
    kube: Kube, namespace: str, sharddbs: ShardDBs
) -> None:
    """The issue's case: an API server that disallows privileged containers (``--allow-privileged``'s default)."""
    sharddbs.create("ref", {**SPEC, "db": {"securityContext": {"privileged": True}}, "podStartGraceSeconds": GRACE})
    degraded = _degraded(sharddbs, "ref", "ChildrenMissing", timeout=120)
    assert degraded["message"] == (
        f"StatefulSet ref-db does not exist {GRACE} s after the ShardDB was created: "
        "read the ShardDB's events (`kubectl describe sharddb ref`: SyncError)"
    )
    assert not sharddbs.exists("StatefulSet", "ref-db")
    errors = [e["message"] for e in _events(kube, namespace, "ShardDB", "ref") if e["reason"] == "SyncError"]
    refused = "spec.template.spec.containers[0].securityContext.privileged: Forbidden"
    assert any(refused in message for message in errors), errors
