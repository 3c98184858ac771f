"""Deleting a namespace that holds an Available ShardDB: what the runbook warns of, shown on the real stack.

The namespace controller deletes the namespace's pods itself, all at once (one delete of
the collection), while the ShardDB's finalizer still waits: shard pods are marked for
deletion while cache pods still exist and may still be flushing, so the ordered teardown
never runs. Hence the runbook's rule: delete the
ShardDBs first, then the namespace.
"""

from __future__ import annotations

import pytest

from testbed.stack import NODE, Stack

from ..support.kube import Kube
from ..support.sharddbs import ShardDBs, wait_until
from .conftest import new_namespace

NAME = "held"


def test_deleting_the_namespace_stops_shard_pods_while_cache_pods_still_exist(
    stack: Stack, kube: Kube, request: pytest.FixtureRequest
) -> None:
    namespace = new_namespace(kube, request)
    sharddbs = ShardDBs(kube, namespace)
    sharddbs.create(NAME)
    sharddbs.available(NAME)
    mark = stack.audit.mark()
    response = kube.http.delete(f"/api/v1/namespaces/{namespace}")
    assert response.status_code in (200, 202), response.text
    wait_until(
        f"namespace {namespace} gone", lambda: kube.http.get(f"/api/v1/namespaces/{namespace}").status_code == 404, 180
    )
    log = stack.audit.since(mark, namespace=namespace)
    # The namespace controller marks every pod of the namespace with one delete of the collection.
    every_pod_marked = [w.at for w in log if w.resource == "pods" and w.verb == "deletecollection"]
    removed = {w.name: w.at for w in log if w.resource == "pods" and w.verb == "delete" and w.user == NODE}
    cache_removed = [at for pod, at in removed.items() if pod.startswith(f"{NAME}-cache-")]
    shards_removed = [at for pod, at in removed.items() if pod.startswith(f"{NAME}-db-")]
    assert every_pod_marked, "the namespace controller deleted no pod collection"
    assert cache_removed, "no cache pod was removed by the node"
    assert len(shards_removed) == 3, "the shard pods did not go with the namespace"
    assert min(every_pod_marked) < max(cache_removed), "the shard pods were marked only after the cache was gone"
