"""``python -m bench.fleet`` (``make bench-fleet``): a fleet of ShardDBs on the real Metacontroller's write budget.

Two code versions side by side in one run: a baseline git revision and the
working tree (or a second revision). Each runs on a stack of its own
(``testbed.stack``: real etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and Metacontroller, the version's hooks, CRD, CompositeController
and example, and the node agent). Per fleet size N: time until all N are
Available and Metacontroller's writes per ShardDB, read from the API server's
audit log; then writes and hook calls per minute while idle; and one ShardDB
scaled from 3 to 16 shards. Prints a Markdown table: baseline, current, ratio.
With ``--upgrade N``, instead: N ShardDBs brought up by the baseline, then its
hooks replaced by the current ones: pods deleted, pod templates rewritten and
Metacontroller's writes in the minutes that follow.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from testbed.real.audit import Write, tally
from testbed.stack import Instance, Stack, StackOptions
from testbed.standins.node import Behaviour

from .run import machine, progress
from .source import Source, extract, working_tree

DEFAULT_BASELINE = "950cc8a"
WRITE_KINDS = ("create", "update", "status", "delete", "event")
Progress = Callable[[str], None]
Obj = dict[str, Any]


@dataclass(frozen=True)
class Options:
    """What to run; the defaults are Metacontroller's and the CompositeController's."""

    sizes: tuple[int, ...] = (1, 20)
    idle_seconds: float = 60.0
    scale: tuple[int, int] | None = (3, 16)
    instance: Instance = field(default_factory=Instance)
    partitions: int = 1  # Metacontroller instances, each serving its own partition of the fleet
    pod_start_seconds: float = 1.0
    job_seconds: float = 2.0
    timeout_seconds: float = 1800.0
    upgrade_watch_seconds: float = 180.0
    dump: Path | None = None  # where each bring-up's writes and hook calls go, one JSON line each


@dataclass(frozen=True)
class Tally:
    """Metacontroller's writes and the hooks' calls over one window."""

    seconds: float
    writes: Counter[str]
    hook_calls: int

    @property
    def total(self) -> int:
        return sum(self.writes.values())

    def per_minute(self, count: float) -> float:
        return count * 60.0 / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class FleetResult:
    """N ShardDBs created at once: until all are Available, then an idle window."""

    size: int
    seconds: float
    bringup: Tally
    idle: Tally


@dataclass(frozen=True)
class ScaleResult:
    from_shards: int
    to_shards: int
    seconds: float
    tally: Tally


@dataclass(frozen=True)
class UpgradeResult:
    """A fleet brought up by one version, then the hooks replaced by another and watched."""

    size: int
    bringup_seconds: float
    watched: Tally
    pods_deleted: int
    statefulset_templates: int  # StatefulSets whose stored pod template changed
    deployment_templates: int
    newer: Counter[str]  # status.newerTemplates at the end, by value


@dataclass
class Version:
    role: str  # baseline or current
    source: Source
    fleets: dict[int, FleetResult] = field(default_factory=dict)
    scale: ScaleResult | None = None


# --- one version on one stack ------------------------------------------------------------


def example(source: Path) -> list[Obj]:
    """The version's ``examples/sharddb.yaml``: the Secret it needs and the ShardDB."""
    return [doc for doc in yaml.safe_load_all((source / "examples" / "sharddb.yaml").read_text()) if doc]


def available(parent: Obj, shards: int | None = None) -> bool:
    status: Obj = parent.get("status") or {}
    if status.get("observedGeneration") != parent["metadata"].get("generation"):
        return False
    if shards is not None and status.get("readyShards") != shards:
        return False
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in status.get("conditions") or [])


