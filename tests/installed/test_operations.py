"""Operating the installed product while Metacontroller is at work: rolling the hooks, deleting pods, an outage."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import yaml

from ..support.examples import example
from ..support.sharddbs import wait_until
from .conftest import Report
from .installs import HOOKS_NAMESPACE, METACONTROLLER_NAMESPACE, Install, assert_cache_gone_before_shards, failed_calls

NAMESPACE = "rolling"
OUTAGE_SECONDS = 15
TAGS = ("ghcr.io/example/sharddb-hooks:0.1.1", "ghcr.io/example/sharddb-hooks:0.1.0")


@pytest.fixture(scope="module")
def install(production: Install) -> Iterator[Install]:
    production.settled().kubectl("create", "namespace", NAMESPACE)
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


def test_a_hooks_rollout_during_a_bring_up_fails_no_hook_call(install: Install, report: Report) -> None:
    before = install.hook_calls()
    create(install, "up")
    roll(install, TAGS[0])
    wait_until("up Available", lambda: _available(install, "up"), 300)
    after = install.hook_calls()
    report(calls(before, after))
    assert sync_errors(install, "up") == []
    assert failed_calls(before, after) == {}


def test_a_hooks_rollout_during_a_deletion_fails_no_hook_call_and_keeps_the_order(
    install: Install, report: Report
) -> None:
    create(install, "down")
    wait_until("down Available", lambda: _available(install, "down"), 300)
    before = install.hook_calls()
    mark = install.stack.audit.mark()
    install.kubectl("-n", NAMESPACE, "delete", "sharddb", "down", "--wait=false")
    roll(install, TAGS[1])
    wait_until("down gone", lambda: not install.kubectl("-n", NAMESPACE, "get", "sharddb", "down", check=False), 300)
    after = install.hook_calls()
    report(calls(before, after))
    assert sync_errors(install, "down") == []
    assert failed_calls(before, after) == {}
    assert_cache_gone_before_shards(install, mark, NAMESPACE, "down")


def calls(before: dict[str, float], after: dict[str, float]) -> str:
    answered = sum(after.values()) - sum(before.values())
    return f"hook calls answered meanwhile {answered:.0f}, failed {failed_calls(before, after)}"


def _available(install: Install, name: str) -> bool:
    found = install.get("sharddb", "-n", NAMESPACE, name)
    return any(
        c["type"] == "Available" and c["status"] == "True" for c in found.get("status", {}).get("conditions", [])
    )


def test_a_bring_up_resumes_after_a_hooks_pod_and_the_metacontroller_pod_are_deleted(
    install: Install, report: Report
) -> None:
    began = time.monotonic()
    create(install, "killed")
    hooks = install.hooks_pods()[0]["metadata"]["name"]
    install.kubectl("-n", HOOKS_NAMESPACE, "delete", "pod", hooks, "--wait=false")
    install.kubectl("-n", METACONTROLLER_NAMESPACE, "delete", "pod", "metacontroller-0", "--wait=false")
    wait_until("killed Available", lambda: _available(install, "killed"), 300)
    report(
        f"Available {time.monotonic() - began:.1f} s after create; "
        f"SyncError events {len(sync_errors(install, 'killed'))}"
    )
    assert _available(install, "killed")


def test_every_hooks_replica_down_then_back_brings_a_waiting_sharddb_up(install: Install, report: Report) -> None:
    install.kubectl("-n", HOOKS_NAMESPACE, "scale", "deployment/sharddb-hooks", "--replicas=0")
    wait_until("no hooks pod", lambda: not install.hooks_pods(), 120)
    create(install, "outage")
    time.sleep(OUTAGE_SECONDS)
    install.kubectl("-n", HOOKS_NAMESPACE, "scale", "deployment/sharddb-hooks", "--replicas=3")
    install.kubectl("-n", HOOKS_NAMESPACE, "rollout", "status", "deployment/sharddb-hooks", "--timeout=5m")
    back = time.monotonic()
    wait_until("outage Available", lambda: _available(install, "outage"), 600)
    report(
        f"hooks down {OUTAGE_SECONDS} s; Available {time.monotonic() - back:.1f} s after they were back; "
        f"SyncError events {len(sync_errors(install, 'outage'))}"
    )
    assert sync_errors(install, "outage"), "no call failed while every hooks replica was down"
