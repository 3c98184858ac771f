"""A busy spell: what Patroni's loop costs Metacontroller and the hooks under a writer, with no disturbance."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from ..installs import Install, failed_calls
from ..invariants import Report
from ..writers import Target, Writers
from .shard import NAME, NAMESPACE, PRIMARY_SERVICE, BroughtUp, members, primary_and_replica

BUSY_SECONDS = 30


@dataclass(frozen=True)
class Busy:
    """A quiet spell under a writer: the member pods' patches by Patroni and the syncs of the ShardDB."""

    seconds: float
    patches: int  # of member pods, by Patroni's account (its role label and status annotation)
    syncs: float  # sync calls answered 200 or 304
    failed: dict[str, float]


@pytest.fixture(scope="module")
def busy(install: Install, brought_up: BroughtUp) -> Busy:
    _ = brought_up
    primary, _standby = primary_and_replica(members(install))
    writers = Writers(install, NAMESPACE, f"{NAME}-busy", (Target(PRIMARY_SERVICE, primary),), table="acked_busy")
    writers.start()
    before = install.hook_calls()
    mark = install.stack.audit.mark()
    began = time.monotonic()
    time.sleep(BUSY_SECONDS)
    after = install.hook_calls()
    seconds = time.monotonic() - began
    patroni = f"system:serviceaccount:{NAMESPACE}:{NAME}-patroni"
    writes = install.stack.audit.since(mark, namespace=NAMESPACE)
    patches = sum(1 for w in writes if w.resource == "pods" and w.verb == "patch" and w.user == patroni)
    writers.stop()
    syncs = sum(after[key] - before.get(key, 0.0) for key in ("sync 200", "sync 304") if key in after)
    return Busy(seconds, patches, syncs, failed_calls(before, after))


def test_a_busy_shard_is_synced_only_as_patroni_patches_its_member_pods(busy: Busy, report: Report) -> None:
    """Each member's pod is patched when its WAL position moves (at most once a loop), and each patch
    requeues the ShardDB: a sync answered at once, with nothing to write. Nothing else drives syncs."""
    report(
        f"under a writer for {busy.seconds:.0f} s: {busy.patches} patches of member pods by Patroni, "
        f"{busy.syncs:.0f} syncs of the ShardDB"
    )
    assert busy.failed == {}
    assert busy.patches > 0
    assert busy.syncs <= busy.patches + 2  # and at most the resync and a status write's own event
