"""``python -m bench.chaos`` (``make chaos``): a fleet's whole life on the real stack while its components fail.

In the spirit of etcd's robustness tests: a workload, faults injected on a
schedule, then invariants checked over the complete history. The workload is a
fleet of ShardDBs on two partitions, created, scaled, rolled to new images,
hibernated, woken and deleted, each phase waited out for every ShardDB. The
faults (``testbed.faults.faults``) come at random moments, one or two at once, from the
first phase to the last; before the deletion they stop for a while, and the
fleet must recover, stay Available and cost Metacontroller no write. The
invariants (``testbed.faults.invariants``) are judged over every change the API server
stored (``testbed.faults.history``) and over its audit log (no pod deleted by the node
unless someone marked it for deletion first). Without ``--faults-only``,
the same workload first runs without faults, for the phase times side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from testbed.faults.faults import Faults, Injected, Schedule, Supervisor, Timing
from testbed.faults.history import History
from testbed.faults.invariants import Violation, check, degraded_after, longest_unavailable, unmarked_deletions
from testbed.real.audit import Write
from testbed.real.evidence import keep_logs
from testbed.stack import Stack, StackOptions
from testbed.standins.node import Behaviour

from .fleet import Fleet, available, example
from .run import machine, progress

Obj = dict[str, Any]
Progress = Callable[[str], None]
NAMESPACE = "fleet"
PHASES = ("create", "scale", "roll", "hibernate", "wake", "delete")
ROLLED_DB, ROLLED_CACHE = "postgres:16.4", "redis:7.4"
ROLLED_IMAGES: Obj = {"dbImage": ROLLED_DB, "cache": {"image": ROLLED_CACHE}}
EVIDENCE = Path(__file__).resolve().parent.parent / ".evidence"  # a failed campaign's logs (git-ignored)


@dataclass(frozen=True)
class Options:
    fleet: int = 100
    partitions: int = 2
    shards: tuple[int, int] = (3, 4)  # created with, scaled to
    faults: bool = True
    gap: tuple[float, float] = (5.0, 20.0)  # seconds between one fault (or two) and the next
    together: float = 0.25  # share of moments with two faults at once
    timing: Timing = field(default_factory=Timing)
    # Faults stopped, before the idle window: an informer whose watch kept failing relists only after client-go's
    # backoff, which stays in [30, 60) s until the API server has been healthy for 2 minutes. Until then
    # Metacontroller may act on a stale cache (a child it just made, created again: 409).
    recovery_seconds: float = 60.0
    idle_seconds: float = 30.0
    phase_timeout: float = 1800.0
    seed: int = 1


@dataclass
class Campaign:
    """What one run did and found."""

    faults: bool
    phases: dict[str, float] = field(default_factory=dict)  # seconds each phase took
    injected: list[Injected] = field(default_factory=list)
    crashed: list[Injected] = field(default_factory=list)  # parts that died on their own and were started again
    fault_errors: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    idle_writes: list[Write] = field(default_factory=list)
    longest_unavailable: tuple[float, str] = (0.0, "")
    relists: int = 0
    made: Counter[str] = field(default_factory=Counter)  # objects of each kind the history saw created
    audit_bytes: int = 0  # the API server's audit log at the end, read whole (never rotated)

    @property
    def passed(self) -> bool:
        return not (self.violations or self.idle_writes or self.fault_errors)


class Workload:
    """The fleet of one run, driven as its users would, every ShardDB at once."""

    def __init__(self, stack: Stack, options: Options, progress: Progress) -> None:
        self.stack, self.options, self.progress = stack, options, progress
        self.fleet = Fleet(stack, NAMESPACE, example(stack.options.checkout), options.partitions)
        self.names = [f"db-{index:03d}" for index in range(options.fleet)]
        self.fleet.spec = {**self.fleet.spec, "shards": options.shards[0]}

    def close(self) -> None:
        self.fleet.close()

    def items(self) -> list[Obj]:
        items: list[Obj] = self._get(self.fleet.base)["items"]
        return items

    def _get(self, path: str) -> Obj:
        result: Obj = self._request("GET", path).json()
        return result

    def _write(self, method: str, path: str, body: Obj | None = None) -> None:
        self._request(method, path, body)

    def _request(self, method: str, path: str, body: Obj | None = None) -> httpx.Response:
        """A request that waits out a restarting API server or etcd (up to 2 minutes), as a user's retry would."""
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {}
        done = {"DELETE": 404, "POST": 409}.get(method)  # an earlier try's answer was lost on the way
        deadline = time.monotonic() + 120
        while True:
            try:
                response = self.fleet.http.request(method, path, json=body, headers=headers)
            except httpx.HTTPError:
                response = None
            if response is not None:
                if response.status_code < 300 or response.status_code == done:
                    return response
                if response.status_code < 500 and response.status_code != 429:
                    raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{method} {path} kept failing")
            time.sleep(1.0)

    def patch_all(self, spec: Obj) -> None:
        for name in self.names:
            self._write("PATCH", f"{self.fleet.base}/{name}", {"spec": spec})

    def wait(self, what: str, done: Callable[[list[Obj]], bool]) -> None:
        deadline = time.monotonic() + self.options.phase_timeout
        while time.monotonic() < deadline:
            if done(self.items()):
                return
            time.sleep(2.0)
        raise TimeoutError(f"{what}: not reached within {self.options.phase_timeout:.0f} s")

    def all_available(self, items: list[Obj], shards: int | None = None) -> bool:
        return len(items) == len(self.names) and all(available(item, shards) for item in items)

    def rolled(self, items: list[Obj]) -> bool:
        if not self.all_available(items, self.options.shards[1]):
            return False
        pods = self._get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
        wanted = {ROLLED_DB, ROLLED_CACHE}
        running = [p for p in pods if p["metadata"].get("labels", {}).get("app.kubernetes.io/component") != "seed"]
        images = {c["image"] for p in running for c in p["spec"]["containers"]}
        return images == wanted and not any(p["metadata"].get("deletionTimestamp") for p in running)

    # --- the phases ------------------------------------------------------------------------

    def create(self) -> None:
        """Every ShardDB, labelled round robin across the partitions; one already made by a lost answer counts."""
        for index, name in enumerate(self.names):
            meta: Obj = {"name": name, "namespace": NAMESPACE}
            if self.options.partitions > 1:
                meta["labels"] = {"mygroup.example.com/partition": f"p{index % self.options.partitions}"}
            body = {"apiVersion": "mygroup.example.com/v1alpha1", "kind": "ShardDB", "metadata": meta}
            self._write("POST", self.fleet.base, {**body, "spec": self.fleet.spec})

    def run_phase(self, phase: str) -> None:
        second = self.options.shards[1]
        if phase == "create":
            self.create()
            self.wait("every ShardDB Available", self.all_available)
        elif phase == "scale":
            self.patch_all({"shards": second})
            self.wait(f"every ShardDB Available with {second} shards", lambda i: self.all_available(i, second))
        elif phase == "roll":
            self.patch_all(ROLLED_IMAGES)
            self.wait("every pod on the new images", self.rolled)
        elif phase == "hibernate":
            self.patch_all({"hibernated": True})
            self.wait(
                "every ShardDB Hibernated",
                lambda items: all(i.get("status", {}).get("phase") == "Hibernated" for i in items),
            )
        elif phase == "wake":
            self.patch_all({"hibernated": False})
            self.wait("every ShardDB Available again", lambda i: self.all_available(i, second))
        elif phase == "delete":
            for name in self.names:
                self._write("DELETE", f"{self.fleet.base}/{name}")
            self.wait("every ShardDB gone", lambda items: not items)


