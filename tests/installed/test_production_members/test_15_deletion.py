"""The deletion, once the last step is over: the cache gone before any member stops, Patroni's ConfigMaps removed
by the cleanup Job."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ...support.sharddbs import wait_until
from ..installs import Install, cache_gone_before_shards
from .shard import NAME, NAMESPACE, SHARD, BroughtUp, members

PATRONI_STATE = tuple(f"{SHARD}-{suffix}" for suffix in ("leader", "config", "sync", "failover"))


@dataclass(frozen=True)
class Deleted:
    cache_gone: list[float]
    members_stopped: list[float]
    cleanup_jobs_created: list[str]
    patroni_state_left: list[str]


@pytest.fixture(scope="module")
def deleted(install: Install, brought_up: BroughtUp) -> Deleted:
    """The ShardDB deleted once the last step is over (its members as that step left them)."""
    _ = brought_up
    assert len(members(install)) == 2
    mark = install.stack.audit.mark()
    install.kubectl("-n", NAMESPACE, "delete", "sharddb", NAME, "--wait=false")
    wait_until(
        f"{NAME} gone", lambda: not install.kubectl("-n", NAMESPACE, "get", "sharddb", NAME, check=False), 300, every=1
    )
    writes = install.stack.audit.since(mark, namespace=NAMESPACE)
    cache_gone, stopped = cache_gone_before_shards(writes, NAME)
    jobs = [w.name for w in writes if w.resource == "jobs" and w.verb == "create"]
    config_maps = install.get("configmaps", "-n", NAMESPACE)["items"]
    left = sorted(cm["metadata"]["name"] for cm in config_maps if cm["metadata"]["name"] in PATRONI_STATE)
    return Deleted(cache_gone, stopped, jobs, left)


def test_deleting_it_removes_the_cache_before_any_member_pod_stops(deleted: Deleted) -> None:
    assert deleted.cache_gone, "no cache pod was removed by a kubelet"
    assert deleted.members_stopped, "no member pod was stopped"
    assert max(deleted.cache_gone) < min(deleted.members_stopped)


def test_deleting_it_runs_the_patroni_cleanup_job(deleted: Deleted) -> None:
    assert deleted.cleanup_jobs_created == [f"{NAME}-patroni-cleanup"]


def test_deleting_it_leaves_none_of_patronis_config_maps(deleted: Deleted) -> None:
    assert deleted.patroni_state_left == []
