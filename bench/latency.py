"""``python -m bench.latency`` (``make bench-latency``): how long a change to one ShardDB waits behind an idle fleet.

Metacontroller ends every sync, changed or not, in an uncached GET of the parent
on its rate-limited client, and its informer re-queues every parent at the same
moment each ``resyncPeriodSeconds``: a change that arrives meanwhile waits behind
about N / QPS seconds of GETs. This benchmark measures that on the real stack, for
two sets of settings side by side on the same fleet: the baseline's and the
current manifests' (the CompositeController's resync period and the partition
instance's ``--client-go-qps`` / ``--client-go-burst``, as rendered).

For each idle fleet size N, and each set of settings: Metacontroller restarted
with them (the restart queues all N at once, as a resync does: the stall is timed);
then probe ShardDBs changed at random moments over a window (``cache.replicas``),
each timed from the patch to the first hook call naming it and to Metacontroller's
first write of its child; and one ShardDB scaled from 3 to 16 shards.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from testbed.real import partitions
from testbed.stack import Instance, Stack, StackOptions
from testbed.standins.node import Behaviour

from .fleet import Fleet, example
from .run import machine, progress
from .source import Source, extract, working_tree

DEFAULT_BASELINE = "f079df8"
CONTROLLER = "sharddb"
Progress = Callable[[str], None]
Obj = dict[str, Any]
# The idle fleet grows under a budget that keeps the benchmark short; the settings
# measured are put in place afterwards, with a restart.
GROWTH = Instance(qps=200.0, burst=400, workers=10)


@dataclass(frozen=True)
class Settings:
    """What the manifests set for the instance that runs ``sharddb``: the values the benchmark compares."""

    label: str
    resync_seconds: int
    qps: float
    burst: int
    workers: int

    def instance(self) -> Instance:
        return Instance(qps=self.qps, burst=self.burst, workers=self.workers)

    def describe(self) -> str:
        return f"resync {self.resync_seconds} s, QPS {self.qps:g}, burst {self.burst}, {self.workers} workers"


def settings(source: Source, label: str) -> Settings:
    """The settings of ``overlays/partitioned`` in ``source``: p0's CompositeController and Metacontroller."""
    setup = partitions.read(partitions.kustomize(source.directory / "metacontroller" / "overlays" / "partitioned"))
    first = setup.partitions[0]
    return Settings(
        label=f"{label} `{source.revision}`",
        resync_seconds=int(first.controller["spec"].get("resyncPeriodSeconds", 0)),
        qps=float(first.flag("client-go-qps", "5")),
        burst=int(first.flag("client-go-burst", "10")),
        workers=int(first.flag("workers", "5")),
    )


@dataclass(frozen=True)
class Options:
    sizes: tuple[int, ...] = (0, 100, 300)
    probes: int = 30
    window_seconds: float = 180.0
    scale: tuple[int, int] = (3, 16)
    seed: int = 1
    timeout_seconds: float = 900.0


@dataclass
class Result:
    """One set of settings beside one idle fleet."""

    size: int
    settings: Settings
    restart_stall: float = 0.0  # from the restart until every ShardDB had its first hook call
    resync_stalls: list[float] = field(default_factory=list)  # each resync burst in the window, drained in
    to_hook: list[float] = field(default_factory=list)
    to_write: list[float] = field(default_factory=list)
    unanswered: int = 0  # changes that saw no child write before the timeout
    scale_seconds: float = 0.0


# --- what the logs say ----------------------------------------------------------------------


def _when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _hook_lines(log: Path) -> list[Obj]:
    """The hooks' log: one JSON record per hook call (other lines and partial ones left out)."""
    records = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("msg") == "hook":
            records.append(record)
    return records


def hook_calls(log: Path) -> list[tuple[float, str]]:
    """(time, "namespace/name") of every computed hook answer (a 304 names no ShardDB)."""
    return [(_when(r["time"]), str(r["parent"])) for r in _hook_lines(log) if r.get("parent")]


def sync_times(log: Path, since: float, status: int | None = None) -> list[float]:
    """When each sync call was answered after ``since`` (only those answered ``status``, when given)."""
    times = (
        _when(r["time"]) for r in _hook_lines(log) if r.get("hook") == "sync" and status in (None, r.get("status"))
    )
    return sorted(at for at in times if at >= since)


