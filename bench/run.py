"""One benchmark run: the hook service and the floor, side by side, under the same load.

Both servers run the whole time on one core (``python -m hooks`` exactly as
deployed, and ``python -m bench.floor`` with the same uvicorn settings); wrk runs
on the other core and drives one of them at a time, alternating floor, hook and
hook-with-ETag for every size in every round, so drift hits all cases alike.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from testbed.real.server import launch

from . import load
from .worlds import sync_request

ROOT = Path(__file__).resolve().parent.parent
FLOOR, HOOK, HOOK_304 = "floor", "hook", "hook 304"
KINDS = (FLOOR, HOOK, HOOK_304)
SERVER_CPU, LOAD_CPU = 0, 1


@dataclass(frozen=True)
class Config:
    sizes: tuple[int, ...] = (3, 16, 64)
    seconds: float = 10.0
    rounds: int = 3
    warmup_seconds: float = 2.0
    connections: int = 8


@dataclass(frozen=True)
class Row:
    """The median of every round of one case."""

    shards: int
    kind: str
    request_bytes: int
    answer_bytes: int
    requests: int  # summed over rounds
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    outcomes: dict[str, int]  # the hook's own count of calls by outcome during this case
    vs_floor: float  # median over rounds of req/s against the floor's in the same round


@dataclass
class Results:
    config: Config
    machine: str
    rows: list[Row] = field(default_factory=list)
    peak_rss_mb: dict[str, float] = field(default_factory=dict)
    rss_mb: dict[str, float] = field(default_factory=dict)

    def row(self, shards: int, kind: str) -> Row:
        return next(r for r in self.rows if r.shards == shards and r.kind == kind)


@dataclass
class Server:
    name: str
    base: str
    process: subprocess.Popen[bytes]

    def memory_mb(self, key: str) -> float:
        """VmHWM (peak) or VmRSS (now) of the worker, which is the server process itself."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        match = re.search(rf"^{key}:\s+(\d+) kB", status, re.MULTILINE)
        return int(match.group(1)) / 1024 if match else 0.0


def _pinned(command: list[str], cpu: int) -> list[str]:
    if (os.cpu_count() or 1) > 1 and os.path.exists("/usr/bin/taskset"):
        return ["/usr/bin/taskset", "-c", str(cpu), *command]
    return command


@contextmanager
def serve(name: str, module: str, env: dict[str, str], logs: Path) -> Iterator[Server]:
    """Run ``python -m module`` pinned to the server core until the block ends."""
    with launch(logs, env, module=module, prefix=_pinned([], SERVER_CPU), timeout=30.0) as running:
        yield Server(name, running.base, running.process)


_CALLS = re.compile(r'^sharddb_hook_calls_total\{hook="sync",outcome="([a-z_]+)"\} ([0-9.e+]+)$', re.MULTILINE)


def hook_calls(server: Server) -> dict[str, int]:
    """The hook's own count of sync calls by outcome, from /metrics."""
    text = httpx.get(f"{server.base}/metrics", timeout=10.0).text
    return {outcome: int(float(value)) for outcome, value in _CALLS.findall(text)}


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import uvicorn

    return (
        f"{os.cpu_count()} x {model}, Linux {os.uname().release.split('-')[0]}, "
        f"Python {sys.version.split()[0]}, uvicorn {uvicorn.__version__}"
    )


def run(config: Config, folder: Path | None = None, progress: bool = False) -> Results:
    """Measure every (size, case) ``config.rounds`` times, alternating; medians per case."""
    wrk = load.ensure_wrk()
    results = Results(config=config, machine=machine())
    with ExitStack() as stack:
        work = folder or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sharddb-bench-")))
        answers = work / "answers"
        answers.mkdir(parents=True, exist_ok=True)
        bodies = {n: work / f"request-{n}.json" for n in config.sizes}
        for n, path in bodies.items():
            path.write_bytes(sync_request(n))

        hook = stack.enter_context(serve(HOOK, "hooks", {}, work))
        etags: dict[int, str] = {}
        for n, path in bodies.items():
            reply = httpx.post(
                f"{hook.base}/sync",
                content=path.read_bytes(),
                timeout=30.0,
                headers={"Content-Type": "application/json"},
            )
            reply.raise_for_status()
            (answers / f"{n}.json").write_bytes(reply.content)
            etags[n] = reply.headers["etag"]
        floor = stack.enter_context(serve(FLOOR, "bench.floor", {"SHARDDB_FLOOR_ANSWERS": str(answers)}, work))

        scripts: dict[tuple[int, str], tuple[str, Path]] = {}
        for n, body in bodies.items():
            scripts[n, FLOOR] = (f"{floor.base}/sync/{n}", load.script(work / f"floor-{n}.lua", body, {}))
            scripts[n, HOOK] = (f"{hook.base}/sync", load.script(work / f"hook-{n}.lua", body, {}))
            scripts[n, HOOK_304] = (
                f"{hook.base}/sync",
                load.script(work / f"hook304-{n}.lua", body, {"If-None-Match": etags[n]}),
            )

        def drive(key: tuple[int, str], seconds: float) -> tuple[load.Sample, dict[str, int]]:
            url, lua = scripts[key]
            before = hook_calls(hook)
            sample = load.run(wrk, url, lua, seconds=seconds, connections=config.connections, cpu=LOAD_CPU)
            after = hook_calls(hook)
            delta = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
            return sample, delta

        if config.warmup_seconds > 0:
            for key in scripts:
                drive(key, config.warmup_seconds)

        samples: dict[tuple[int, str], list[tuple[load.Sample, dict[str, int]]]] = {k: [] for k in scripts}
        for round_ in range(config.rounds):
            for n in config.sizes:
                for kind in KINDS:
                    samples[n, kind].append(drive((n, kind), config.seconds))
                    if progress:
                        s = samples[n, kind][-1][0]
                        print(
                            f"round {round_ + 1} {n:>3} shards {kind:<8} {s.rps:9.0f} req/s "
                            f"p50 {s.p50_ms:.2f} ms p99 {s.p99_ms:.2f} ms",
                            file=sys.stderr,
                        )

        for server in (hook, floor):
            results.peak_rss_mb[server.name] = server.memory_mb("VmHWM")
            results.rss_mb[server.name] = server.memory_mb("VmRSS")

        for (n, kind), runs in samples.items():
            outcomes: dict[str, int] = {}
            for _, delta in runs:
                for k, v in delta.items():
                    outcomes[k] = outcomes.get(k, 0) + v
            results.rows.append(
                Row(
                    shards=n,
                    kind=kind,
                    request_bytes=bodies[n].stat().st_size,
                    answer_bytes=(answers / f"{n}.json").stat().st_size,
                    requests=sum(s.requests for s, _ in runs),
                    rps=statistics.median(s.rps for s, _ in runs),
                    p50_ms=statistics.median(s.p50_ms for s, _ in runs),
                    p99_ms=statistics.median(s.p99_ms for s, _ in runs),
                    errors=sum(s.status_errors + s.socket_errors for s, _ in runs),
                    outcomes=outcomes if kind != FLOOR else {},
                    vs_floor=statistics.median(
                        s.rps / f.rps for (s, _), (f, _) in zip(runs, samples[n, FLOOR], strict=True)
                    ),
                )
            )
    return results


def progress(line: str) -> None:
    """A benchmark's progress line: on stderr, so the table on stdout stays clean."""
    print(line, file=sys.stderr, flush=True)
