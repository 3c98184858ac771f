"""A shard that waits for a cordoned node says so, with the real scheduler's words, and is no damage yet."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support.kube import Kube, error_message, path

from ..support.sharddbs import SPEC, ShardDBs, condition, wait_until

NAME = "drained"
NODE = "node-1"  # the stack's one node


def _set_unschedulable(kube: Kube, unschedulable: bool) -> None:
    """``kubectl cordon`` / ``uncordon``: the Node's ``spec.unschedulable``."""
    response = kube.http.patch(
        f"/api/v1/nodes/{NODE}",
        content=json.dumps({"spec": {"unschedulable": unschedulable}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert response.status_code == 200, error_message(response)


@pytest.fixture
def cordoned(kube: Kube) -> Iterator[None]:
    """Cordoned, and uncordoned whatever the test's outcome (every other test needs the node)."""
    _set_unschedulable(kube, True)
    try:
        yield
    finally:
        _set_unschedulable(kube, False)


def test_a_shard_waiting_on_a_cordoned_node_says_so_and_heals_on_uncordon(
    kube: Kube, namespace: str, sharddbs: ShardDBs, request: pytest.FixtureRequest
) -> None:
    sharddbs.create(NAME, {**SPEC, "podStartGraceSeconds": 600})
    sharddbs.available(NAME)
    request.getfixturevalue("cordoned")
    response = kube.http.delete(path("Pod", f"{NAME}-db-1", namespace))
    assert response.status_code == 200, error_message(response)
    message = wait_until(
        "Progressing to say the shard waits for a cordoned node",
        lambda: (
            "cordoned: drained-db-1" in (m := condition(sharddbs.get(NAME), "Progressing").get("message", "")) and m
        ),
        timeout=90,
    )
    assert "1 shard pod waiting" in message
    assert condition(sharddbs.get(NAME), "Degraded")["reason"] != "ShardPodsFailing"  # within the grace
    pod = kube.get("Pod", f"{NAME}-db-1", namespace)
    scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert "node(s) were unschedulable" in scheduled["message"]
    _set_unschedulable(kube, False)
    sharddbs.available(NAME)
