"""The benchmark's markdown table, and keeping the latest one in the guide's performance page."""

from __future__ import annotations

import time
from pathlib import Path

from .run import FLOOR, HOOK, HOOK_304, Results

START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def _kb(size: int) -> str:
    return f"{size / 1024:.0f} KB" if size >= 10240 else f"{size / 1024:.1f} KB"


def _lat(p50: float, p99: float) -> str:
    return f"{p50:.2f} / {p99:.2f}"


def table(results: Results) -> str:
    c = results.config
    lines = [
        f"Benchmark of `POST /sync` ({time.strftime('%Y-%m-%d')}): {results.machine}; "
        f"one uvicorn worker per app pinned to one core, wrk (1 thread, {c.connections} connections) on the other; "
        f"{c.rounds} alternating rounds x {c.seconds:g} s per case, medians "
        "(ratios: median of each round's ratio to the floor measured just before). "
        "Requests: an Available ShardDB with its StatefulSet, Service, Job, Deployment, "
        "EndpointSlice and Pods as the API server sends them. "
        "*Floor*: same framework and server, reads the body, `json.loads`, returns a canned answer of the hook's size. "
        "*Hook 304*: Metacontroller's ETag cache, the request carries the `If-None-Match` of the previous answer.",
        "",
        "| shards | request | answer | floor req/s | hook req/s | hook/floor | hook 304 req/s | 304/floor "
        "| p50 / p99 ms floor | p50 / p99 ms hook | p50 / p99 ms hook 304 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in c.sizes:
        floor, hook, cached = (results.row(n, kind) for kind in (FLOOR, HOOK, HOOK_304))
        lines.append(
            f"| {n} | {_kb(hook.request_bytes)} | {_kb(hook.answer_bytes)} | {floor.rps:,.0f} | {hook.rps:,.0f} "
            f"| **{hook.vs_floor:.2f}** | {cached.rps:,.0f} | {cached.vs_floor:.2f} "
            f"| {_lat(floor.p50_ms, floor.p99_ms)} | {_lat(hook.p50_ms, hook.p99_ms)} "
            f"| {_lat(cached.p50_ms, cached.p99_ms)} |"
        )
    first, last = min(c.sizes), max(c.sizes)
    if first != last:
        grow = results.row(first, HOOK).rps / results.row(last, HOOK).rps
        size = results.row(last, HOOK).request_bytes / results.row(first, HOOK).request_bytes
        lines += [
            "",
            f"Cost per hook call from {first} to {last} shards: x{grow:.1f} "
            f"(shards x{last / first:.1f}, request bytes x{size:.1f}).",
        ]
    lines += [
        "",
        "Memory per worker after the run (VmHWM peak / VmRSS now): "
        + ", ".join(f"{name} {results.peak_rss_mb[name]:.0f} / {results.rss_mb[name]:.0f} MB" for name in (HOOK, FLOOR))
        + ".",
    ]
    return "\n".join(lines) + "\n"


PAGE = Path("docs") / "reliability" / "performance.md"


def publish(markdown: str, root: Path) -> Path:
    """Replace the marked section of docs/reliability/performance.md; without markers, write bench/RESULTS.md."""
    page = root / PAGE
    if page.exists():
        text = page.read_text()
        if START in text and END in text:
            head, rest = text.split(START, 1)
            _, tail = rest.split(END, 1)
            page.write_text(f"{head}{START}\n{markdown}{END}{tail}")
            return page
    out = root / "bench" / "RESULTS.md"
    out.write_text("# Hook benchmark: latest results\n\n" + markdown)
    return out