def stack_options(options: Options) -> StackOptions:
    """The shipped install: its partitions, resync period and client budget; the node agent for the pods."""
    return StackOptions(
        partitions=options.partitions,
        shipped_budget=True,
        behaviour=Behaviour(start_seconds=1.0, job_seconds=2.0),
    )


def run(options: Options, progress: Progress, evidence: Path | None = None) -> Campaign:
    """One campaign on a stack of its own: the workload, with faults when ``options.faults``, then the checks.

    A campaign that failed (or did not finish) keeps its stack's logs in ``evidence``, when given.
    """
    campaign = Campaign(faults=options.faults)
    rng = random.Random(options.seed)
    stack = Stack(stack_options(options))
    stack.start()
    plane = stack.control_plane
    history = History(plane.url, plane.token, plane.ca_file)
    history.start()
    faults = Faults(stack, rng, options.timing)
    schedule = Schedule(faults, rng, options.gap, options.together)
    supervisor = Supervisor(faults)
    supervisor.start()
    workload = Workload(stack, options, progress)
    planned: list[tuple[float, float]] = []
    finished = False
    try:
        if options.faults:
            schedule.start()
        for phase in PHASES:
            if phase == "delete":
                _settle(stack, workload, schedule, history, campaign, options, progress)
            started, clock = time.time(), time.monotonic()
            workload.run_phase(phase)
            campaign.phases[phase] = time.monotonic() - clock
            if phase in ("hibernate", "wake"):
                planned.append((started, time.time()))
            progress(f"  {phase}: {campaign.phases[phase]:.1f} s, {len(schedule.injected)} faults so far")
        schedule.stop()
        finished = True
    finally:
        schedule.stop()
        supervisor.stop()
        workload.close()
        history.stop()
        try:
            # Judged while the stack is there: the audit log goes with it.
            campaign.violations += unmarked_deletions(stack.audit.writes())
            campaign.audit_bytes = stack.audit.mark()
            changes = history.changes()
            campaign.injected = list(schedule.injected)
            campaign.fault_errors = list(schedule.errors)
            campaign.crashed = list(supervisor.crashed)
            campaign.violations += check(changes)
            campaign.longest_unavailable = longest_unavailable(changes, _merged(planned))
            campaign.relists = history.relists
            campaign.made = Counter(c.kind for c in changes if c.type == "ADDED" and c.namespace == NAMESPACE)
        finally:
            if evidence is not None and not (finished and campaign.passed and not campaign.crashed):
                keep_logs(plane.root, evidence)
                progress(f"  the stack's logs: {evidence}")
            stack.stop()
    return campaign


