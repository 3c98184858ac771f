"""The load generator: ``wrk`` (one thread, N keep-alive connections) driven by a Lua script.

The script POSTs a body file with optional headers and prints one JSON line from
wrk's own summary and latency histogram, so nothing is scraped from prose.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MARK = "BENCH_RESULT "

_SCRIPT = """\
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
{headers}
local file = assert(io.open([==[{body}]==], "rb"))
wrk.body = file:read("*a")
file:close()

function done(summary, latency, requests)
  io.write(string.format(
    '{mark}{{"requests":%d,"duration_us":%d,"bytes":%d,"status_errors":%d,' ..
    '"socket_errors":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}}\\n',
    summary.requests, summary.duration, summary.bytes, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50.0), latency:percentile(99.0), latency.max))
end
"""


@dataclass(frozen=True)
class Sample:
    """One wrk run: what it sent and how long the answers took."""

    requests: int
    seconds: float
    bytes_read: int
    status_errors: int  # answers outside 2xx/3xx
    socket_errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


class WrkMissingError(RuntimeError):
    pass


def ensure_wrk() -> str:
    """Find wrk, installing Debian's package when running as root; otherwise say how to get it."""
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, env=env, stdout=subprocess.DEVNULL)
        found = shutil.which("wrk")
        if found:
            return found
    raise WrkMissingError(
        "the benchmark needs the wrk load generator: `sudo apt-get install -y wrk` (Debian/Ubuntu), "
        "`brew install wrk` (macOS), or build it from https://github.com/wg/wrk"
    )


def script(path: Path, body: Path, headers: dict[str, str]) -> Path:
    """Write the Lua script for one case to ``path``."""
    lines = "\n".join(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items())
    path.write_text(_SCRIPT.format(headers=lines, body=body, mark=MARK))
    return path


def run(
    wrk: str,
    url: str,
    lua: Path,
    *,
    seconds: float,
    connections: int = 8,
    cpu: int | None = None,
) -> Sample:
    """Drive ``url`` for ``seconds`` and return wrk's numbers."""
    command = [
        wrk,
        "-t1",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "10s",
        "--latency",
        "-s",
        str(lua),
        url,
    ]
    if cpu is not None and shutil.which("taskset"):
        command = ["taskset", "-c", str(cpu), *command]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=seconds + 60)
    line = next((x for x in done.stdout.splitlines() if x.startswith(MARK)), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{done.stdout}\n{done.stderr}")
    raw = json.loads(line.removeprefix(MARK))
    return Sample(
        requests=raw["requests"],
        seconds=raw["duration_us"] / 1e6,
        bytes_read=raw["bytes"],
        status_errors=raw["status_errors"],
        socket_errors=raw["socket_errors"],
        p50_ms=raw["p50_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        max_ms=raw["max_us"] / 1000,
    )
