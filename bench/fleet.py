"""``python -m bench.fleet`` (``make bench-fleet``): a fleet of ShardDBs on Metacontroller's write budget.

Two code versions side by side in one run: a baseline git revision and the
working tree (or a second revision). Each gets its own real etcd and
kube-apiserver (with its own CRD) and its own ``python -m hooks`` on loopback;
a Metacontroller-like loop (``bench.sim.metacontroller``: 5 workers, every write
through one QPS 5 / burst 10 token bucket) drives them, and a simulated kubelet
and built-in controllers (``bench.sim.cluster``) make pods, Jobs and the cache
ready. Per fleet size N: time until all N are Available, writes and hook calls
per ShardDB, then writes and hook calls per minute while idle; and one ShardDB
scaled from 3 to 16 shards. Prints a Markdown table: baseline, current, ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from testbed.controlplane import build_binaries, start_plane

from .run import machine
from .sim.api import Endpoint, Obj
from .sim.cluster import Timings
from .sim.harness import ROOT, Harness, example_spec, install_crd
from .sim.hookserver import Source, extract, serve, working_tree
from .sim.metacontroller import WRITE_KINDS, LoopSettings, Tally

DEFAULT_BASELINE = "086dd9c"
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Options:
    """What to run; the defaults are Metacontroller's and the CompositeController's."""

    sizes: tuple[int, ...] = (1, 20)
    idle_seconds: float = 60.0
    scale: tuple[int, int] | None = (3, 16)
    settings: LoopSettings = field(default_factory=LoopSettings)
    timings: Timings = field(default_factory=Timings)
    timeout_seconds: float = 1200.0


@dataclass(frozen=True)
class FleetResult:
    """N ShardDBs created at once: until all are Available, then an idle window."""

    size: int
    seconds: float
    bringup: Tally
    idle: Tally
    phases: Mapping[str, str]  # every ShardDB's phase at the end of the idle window
    cluster_errors: Mapping[str, str]  # last error of each simulated component that failed (retried)


@dataclass(frozen=True)
class ScaleResult:
    """One Available ShardDB asked for more shards: until Available again with all of them."""

    from_shards: int
    to_shards: int
    seconds: float
    tally: Tally


@dataclass
class Version:
    """One code version under test, with the API server and hook server it runs against."""

    role: str  # baseline or current
    source: Source
    endpoint: Endpoint
    hooks_url: str
    fleets: dict[int, FleetResult] = field(default_factory=dict)
    scale: ScaleResult | None = None


# --- scenarios ------------------------------------------------------------------------


async def bring_up(harness: Harness, size: int, spec: Obj, idle_seconds: float, timeout: float) -> FleetResult:
    """Create ``size`` ShardDBs at once, time them to Available, then count an idle window."""
    names = [f"db-{index:03d}" for index in range(size)]
    before, start = harness.snapshot(), time.monotonic()
    await harness.create(names, spec)
    await harness.wait_available(names, timeout)
    seconds = time.monotonic() - start
    bringup = harness.tally_since(before, seconds)
    before, start = harness.snapshot(), time.monotonic()
    await asyncio.sleep(idle_seconds)
    idle = harness.tally_since(before, time.monotonic() - start)
    phases = {name: harness.phase(name) for name in names}
    return FleetResult(size, seconds, bringup, idle, phases, harness.cluster.failures)


async def scale_up(harness: Harness, spec: Obj, shards: tuple[int, int], timeout: float) -> ScaleResult:
    """Bring one ShardDB up with ``shards[0]``, then time it to Available with ``shards[1]``."""
    name = "scaled"
    await harness.create([name], {**spec, "shards": shards[0]})
    await harness.wait_available([name], timeout)
    before, start = harness.snapshot(), time.monotonic()
    await harness.scale(name, shards[1])
    await harness.wait_available([name], timeout, shards=shards[1])
    seconds = time.monotonic() - start
    return ScaleResult(shards[0], shards[1], seconds, harness.tally_since(before, seconds))


async def run_fleet(
    endpoint: Endpoint,
    hooks_url: str,
    namespace: str,
    size: int,
    options: Options | None = None,
    spec: Obj | None = None,
    source: Path = ROOT,
) -> FleetResult:
    """One fleet scenario in a namespace of its own; ``source`` holds the version's CompositeController."""
    options = options or Options()
    async with Harness(endpoint, namespace, hooks_url, options.settings, options.timings, source) as harness:
        return await bring_up(harness, size, spec or example_spec(), options.idle_seconds, options.timeout_seconds)