def _merged(planned: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Hibernation through wake-up is one planned outage."""
    return [(planned[0][0], planned[-1][1])] if planned else []


def _settle(
    stack: Stack,
    workload: Workload,
    schedule: Schedule,
    history: History,
    campaign: Campaign,
    options: Options,
    progress: Progress,
) -> None:
    """Faults stopped: every ShardDB Available again, then an idle window with no Metacontroller write."""
    schedule.stop()
    second = options.shards[1]
    workload.wait("every ShardDB Available after the faults", lambda i: workload.all_available(i, second))
    time.sleep(options.recovery_seconds)
    recovered, mark = time.time(), stack.audit.mark()
    time.sleep(options.idle_seconds)
    campaign.idle_writes = [w for w in stack.metacontroller_writes(mark, ok=False) if w.namespace == NAMESPACE]
    campaign.violations += degraded_after(history.changes(), recovered)
    if not workload.all_available(workload.items(), second):
        campaign.violations.append(Violation("available-after-recovery", NAMESPACE, 0, "a ShardDB left Available"))
    progress(f"  recovered and idle: {len(campaign.idle_writes)} Metacontroller writes in {options.idle_seconds:g} s")
    if options.faults:
        schedule.start()


# --- report ----------------------------------------------------------------------------------


def report(runs: list[Campaign], options: Options) -> str:
    faulty = next((c for c in runs if c.faults), runs[-1])
    clean = next((c for c in runs if not c.faults), None)
    kinds = Counter(i.fault for i in faulty.injected)
    lines = [
        f"Fault campaign ({time.strftime('%Y-%m-%d')}; {machine()}): {options.fleet} ShardDBs on {options.partitions} "
        "partitions, on the real stack (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, one "
        "Metacontroller v4.17.2 per partition at the shipped settings, the hooks, the node agent), through "
        f"{', '.join(PHASES)}; faults every {options.gap[0]:g} to {options.gap[1]:g} s "
        f"({options.together:.0%} of them two at once), stopped for the recovery and idle window before deletion.",
        "",
        "| phase | without faults (s) | with faults (s) |",
        "|---|---:|---:|",
    ]
    for phase in PHASES:
        before = f"{clean.phases[phase]:.1f}" if clean and phase in clean.phases else "—"
        lines.append(f"| {phase} | {before} | {faulty.phases.get(phase, float('nan')):.1f} |")
    longest, who = faulty.longest_unavailable
    lines += [
        "",
        f"Faults injected: {len(faulty.injected)} ("
        + ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
        + f"); watch relists: {faulty.relists}.",
        f"Longest time a ShardDB was not Available outside the planned hibernation: {longest:.1f} s"
        + (f" ({who})" if who else "")
        + ".",
        f"Metacontroller writes in the idle window after recovery: {len(faulty.idle_writes)}.",
        f"Invariant violations: {len(faulty.violations)}; faults that did not come back: {len(faulty.fault_errors)}; "
        f"parts that died on their own and were started again: {len(faulty.crashed)}"
        + (f" ({', '.join(sorted({c.target for c in faulty.crashed}))})" if faulty.crashed else "")
        + ".",
    ]
    lines += [f"- {v}" for v in faulty.violations[:50]]
    lines += [f"- idle write: {w}" for w in faulty.idle_writes[:20]]
    lines += [f"- fault error: {e}" for e in faulty.fault_errors]
    return "\n".join(lines) + "\n"


# --- command line ----------------------------------------------------------------------------


def _span(text: str) -> tuple[float, float]:
    low, _, high = text.partition(":")
    return float(low), float(high or low)


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, Options]:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--fleet", type=int, default=100, help="ShardDBs (100)")
    parser.add_argument("--partitions", type=int, default=2, help="Metacontroller partitions (2)")
    parser.add_argument("--gap", type=_span, default=(5.0, 20.0), help="seconds between faults, LOW:HIGH (5:20)")
    parser.add_argument("--faults-only", action="store_true", help="skip the run without faults")
    parser.add_argument("--seed", type=int, default=1, help="the schedule's seed (1)")
    parser.add_argument("--idle", type=float, default=30.0, help="idle window after recovery, seconds (30)")
    args = parser.parse_args(argv)
    options = Options(
        fleet=args.fleet, partitions=args.partitions, gap=args.gap, seed=args.seed, idle_seconds=args.idle
    )
    return args, options


def main(argv: list[str] | None = None) -> None:
    args, options = parse(argv)
    runs = []
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    for faults in (False, True) if not args.faults_only else (True,):
        progress(f"{'with' if faults else 'without'} faults: {options.fleet} ShardDBs")
        kept = EVIDENCE / f"chaos-{stamp}-{'faults' if faults else 'no-faults'}"
        runs.append(run(dataclasses.replace(options, faults=faults), progress, kept))
    print(report(runs, options))
    if not runs[-1].passed:
        sys.exit(1)


if __name__ == "__main__":
    main()
