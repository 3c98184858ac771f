"""Pods that cannot start, named in Degraded with the kubelet's or the real scheduler's own message."""

from __future__ import annotations

from typing import Any

import pytest

from ..support.sharddbs import SPEC, ShardDBs, condition, wait_until

Obj = dict[str, Any]
NAME = "sick"
GRACE = 5  # seconds a passing trouble may last before it counts (spec.podStartGraceSeconds)


def _degraded(sharddbs: ShardDBs, timeout: float = 60.0) -> Obj:
    found: Obj = wait_until(
        "Degraded=True",
        lambda: (c := condition(sharddbs.get(NAME), "Degraded")).get("status") == "True" and c,
        timeout=timeout,
    )
    return found


def test_an_image_that_cannot_be_pulled_is_named_at_once(sharddbs: ShardDBs) -> None:
    sharddbs.create(NAME, {**SPEC, "dbImage": "registry.invalid/nope:1", "podStartGraceSeconds": 600})
    degraded = _degraded(sharddbs, timeout=30)
    assert degraded["reason"] == "ShardPodsFailing"
    assert f"{NAME}-db-0: ImagePullBackOff" in degraded["message"]
    assert "registry.invalid/nope:1" in degraded["message"]


def test_a_missing_secret_is_named_once_the_grace_has_passed(sharddbs: ShardDBs) -> None:
    env = [{"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "password"}}}]
    sharddbs.create(NAME, {**SPEC, "db": {"env": env}, "podStartGraceSeconds": GRACE})
    degraded = _degraded(sharddbs)
    assert degraded["reason"] == "ShardPodsFailing"
    assert "CreateContainerConfigError" in degraded["message"]
    assert 'secret "absent" not found' in degraded["message"]


@pytest.mark.parametrize("memory", ["64Ti"])
def test_a_pod_no_node_can_fit_is_named_with_the_schedulers_message(sharddbs: ShardDBs, memory: str) -> None:
    spec = {**SPEC, "db": {"resources": {"requests": {"memory": memory}}}, "podStartGraceSeconds": GRACE}
    sharddbs.create(NAME, spec)
    waiting = wait_until(
        "Progressing to say what it waits for",
        lambda: "scheduled" in condition(sharddbs.get(NAME), "Progressing").get("message", ""),
        timeout=30,
    )
    assert waiting
    degraded = _degraded(sharddbs)
    assert degraded["reason"] == "ShardPodsFailing"
    assert f"{NAME}-db-0: Unschedulable" in degraded["message"]
    assert "Insufficient memory" in degraded["message"]