async def run_scale(
    endpoint: Endpoint, hooks_url: str, namespace: str, options: Options, source: Path = ROOT
) -> ScaleResult:
    """The scale-up scenario in a namespace of its own."""
    if options.scale is None:
        raise ValueError("no scale-up asked for (options.scale is None)")
    async with Harness(endpoint, namespace, hooks_url, options.settings, options.timings, source) as harness:
        return await scale_up(harness, example_spec(), options.scale, options.timeout_seconds)


async def measure(versions: list[Version], options: Options, progress: Progress) -> None:
    """Every scenario for each version in turn (baseline, then current), so drift hits both alike."""
    for size in options.sizes:
        for version in versions:
            result = await run_fleet(
                version.endpoint, version.hooks_url, f"fleet-{size}", size, options, source=version.source.directory
            )
            version.fleets[size] = result
            progress(f"{_name(version)} N={size}: {_fleet_line(result)}")
            if result.cluster_errors:
                progress(f"{_name(version)} simulated cluster errors (retried): {result.cluster_errors}")
    if options.scale is not None:
        for version in versions:
            version.scale = await run_scale(
                version.endpoint, version.hooks_url, "scale-up", options, version.source.directory
            )
            progress(f"{_name(version)} scale-up: Available again in {version.scale.seconds:.1f} s")


def _name(version: Version) -> str:
    return f"[{version.role} {version.source.revision}]"


def _fleet_line(result: FleetResult) -> str:
    return (
        f"all Available in {result.seconds:.1f} s, {result.bringup.total_writes / result.size:.1f} writes "
        f"and {result.bringup.total_hook_calls / result.size:.1f} hook calls per ShardDB; idle "
        f"{result.idle.per_minute(result.idle.total_writes):.1f} writes/min"
    )


# --- report ----------------------------------------------------------------------------


def _ratio(baseline: float, current: float) -> str:
    if baseline == 0:
        return "—"
    return f"{current / baseline:.2f}"


def _row(metric: str, baseline: float, current: float, digits: int = 1) -> str:
    return f"| {metric} | {baseline:,.{digits}f} | {current:,.{digits}f} | {_ratio(baseline, current)} |"


def _fleet_rows(size: int, base: FleetResult, cur: FleetResult) -> list[str]:
    b, c = base.bringup, cur.bringup
    rows = [
        _row(f"N={size}: time to all Available (s)", base.seconds, cur.seconds),
        _row(f"N={size}: writes per ShardDB (bring-up)", b.total_writes / size, c.total_writes / size),
    ]
    rows += [_row(f"N={size}: &nbsp;· {kind}", b.writes[kind] / size, c.writes[kind] / size) for kind in WRITE_KINDS]
    rows += [
        _row(f"N={size}: &nbsp;· of the updates, no-ops", b.noop_updates / size, c.noop_updates / size),
        _row(
            f"N={size}: &nbsp;· 409s (stale cache)",
            (base.bringup.conflicts + base.bringup.already_exists) / size,
            (cur.bringup.conflicts + cur.bringup.already_exists) / size,
        ),
        _row(
            f"N={size}: hook calls per ShardDB (bring-up)",
            base.bringup.total_hook_calls / size,
            cur.bringup.total_hook_calls / size,
        ),
        _row(
            f"N={size}: idle writes / min",
            base.idle.per_minute(base.idle.total_writes),
            cur.idle.per_minute(cur.idle.total_writes),
        ),
        _row(
            f"N={size}: idle hook calls / min",
            base.idle.per_minute(base.idle.total_hook_calls),
            cur.idle.per_minute(cur.idle.total_hook_calls),
        ),
        _row(
            f"N={size}: &nbsp;· of those, answered 304",
            base.idle.per_minute(base.idle.not_modified),
            cur.idle.per_minute(cur.idle.not_modified),
        ),
    ]
    return rows


def _scale_rows(base: ScaleResult, cur: ScaleResult) -> list[str]:
    label = f"scale-up {base.from_shards}→{base.to_shards} shards"
    return [
        _row(f"{label}: time to Available (s)", base.seconds, cur.seconds),
        _row(f"{label}: writes", base.tally.total_writes, cur.tally.total_writes, 0),
        _row(f"{label}: hook calls", base.tally.total_hook_calls, cur.tally.total_hook_calls, 0),
    ]


def _noop_lines(versions: list[Version]) -> list[str]:
    lines: list[str] = []
    for version in versions:
        fields: dict[str, int] = {}
        tallies = [t for r in version.fleets.values() for t in (r.bringup, r.idle)]
        tallies += [version.scale.tally] if version.scale else []
        for tally in tallies:
            for key, count in tally.noop_fields.items():
                fields[key] = fields.get(key, 0) + count
        top = sorted(fields.items(), key=lambda item: -item[1])[:6]
        listed = ", ".join(f"`{key}` ({count})" for key, count in top) or "none"
        lines.append(f"- {version.role} `{version.source.revision}`: {listed}")
    return lines


