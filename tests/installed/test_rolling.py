"""Rolling the hooks Deployment of an installed product while Metacontroller is at work: no call fails, order holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from ..data.cluster import example
from ..e2e.sharddbs import wait_until
from .installs import HOOKS_NAMESPACE, Install, cache_gone_before_shards

pytestmark = pytest.mark.installed
NAMESPACE = "rolling"
TAGS = ("ghcr.io/example/sharddb-hooks:0.1.1", "ghcr.io/example/sharddb-hooks:0.1.0")


@pytest.fixture(scope="module")
def install(production: Install) -> Iterator[Install]:
    production.kubectl("create", "namespace", NAMESPACE)
    yield production
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


def create(install: Install, name: str) -> None:
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(example(name, NAMESPACE)))


def roll(install: Install, image: str) -> None:
    install.kubectl("-n", HOOKS_NAMESPACE, "set", "image", "deployment/sharddb-hooks", f"hooks={image}")
    install.kubectl("-n", HOOKS_NAMESPACE, "rollout", "status", "deployment/sharddb-hooks", "--timeout=5m")


def sync_errors(install: Install, name: str) -> list[str]:
    return [
        event.get("message", "")
        for event in install.events(NAMESPACE, "SyncError")
        if event["involvedObject"].get("name") == name
    ]


def test_a_hooks_rollout_during_a_bring_up_fails_no_hook_call(install: Install) -> None:
    create(install, "up")
    roll(install, TAGS[0])
    wait_until("up Available", lambda: _available(install, "up"), 300)
    assert sync_errors(install, "up") == []


def test_a_hooks_rollout_during_a_deletion_fails_no_hook_call_and_keeps_the_order(install: Install) -> None:
    create(install, "down")
    wait_until("down Available", lambda: _available(install, "down"), 300)
    mark = install.stack.audit.mark()
    install.kubectl("-n", NAMESPACE, "delete", "sharddb", "down", "--wait=false")
    roll(install, TAGS[1])
    wait_until("down gone", lambda: not install.kubectl("-n", NAMESPACE, "get", "sharddb", "down", check=False), 300)
    assert sync_errors(install, "down") == []
    cache_gone, marked = cache_gone_before_shards(install.stack.audit.since(mark, namespace=NAMESPACE), "down")
    assert cache_gone, "no cache pod was removed by a kubelet"
    assert marked, "no shard pod was stopped"
    assert max(cache_gone) < min(marked), "a shard began to stop while a cache pod was still there"


def _available(install: Install, name: str) -> bool:
    found = install.get("sharddb", "-n", NAMESPACE, name)
    return any(
        c["type"] == "Available" and c["status"] == "True" for c in found.get("status", {}).get("conditions", [])
    )