class Fleet:
    """Creates and watches the ShardDBs of one namespace on one stack, as the admin."""

    def __init__(self, stack: Stack, namespace: str, documents: list[Obj], partitions: int) -> None:
        plane = stack.control_plane
        self.stack, self.namespace, self.partitions = stack, namespace, partitions
        self.http = plane.client(timeout=30.0)
        self.base = f"/apis/mygroup.example.com/v1alpha1/namespaces/{namespace}/sharddbs"
        self._post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        self.spec: Obj = {}
        for doc in documents:
            if doc["kind"] == "ShardDB":
                self.spec = doc["spec"]
            else:
                doc["metadata"]["namespace"] = namespace
                self._post(f"/api/v1/namespaces/{namespace}/{doc['kind'].lower()}s", doc)

    def close(self) -> None:
        self.http.close()

    def _post(self, path: str, body: Obj) -> None:
        response = self.http.post(path, json=body)
        if response.status_code != 201:
            raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")

    def create(self, names: list[str], spec: Obj | None = None) -> None:
        for index, name in enumerate(names):
            meta: Obj = {"name": name, "namespace": self.namespace}
            if self.partitions > 1:
                meta["labels"] = {"mygroup.example.com/partition": f"p{index % self.partitions}"}
            body = {"apiVersion": "mygroup.example.com/v1alpha1", "kind": "ShardDB", "metadata": meta}
            self._post(self.base, {**body, "spec": spec or self.spec})

    def scale(self, name: str, shards: int) -> None:
        response = self.http.patch(
            f"{self.base}/{name}",
            json={"spec": {"shards": shards}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        response.raise_for_status()

    def wait_available(self, names: list[str], timeout: float, shards: int | None = None) -> None:
        deadline = time.monotonic() + timeout
        wanted = set(names)
        while time.monotonic() < deadline:
            items = self.http.get(self.base).json()["items"]
            ready = {item["metadata"]["name"] for item in items if available(item, shards)}
            if wanted <= ready:
                return
            time.sleep(0.5)
        raise TimeoutError(f"{len(wanted - ready)} of {len(wanted)} ShardDBs in {self.namespace} not Available")

    def tally(self, mark: int, calls: int, seconds: float) -> Tally:
        writes = self.stack.metacontroller_writes(mark, namespace=self.namespace)
        return Tally(seconds, tally(writes), self.stack.hook_calls() - calls)


def _write_line(write: Write) -> str:
    """One write as a JSON line; a ShardDB's status write with the status it wrote."""
    line: Obj = {
        "at": write.at.isoformat(),
        "began": write.began.isoformat(),
        "kind": write.kind,
        "resource": write.resource,
        "name": write.name,
        "code": write.code,
    }
    if write.status:
        line["status"] = json.loads(write.status)
    return json.dumps(line, sort_keys=True)


def dump(stack: Stack, directory: Path, stem: str, namespace: str, mark: int, log_lines: int) -> None:
    """Metacontroller's writes in ``namespace`` since ``mark`` and the hooks' log lines since ``log_lines``."""
    assert stack.hooks is not None
    directory.mkdir(parents=True, exist_ok=True)
    writes = stack.metacontroller_writes(mark, namespace=namespace)
    (directory / f"{stem}.writes.jsonl").write_text("".join(_write_line(w) + "\n" for w in writes))
    lines = stack.hooks.stdout.read_text(errors="replace").splitlines()[log_lines:]
    (directory / f"{stem}.hooks.jsonl").write_text("".join(line + "\n" for line in lines if '"msg":"hook"' in line))


def _log_lines(stack: Stack) -> int:
    assert stack.hooks is not None
    return len(stack.hooks.stdout.read_text(errors="replace").splitlines())


def bring_up(stack: Stack, source: Path, size: int, options: Options, role: str = "") -> FleetResult:
    fleet = Fleet(stack, f"fleet-{size}", example(source), options.partitions)
    try:
        names = [f"db-{index:03d}" for index in range(size)]
        mark, calls, start = stack.audit.mark(), stack.hook_calls(), time.monotonic()
        log_lines = _log_lines(stack)
        fleet.create(names)
        fleet.wait_available(names, options.timeout_seconds)
        seconds = time.monotonic() - start
        bringup = fleet.tally(mark, calls, seconds)
        if options.dump is not None:
            stem = f"{role.replace(' ', '-') or 'run'}.fleet-{size}"
            dump(stack, options.dump, stem, fleet.namespace, mark, log_lines)
        time.sleep(3)  # writes already queued when the last one turned Available
        mark, calls, start = stack.audit.mark(), stack.hook_calls(), time.monotonic()
        time.sleep(options.idle_seconds)
        idle = fleet.tally(mark, calls, time.monotonic() - start)
        return FleetResult(size, seconds, bringup, idle)
    finally:
        fleet.close()


def scale_up(stack: Stack, source: Path, shards: tuple[int, int], options: Options) -> ScaleResult:
    fleet = Fleet(stack, "scale-up", example(source), 1)
    try:
        fleet.create(["scaled"], {**fleet.spec, "shards": shards[0]})
        fleet.wait_available(["scaled"], options.timeout_seconds)
        time.sleep(3)
        mark, calls, start = stack.audit.mark(), stack.hook_calls(), time.monotonic()
        fleet.scale("scaled", shards[1])
        fleet.wait_available(["scaled"], options.timeout_seconds, shards=shards[1])
        seconds = time.monotonic() - start
        return ScaleResult(shards[0], shards[1], seconds, fleet.tally(mark, calls, seconds))
    finally:
        fleet.close()


def _templates(fleet: Fleet, kind: str) -> dict[str, Obj]:
    path = {"StatefulSet": "statefulsets", "Deployment": "deployments"}[kind]
    items = fleet.http.get(f"/apis/apps/v1/namespaces/{fleet.namespace}/{path}").json()["items"]
    return {item["metadata"]["name"]: item["spec"]["template"] for item in items}


def upgrade(baseline: Source, current: Source, size: int, options: Options, progress: Progress) -> UpgradeResult:
    """``size`` ShardDBs brought up by ``baseline``, then ``current``'s CRD, CompositeController and hooks."""
    stack = Stack(stack_options(baseline, options))
    stack.start()
    try:
        fleet = Fleet(stack, "upgrade", example(baseline.directory), options.partitions)
        try:
            names = [f"db-{index:03d}" for index in range(size)]
            start = time.monotonic()
            fleet.create(names)
            fleet.wait_available(names, options.timeout_seconds)
            bringup = time.monotonic() - start
            progress(f"[baseline {baseline.revision}] N={size} Available in {bringup:.1f} s; upgrading the hooks")
            time.sleep(3)
            before = {kind: _templates(fleet, kind) for kind in ("StatefulSet", "Deployment")}
            mark, start = stack.audit.mark(), time.monotonic()
            stack.replace_hooks(current.directory, isolated=current.origin != "working tree")
            calls = stack.hook_calls()  # the new hooks' own log: their calls only
            time.sleep(options.upgrade_watch_seconds)
            watched = fleet.tally(mark, calls, time.monotonic() - start)
            after = {kind: _templates(fleet, kind) for kind in ("StatefulSet", "Deployment")}
            log = stack.audit.since(mark, namespace=fleet.namespace)
            items = fleet.http.get(fleet.base).json()["items"]
            newer = Counter(str(item.get("status", {}).get("newerTemplates", "(none reported)")) for item in items)
            changed = {kind: sum(after[kind].get(n) != t for n, t in before[kind].items()) for kind in before}
            return UpgradeResult(
                size=size,
                bringup_seconds=bringup,
                watched=watched,
                pods_deleted=sum(1 for w in log if w.resource == "pods" and w.verb == "delete"),
                statefulset_templates=changed["StatefulSet"],
                deployment_templates=changed["Deployment"],
                newer=newer,
            )
        finally:
            fleet.close()
    finally:
        stack.stop()


def upgrade_table(baseline: Source, current: Source, result: UpgradeResult, options: Options) -> str:
    i, w = options.instance, result.watched
    split = ", ".join(f"{kind} {w.writes[kind]}" for kind in WRITE_KINDS if w.writes[kind])
    newer = ", ".join(f"{value!r}: {count}" for value, count in sorted(result.newer.items()))
    lines = [
        f"Upgrade benchmark ({time.strftime('%Y-%m-%d')}): {result.size} ShardDBs brought up by `{baseline.revision}` "
        f"({baseline.origin}) in {result.bringup_seconds:.0f} s, then the hooks, CRD and CompositeController replaced "
        f"by `{current.revision}` ({current.origin}) and watched {w.seconds:.0f} s; {machine()}; Metacontroller "
        f"v4.17.2 (QPS {i.qps:g}, burst {i.burst}, {i.workers} workers); writes from the audit log.",
        "",
        "| after the upgrade | count |",
        "|---|---:|",
        f"| pods deleted | {result.pods_deleted} |",
        f"| StatefulSet pod templates rewritten | {result.statefulset_templates} of {result.size} |",
        f"| cache Deployment pod templates rewritten | {result.deployment_templates} of {result.size} |",
        f"| Metacontroller writes ({split or 'none'}) | {w.total} |",
        f"| hook calls | {w.hook_calls} |",
        f"| `status.newerTemplates` at the end | {newer} |",
    ]
    return "\n".join(lines) + "\n"


def stack_options(source: Source, options: Options) -> StackOptions:
    """The version's manifests; with partitions, one Metacontroller per partition, each selecting its own."""
    return StackOptions(
        checkout=source.directory,
        instances=(options.instance,),
        partitions=options.partitions if options.partitions > 1 else 0,
        behaviour=Behaviour(start_seconds=options.pod_start_seconds, job_seconds=options.job_seconds),
        isolated=True,
    )


def measure(version: Version, options: Options, progress: Progress) -> None:
    stack = Stack(stack_options(version.source, options))
    stack.start()
    try:
        progress(f"{_name(version)} stack up: API server {stack.control_plane.url}")
        for size in options.sizes:
            result = bring_up(stack, version.source.directory, size, options, version.role)
            version.fleets[size] = result
            progress(f"{_name(version)} N={size}: {_fleet_line(result)}")
        if options.scale is not None:
            version.scale = scale_up(stack, version.source.directory, options.scale, options)
            progress(f"{_name(version)} scale-up: Available again in {version.scale.seconds:.1f} s")
    finally:
        stack.stop()


def _name(version: Version) -> str:
    return f"[{version.role} {version.source.revision}]"


def _fleet_line(result: FleetResult) -> str:
    return (
        f"all Available in {result.seconds:.1f} s, {result.bringup.total / result.size:.1f} writes "
        f"and {result.bringup.hook_calls / result.size:.1f} hook calls per ShardDB; idle "
        f"{result.idle.per_minute(result.idle.total):.1f} writes/min"
    )


# --- report ----------------------------------------------------------------------------


def _ratio(baseline: float, current: float) -> str:
    return "—" if baseline == 0 else f"{current / baseline:.2f}"


def _row(metric: str, baseline: float, current: float, digits: int = 1) -> str:
    return f"| {metric} | {baseline:,.{digits}f} | {current:,.{digits}f} | {_ratio(baseline, current)} |"


def _fleet_rows(size: int, base: FleetResult, cur: FleetResult) -> list[str]:
    b, c = base.bringup, cur.bringup
    rows = [
        _row(f"N={size}: time to all Available (s)", base.seconds, cur.seconds),
        _row(f"N={size}: writes per ShardDB (bring-up)", b.total / size, c.total / size),
    ]
    rows += [_row(f"N={size}: &nbsp;· {kind}", b.writes[kind] / size, c.writes[kind] / size) for kind in WRITE_KINDS]
    rows += [
        _row(f"N={size}: hook calls per ShardDB (bring-up)", b.hook_calls / size, c.hook_calls / size),
        _row(
            f"N={size}: idle writes / min", base.idle.per_minute(base.idle.total), cur.idle.per_minute(cur.idle.total)
        ),
        _row(
            f"N={size}: idle hook calls / min",
            base.idle.per_minute(base.idle.hook_calls),
            cur.idle.per_minute(cur.idle.hook_calls),
        ),
    ]
    return rows


def _scale_rows(base: ScaleResult, cur: ScaleResult) -> list[str]:
    label = f"scale-up {base.from_shards}→{base.to_shards} shards"
    return [
        _row(f"{label}: time to Available (s)", base.seconds, cur.seconds),
        _row(f"{label}: writes", base.tally.total, cur.tally.total, 0),
        _row(f"{label}: hook calls", base.tally.hook_calls, cur.tally.hook_calls, 0),
    ]


def table(versions: list[Version], options: Options) -> str:
    base, cur = versions
    i = options.instance
    lines = [
        f"Fleet benchmark ({time.strftime('%Y-%m-%d')}): baseline `{base.source.revision}` "
        f"({base.source.origin}) vs current `{cur.source.revision}` ({cur.source.origin}); {machine()}. "
        f"Each version on a stack of its own: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and "
        f"Metacontroller v4.17.2 ({options.partitions} instance(s), QPS {i.qps:g}, burst {i.burst}, "
        f"{i.workers} workers, {i.apply_strategy}), its hooks, CRD, CompositeController and example; pods Ready "
        f"{options.pod_start_seconds:g} s after binding, seed Job done {options.job_seconds:g} s after starting; "
        f"writes read from the audit log; idle window {options.idle_seconds:g} s.",
        "",
        f"| metric | baseline `{base.source.revision}` | current `{cur.source.revision}` | current / baseline |",
        "|---|---:|---:|---:|",
    ]
    for size in options.sizes:
        lines += _fleet_rows(size, base.fleets[size], cur.fleets[size])
    if base.scale is not None and cur.scale is not None:
        lines += _scale_rows(base.scale, cur.scale)
    return "\n".join(lines) + "\n"


def partition_table(versions: list[Version], counts: list[int], options: Options) -> str:
    """One column per partition count, the same code and the same fleet."""
    first = versions[0]
    i = options.instance
    header = " | ".join(f"{count} partition{'s' if count > 1 else ''}" for count in counts)
    lines = [
        f"Fleet benchmark by partitions ({time.strftime('%Y-%m-%d')}): `{first.source.revision}` "
        f"({first.source.origin}); {machine()}. One stack per partition count: etcd, kube-apiserver, "
        f"kube-controller-manager, kube-scheduler, one Metacontroller v4.17.2 per partition (QPS {i.qps:g}, "
        f"burst {i.burst}, {i.workers} workers each, the partition's account and --target-label-selector), "
        f"ShardDBs labelled round robin; pods Ready {options.pod_start_seconds:g} s after binding; writes from the "
        f"audit log; idle window {options.idle_seconds:g} s.",
        "",
        f"| metric | {header} |",
        "|---|" + "---:|" * len(counts),
    ]
    for size in options.sizes:
        results = [version.fleets[size] for version in versions]
        rows = [
            (f"N={size}: time to all Available (s)", [f"{r.seconds:.1f}" for r in results]),
            (f"N={size}: writes per ShardDB", [f"{r.bringup.total / size:.1f}" for r in results]),
            (f"N={size}: idle writes / min", [f"{r.idle.per_minute(r.idle.total):.1f}" for r in results]),
        ]
        lines += [f"| {metric} | {' | '.join(values)} |" for metric, values in rows]
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
    parser.add_argument("--pod-start", type=float, default=1.0, help="seconds from binding to Ready (1)")
    parser.add_argument("--job-seconds", type=float, default=2.0, help="seconds a seed Job runs (2)")
    parser.add_argument("--workers", type=int, default=5, help="Metacontroller --workers (5)")
    parser.add_argument("--qps", type=float, default=5.0, help="Metacontroller --client-go-qps (5)")
    parser.add_argument("--burst", type=int, default=10, help="Metacontroller --client-go-burst (10)")
    parser.add_argument(
        "--apply-strategy", default="dynamic-apply", help="Metacontroller --apply-strategy (dynamic-apply)"
    )
    parser.add_argument(
        "--partitions",
        type=_sizes,
        default=(1,),
        help="Metacontroller instances, one per partition; several counts (1,2,4) compare them on the current code",
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="give up on a scenario after this (1800 s)")
    parser.add_argument(
        "--upgrade", type=int, default=0, help="instead: N ShardDBs by the baseline, then the current hooks (0: off)"
    )
    parser.add_argument("--upgrade-watch", type=float, default=180.0, help="seconds watched after the upgrade (180)")
    parser.add_argument(
        "--dump",
        type=Path,
        default=None,
        help="directory for each bring-up's writes and hook calls as JSON lines (read by python -m bench.statuses)",
    )
    args = parser.parse_args(argv)
    options = Options(
        sizes=args.fleet,
        idle_seconds=args.idle,
        scale=args.scale,
        instance=Instance(qps=args.qps, burst=args.burst, workers=args.workers, apply_strategy=args.apply_strategy),
        partitions=args.partitions[0],
        pod_start_seconds=args.pod_start,
        job_seconds=args.job_seconds,
        timeout_seconds=args.timeout,
        upgrade_watch_seconds=args.upgrade_watch,
        dump=args.dump,
    )
    return args, options


def main(argv: list[str] | None = None) -> None:
    args, options = parse(argv)
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sharddb-fleet-")))
        current = working_tree()
        if args.current:
            (work / "current").mkdir()
            current = extract(args.current, work / "current")
        if len(args.partitions) > 1:
            versions = [Version(f"{count} partitions", current) for count in args.partitions]
            for count, version in zip(args.partitions, versions, strict=True):
                measure(version, dataclasses.replace(options, partitions=count, scale=None), progress)
            print(partition_table(versions, list(args.partitions), options))
            return
        (work / "baseline").mkdir()
        if args.upgrade:
            baseline = extract(args.baseline, work / "baseline")
            result = upgrade(baseline, current, args.upgrade, options, progress)
            print(upgrade_table(baseline, current, result, options))
            return
        sources = [extract(args.baseline, work / "baseline"), current]
        versions = [Version(role, source) for role, source in zip(("baseline", "current"), sources, strict=True)]
        for version in versions:
            measure(version, options, progress)
        print(table(versions, options))


if __name__ == "__main__":
    main()