def table(versions: list[Version], options: Options) -> str:
    """The Markdown report: one row per metric, baseline and current, current / baseline."""
    base, cur = versions
    s, t = options.settings, options.timings
    lines = [
        f"Fleet benchmark ({time.strftime('%Y-%m-%d')}): baseline `{base.source.revision}` "
        f"({base.source.origin}) vs current `{cur.source.revision}` ({cur.source.origin}); {machine()}. "
        f"Each version on its own etcd + kube-apiserver with its own CRD, hooks as `python -m hooks`; "
        f"Metacontroller-like loop: {s.workers} workers, writes through one token bucket "
        f"(QPS {s.qps:g}, burst {s.burst}), resync 30 s, ETags; pods Ready {t.pod_start_seconds:g} s after "
        f"creation, seed Job done after {t.job_seconds:g} s; idle window {options.idle_seconds:g} s.",
        "",
        f"| metric | baseline `{base.source.revision}` | current `{cur.source.revision}` | current / baseline |",
        "|---|---:|---:|---:|",
    ]
    for size in options.sizes:
        lines += _fleet_rows(size, base.fleets[size], cur.fleets[size])
    if base.scale is not None and cur.scale is not None:
        lines += _scale_rows(base.scale, cur.scale)
    lines += ["", "No-op updates by field (what the merge saw as different; all scenarios):", *_noop_lines(versions)]
    return "\n".join(lines) + "\n"


# --- command line ------------------------------------------------------------------------


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(part) for part in text.split(",") if part.strip())
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("expected fleet sizes like 1,20,100")
    return sizes


def _scale(text: str) -> tuple[int, int] | None:
    if text in ("", "none", "off"):
        return None
    first, _, last = text.partition(":")
    return int(first), int(last)


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, Options]:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet", description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help=f"git revision to compare ({DEFAULT_BASELINE})")
    parser.add_argument("--current", default="", help="git revision to measure (default: the working tree)")
    parser.add_argument("--fleet", type=_sizes, default=(1, 20), help="fleet sizes, comma-separated (1,20; add 100)")
    parser.add_argument("--idle", type=float, default=60.0, help="idle window after bring-up, seconds (60)")
    parser.add_argument("--scale", type=_scale, default=(3, 16), help="scale-up FROM:TO shards, or none (3:16)")
    parser.add_argument("--pod-start", type=float, default=2.0, help="seconds from pod created to Ready (2)")
    parser.add_argument("--job-seconds", type=float, default=2.0, help="seconds a seed Job runs (2)")
    parser.add_argument("--workers", type=int, default=5, help="Metacontroller workers (5)")
    parser.add_argument("--qps", type=float, default=5.0, help="Metacontroller client QPS (5)")
    parser.add_argument("--burst", type=int, default=10, help="Metacontroller client burst (10)")
    parser.add_argument(
        "--limit-status-reads", action="store_true", help="charge the GET before each status update to the bucket too"
    )
    parser.add_argument("--timeout", type=float, default=1200.0, help="give up on a scenario after this (1200 s)")
    args = parser.parse_args(argv)
    options = Options(
        sizes=args.fleet,
        idle_seconds=args.idle,
        scale=args.scale,
        settings=LoopSettings(
            workers=args.workers, qps=args.qps, burst=args.burst, limit_status_reads=args.limit_status_reads
        ),
        timings=Timings(pod_start_seconds=args.pod_start, job_seconds=args.job_seconds),
        timeout_seconds=args.timeout,
    )
    return args, options


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    args, options = parse(argv)
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sharddb-fleet-")))
        (work / "baseline").mkdir()
        sources = [extract(args.baseline, work / "baseline")]
        if args.current:
            (work / "current").mkdir()
            sources.append(extract(args.current, work / "current"))
        else:
            sources.append(working_tree())
        bin_dir = build_binaries()
        versions: list[Version] = []
        for source in sources:
            plane = start_plane(bin_dir)
            stack.callback(plane.stop)
            endpoint = Endpoint(plane.url, plane.token, plane.ca_file)
            install_crd(endpoint, source.directory / "crds" / "sharddb.yaml")
            role = "current" if versions else "baseline"
            versions.append(Version(role, source, endpoint, stack.enter_context(serve(source, work))))
            _progress(f"{_name(versions[-1])} API server {plane.url}, hooks {versions[-1].hooks_url}")
        asyncio.run(measure(versions, options, _progress))
        print(table(versions, options))


if __name__ == "__main__":
    main()
