"""The fault campaign's small form: a few ShardDBs on two partitions live their whole life while everything fails.

One campaign (``bench.chaos``, as ``make chaos`` runs it for a fleet of 100) on a
stack of its own: created, scaled, rolled, hibernated, woken and deleted, with a
fault every few seconds (each kind more than once: Metacontroller, the API
server, etcd, the controller manager, the scheduler and the node agent killed or
restarted, the hooks killed or frozen past Metacontroller's timeout), then the
invariants over everything the API server stored.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from bench.chaos import EVIDENCE, PHASES, Campaign, Options, run
from testbed.faults.faults import Faults, Timing

from .conftest import Report

OPTIONS = Options(
    fleet=4,
    partitions=2,
    gap=(3.0, 8.0),
    together=0.25,
    timing=Timing(down=(0.5, 3.0), frozen=(12.0, 15.0)),
    recovery_seconds=60.0,  # client-go's relist backoff after the API server's faults: up to 60 s (bench.chaos)
    idle_seconds=20.0,
    phase_timeout=600.0,
    seed=7,
)


@pytest.fixture(scope="module")
def campaign() -> Campaign:
    kept = EVIDENCE / f"chaos-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-e2e"
    return run(OPTIONS, print, kept)  # progress lines, and where a failed campaign's logs are: shown with a failure


def test_every_phase_of_the_fleets_life_finishes_under_faults(campaign: Campaign, report: Report) -> None:
    assert list(campaign.phases) == list(PHASES)
    kinds = Counter(i.fault for i in campaign.injected)
    report(
        ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in campaign.phases.items())
        + f"; {len(campaign.injected)} faults ({dict(sorted(kinds.items()))}); longest unplanned unavailability "
        f"{campaign.longest_unavailable[0]:.1f} s; audit log {campaign.audit_bytes / 1e6:.0f} MB"
    )


def test_every_kind_of_fault_struck_more_than_once(campaign: Campaign) -> None:
    kinds = Counter(i.fault for i in campaign.injected)
    assert set(kinds) == set(Faults.KINDS)
    assert min(kinds.values()) >= 2, kinds


def test_every_part_came_back_after_its_fault(campaign: Campaign) -> None:
    assert campaign.fault_errors == []


# The one way a part ends on its own by design: the controller manager, started while the API server is away,
# exits with status 1 when its namespace controller finds no resource to know (kubernetes v1.34.4,
# pkg/controller/namespace/deletion/namespaced_resources_deleter.go), and its kubelet starts it again.
UPSTREAM_EXIT = "kube-controller-manager (exit status 1)"


def test_no_part_died_but_by_a_fault(campaign: Campaign) -> None:
    """A part restarted from a fault's thread stays up once that thread ends (no second, unplanned restart);
    only the controller manager's own exit while the API server is away is let be, as its kubelet lets it be."""
    away = [(i.started, i.ended) for i in campaign.injected if i.fault == "apiserver-restarted"]
    unplanned = [
        c
        for c in campaign.crashed
        if not (c.target == UPSTREAM_EXIT and any(start <= c.started <= end + 2.0 for start, end in away))
    ]
    assert [f"{c.target} at {c.started:.0f}" for c in unplanned] == []


def test_the_history_saw_every_child_the_fleet_was_given(campaign: Campaign) -> None:
    """The invariants are judged on a complete record, not an empty one."""
    fleet, (first, second) = OPTIONS.fleet, OPTIONS.shards
    assert campaign.made["ShardDB"] == fleet
    assert campaign.made["PersistentVolumeClaim"] == fleet * second
    assert campaign.made["Job"] >= fleet * 2  # a seed for the first count and one for the second
    assert campaign.made["Deployment"] >= fleet * 2  # the cache at bring-up, and again after the wake
    assert campaign.made["Pod"] >= fleet * (first + second)  # shards made, and rolled


def test_no_invariant_of_the_lifecycle_broke(campaign: Campaign) -> None:
    assert [str(v) for v in campaign.violations] == []


def test_after_recovery_the_fleet_costs_metacontroller_no_write(campaign: Campaign) -> None:
    assert [str(w) for w in campaign.idle_writes] == []