def bursts(times: list[float], size: int, gap: float = 0.25) -> list[float]:
    """How long each burst of at least ``size`` calls took: a resync queues every ShardDB at once.

    Calls closer than ``gap`` seconds belong to one burst.
    """
    found, start, count, last = [], 0.0, 0, -1e18
    for at in [*times, 1e18]:
        if at - last > gap:
            if count >= size:
                found.append(last - start)
            start, count = at, 0
        count += 1
        last = at
    return found


def first_after(events: list[tuple[float, str]], key: str, after: float) -> float | None:
    return next((at for at, name in events if name == key and at >= after), None)


def percentile(values: list[float], share: float) -> float:
    """Nearest rank: the value below which ``share`` of ``values`` lie (p99 of 30 is the largest)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(share * len(ordered))))
    return ordered[rank - 1]


# Metacontroller's --cache-flush-interval: its informers also hand every parent to the queue at this period.
CACHE_FLUSH_SECONDS = 1800.0


def share_waiting(stall: float, period: float, at_most: float = 1.0) -> float:
    """Share of all changes that wait longer than ``at_most`` behind resync bursts.

    A burst queues every ShardDB at once and drains in ``stall`` seconds; a change
    arriving t seconds into it waits about ``stall - t``. Bursts come every resync
    ``period`` and every cache-flush interval, so ``(stall - at_most)`` seconds of
    each such interval hold a change longer than ``at_most``.
    """
    every = 1.0 / period + 1.0 / CACHE_FLUSH_SECONDS if period else 1.0 / CACHE_FLUSH_SECONDS
    return min(1.0, max(0.0, stall - at_most) * every)


# --- one run ---------------------------------------------------------------------------------


class Bench:
    def __init__(self, options: Options, progress: Progress) -> None:
        self.options, self.progress = options, progress
        self.random = random.Random(options.seed)
        self.stack = Stack(
            StackOptions(
                instances=(GROWTH,),
                behaviour=Behaviour(start_seconds=1.0, job_seconds=2.0),
                isolated=True,
            )
        )
        self.idle: Fleet | None = None
        self.probes: Fleet | None = None
        self.documents: list[Obj] = []
        self.grown = 0
        self.round = 0

    def __enter__(self) -> Bench:
        self.stack.start()
        self.documents = example(self.stack.options.checkout)
        spec = next(doc["spec"] for doc in self.documents if doc["kind"] == "ShardDB")
        small = {**spec, "shards": 1, "cache": {**spec["cache"], "replicas": 1}}
        self.idle = Fleet(self.stack, "idle", [dict(doc) for doc in self.documents], 1)
        self.idle.spec = small
        self.probes = Fleet(self.stack, "probes", [dict(doc) for doc in self.documents], 1)
        self.probes.spec = small
        names = self.probe_names()
        self.probes.create(names)
        self.probes.wait_available(names, self.options.timeout_seconds)
        return self

    def __exit__(self, *exc: object) -> None:
        for fleet in (self.idle, self.probes):
            if fleet is not None:
                fleet.close()
        self.stack.stop()

    def probe_names(self) -> list[str]:
        return [f"probe-{index:02d}" for index in range(self.options.probes)]

    def restart(self, instance: Instance, resync: int | None = None) -> float:
        """Metacontroller stopped, ``sharddb`` given ``resync``, Metacontroller started again; when it started."""
        self.stack.stop_metacontroller(instance.name)
        if resync is not None:
            patch = json.dumps({"spec": {"resyncPeriodSeconds": resync}})
            self.stack._must("patch", "compositecontroller", CONTROLLER, "--type=merge", "-p", patch)
        started = time.time()
        self.stack.start_metacontroller(instance)
        return started

    def grow(self, size: int) -> None:
        """The idle fleet brought to ``size`` ShardDBs, all Available, under the growth budget."""
        assert self.idle is not None
        if size <= self.grown:
            return
        self.restart(GROWTH)
        names = [f"idle-{index:03d}" for index in range(size)]
        self.idle.create(names[self.grown :])
        start = time.monotonic()
        self.idle.wait_available(names, self.options.timeout_seconds)
        self.progress(f"idle fleet: {size} Available ({time.monotonic() - start:.0f} s to add {size - self.grown})")
        self.grown = size

    def measure(self, size: int, chosen: Settings) -> Result:
        assert self.probes is not None
        self.round += 1
        result = Result(size, chosen)
        scale_fleet = Fleet(self.stack, f"scale-{self.round}", [dict(doc) for doc in self.documents], 1)
        try:
            scale_fleet.create(["scaled"], {**scale_fleet.spec, "shards": self.options.scale[0]})
            scale_fleet.wait_available(["scaled"], self.options.timeout_seconds)
            log = self.stack.hooks.stdout if self.stack.hooks else None
            assert log is not None
            started = self.restart(chosen.instance(), chosen.resync_seconds)
            parents = {f"idle/idle-{i:03d}" for i in range(size)} | {f"probes/{n}" for n in self.probe_names()}
            result.restart_stall = self._drained(log, parents, started)
            self.progress(f"  [{chosen.label}] N={size}: restart queue drained in {result.restart_stall:.1f} s")
            window_start = time.time()
            self._changes(log, result, scale_fleet)
            # A resync re-asks unchanged ShardDBs: a run of 304s; the changes' own calls are answered in full.
            result.resync_stalls = bursts(sync_times(log, window_start, status=304), int(0.9 * len(parents)))
        finally:
            scale_fleet.close()
        return result

    def _drained(self, log: Path, parents: set[str], started: float) -> float:
        deadline = time.monotonic() + self.options.timeout_seconds
        while time.monotonic() < deadline:
            seen: dict[str, float] = {}
            for at, name in hook_calls(log):
                if at >= started and name not in seen:
                    seen[name] = at
            if parents <= seen.keys():
                return max(seen[name] for name in parents) - started
            time.sleep(1.0)
        raise TimeoutError(f"not every ShardDB was synced within {self.options.timeout_seconds:.0f} s of a restart")

    def _changes(self, log: Path, result: Result, scale_fleet: Fleet) -> None:
        """Each probe's ``cache.replicas`` flipped once, at uniformly random moments over the window."""
        assert self.probes is not None
        window = self.options.window_seconds
        moments = sorted(self.random.uniform(0, window) for _ in self.probe_names())
        scale_at = self.random.uniform(0, window / 2)
        replicas = 2 if self.round % 2 else 1
        mark = self.stack.audit.mark()
        begin = time.monotonic()
        patched: list[tuple[str, float]] = []
        scaling = threading.Thread(target=self._scale, args=(scale_fleet, begin + scale_at, result), daemon=True)
        scaling.start()
        for name, moment in zip(self.probe_names(), moments, strict=True):
            self._sleep_until(begin + moment)
            at = time.time()
            self._patch(name, replicas)
            patched.append((name, at))
        scaling.join()
        users = {instance.user for instance in self.stack.instances}
        deadline = time.monotonic() + self.options.timeout_seconds
        while True:
            writes = [
                (w.at.timestamp(), w.name)
                for w in self.stack.audit.since(mark, namespace="probes")
                if w.user in users and w.resource == "deployments" and w.verb in ("update", "patch")
            ]
            firsts = [first_after(writes, f"{name}-cache", at) for name, at in patched]
            if all(first is not None for first in firsts) or time.monotonic() > deadline:
                break
            time.sleep(2.0)
        calls = hook_calls(log)
        for (name, at), written in zip(patched, firsts, strict=True):
            answered = first_after(calls, f"probes/{name}", at)
            if answered is None or written is None:
                result.unanswered += 1
                continue
            result.to_hook.append(answered - at)
            result.to_write.append(written - at)

    def _scale(self, fleet: Fleet, moment: float, result: Result) -> None:
        """One ShardDB scaled up at ``moment``, timed until it is Available with every new shard ready."""
        self._sleep_until(moment)
        started = time.monotonic()
        fleet.scale("scaled", self.options.scale[1])
        fleet.wait_available(["scaled"], self.options.timeout_seconds, shards=self.options.scale[1])
        result.scale_seconds = time.monotonic() - started

    def _patch(self, name: str, replicas: int) -> None:
        assert self.probes is not None
        response = self.probes.http.patch(
            f"{self.probes.base}/{name}",
            json={"spec": {"cache": {"replicas": replicas}}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        response.raise_for_status()

    @staticmethod
    def _sleep_until(moment: float) -> None:
        time.sleep(max(0.0, moment - time.monotonic()))


# --- report ----------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds:.2f}"


def table(results: list[Result], options: Options, compared: list[Settings]) -> str:
    alone = {r.settings.label: r.scale_seconds for r in results if r.size == 0}
    lines = [
        f"Change latency ({time.strftime('%Y-%m-%d')}; {machine()}): one stack (etcd, kube-apiserver, "
        "kube-controller-manager, kube-scheduler, one Metacontroller v4.17.2, the working tree's hooks, the node "
        f"agent); beside N idle ShardDBs (1 shard, 1 cache pod each) and {options.probes} probe ShardDBs, each "
        f"probe's `cache.replicas` changed once at a random moment over {options.window_seconds:g} s; times from the "
        "patch to the first hook call naming the probe (hooks' log) and to Metacontroller's update of its cache "
        "Deployment (audit log). Settings compared: " + "; ".join(f"{s.label}: {s.describe()}" for s in compared) + ".",
        "",
        "| settings | idle N | to hook p50 / p99 (s) | to child write p50 / p99 (s) | restart stall (s) "
        "| resync stall (s, bursts seen) | share > 1 s | scale-up 3→16 (s) | vs alone |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        base = alone.get(r.settings.label, 0.0)
        ratio = f"{r.scale_seconds / base:.2f}" if base else "—"
        stall = max(r.resync_stalls) if r.resync_stalls else r.restart_stall
        share = share_waiting(stall, r.settings.resync_seconds)
        timed = f"{max(r.resync_stalls):.1f} ({len(r.resync_stalls)})" if r.resync_stalls else "—"
        missing = f" ({r.unanswered} unanswered)" if r.unanswered else ""
        lines.append(
            f"| {r.settings.label} | {r.size} | {_ms(statistics.median(r.to_hook) if r.to_hook else float('nan'))} / "
            f"{_ms(percentile(r.to_hook, 0.99))}{missing} | "
            f"{_ms(statistics.median(r.to_write) if r.to_write else float('nan'))} / "
            f"{_ms(percentile(r.to_write, 0.99))} | {r.restart_stall:.1f} | {timed} | {share:.2%} | "
            f"{r.scale_seconds:.1f} | {ratio} |"
        )
    return "\n".join(lines) + "\n"


# --- command line ----------------------------------------------------------------------------


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(part) for part in text.split(",") if part.strip())
    if not sizes or min(sizes) < 0:
        raise argparse.ArgumentTypeError("expected idle fleet sizes like 0,100,300")
    return tuple(sorted(set(sizes)))


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, Options]:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--baseline", default=DEFAULT_BASELINE, help=f"git revision whose settings to compare ({DEFAULT_BASELINE})"
    )
    parser.add_argument("--idle", type=_sizes, default=(0, 100, 300), help="idle fleet sizes (0,100,300)")
    parser.add_argument("--probes", type=int, default=30, help="changes per measurement, one probe ShardDB each (30)")
    parser.add_argument("--window", type=float, default=180.0, help="seconds the changes are spread over (180)")
    parser.add_argument(
        "--also-resync",
        type=int,
        default=0,
        help="also the current budget with this resync period, short enough for the window to see its bursts (0: no)",
    )
    parser.add_argument("--no-baseline", action="store_true", help="leave the baseline's settings out")
    parser.add_argument("--no-current", action="store_true", help="leave the current settings out (--also-resync only)")
    parser.add_argument("--seed", type=int, default=1, help="random moments' seed (1)")
    parser.add_argument("--timeout", type=float, default=900.0, help="give up on a step after this (900 s)")
    args = parser.parse_args(argv)
    options = Options(
        sizes=args.idle,
        probes=args.probes,
        window_seconds=args.window,
        seed=args.seed,
        timeout_seconds=args.timeout,
    )
    return args, options


def main(argv: list[str] | None = None) -> None:
    args, options = parse(argv)
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sharddb-latency-")))
        current = settings(working_tree(), "current")
        compared = [] if args.no_baseline else [settings(extract(args.baseline, work), "baseline")]
        if not args.no_current:
            compared.append(current)
        if args.also_resync:
            label = f"{current.label} at resync {args.also_resync} s"
            compared.append(dataclasses.replace(current, label=label, resync_seconds=args.also_resync))
        for chosen in compared:
            progress(f"{chosen.label}: {chosen.describe()}")
        results: list[Result] = []
        with Bench(options, progress) as bench:
            for size in options.sizes:
                bench.grow(size)
                for chosen in compared:
                    result = bench.measure(size, chosen)
                    results.append(result)
                    progress(
                        f"  [{chosen.label}] N={size}: to hook p50 {statistics.median(result.to_hook or [0]):.2f} s, "
                        f"p99 {percentile(result.to_hook, 0.99):.2f} s; scale-up {result.scale_seconds:.1f} s"
                    )
        print(table(results, options, compared))


if __name__ == "__main__":
    main()
