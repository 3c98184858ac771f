"""Evidence kept on failure: when a test on a real stack fails, what the stack said during it stays behind.

A tier's stack fixture says where its stack keeps its logs (``watched``); at each
test's start the plugin notes how long every log is, and when the test fails (in
setup, call or teardown) it copies each log from that point on, so the folder
holds the failing test's window only: the API server's audit log, etcd, the API
server, the controller manager, the scheduler, each Metacontroller, the hooks and
the node (the stand-in agent's log, or the real kubelet's, containerd's …); then
the test's namespace (its ShardDBs, children and events) with the nodes and
volumes, as YAML, and the failure itself. The folder is ``.evidence/<run>/<test>/``
under the rootdir (git-ignored); the run's summary names it. Sizes are bounded:
each log keeps the last ``FILE_BYTES`` of its window, a run keeps its first
``FAILURES_KEPT`` failures, and the newest ``RUNS_KEPT`` runs stay (``SHARDDB_EVIDENCE_RUNS``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from testbed.real.evidence import FILE_BYTES, keep_logs, logs
from testbed.real.kubectl import Kubectl

FOLDER = ".evidence"
FAILURES_KEPT = 10
RUNS_KEPT = int(os.environ.get("SHARDDB_EVIDENCE_RUNS", "5"))  # a soak keeps all of its runs
RUN_NAME = re.compile(r"^\d{8}-\d{6}-\d+$")
# What a namespace's ShardDBs are made of, and what tells their story.
NAMESPACED = (
    "sharddbs.mygroup.example.com,statefulsets,deployments,replicasets,jobs,cronjobs,services,poddisruptionbudgets,"
    "pods,persistentvolumeclaims,endpointslices,events"
)
CLUSTER_WIDE = "nodes,persistentvolumes"

Dump = Callable[[list[str]], str]  # namespaces (none: every one) -> their objects, as YAML


@dataclass(eq=False)
class Source:
    """One running stack: the folder of its logs, how to read its objects, and the fixture its tests use."""

    root: Path
    dump: Dump
    fixture: str  # only a test that uses this fixture keeps this stack's evidence

    def logs(self) -> list[Path]:
        """Every log: ``<root>/*.log`` (the audit log among them) and the hooks' files in ``<root>/hooks/``."""
        return logs(self.root)


@dataclass
class _Run:
    folder: Path
    sources: list[Source] = field(default_factory=list)
    marks: dict[str, dict[Path, int]] = field(default_factory=dict)  # test id -> log -> its length at the start
    kept: dict[str, Path] = field(default_factory=dict)  # test id -> its folder
    dropped: list[str] = field(default_factory=list)


_RUN = pytest.StashKey[_Run]()


def kubectl_dump(kubeconfig: Path) -> Dump:
    """Objects read with kubectl as the stack's admin; a failure to read them is written down instead."""

    def dump(namespaces: list[str]) -> str:
        scopes = [["-n", namespace] for namespace in namespaces] or [["--all-namespaces"]]
        parts = []
        for what, scope in [*((NAMESPACED, scope) for scope in scopes), (CLUSTER_WIDE, [])]:
            try:
                result = Kubectl(kubeconfig).run("get", what, *scope, "-o", "yaml", timeout=60)
                said = result.stdout if result.returncode == 0 else f"# kubectl failed: {result.stderr.strip()}\n"
            except (OSError, subprocess.TimeoutExpired) as error:
                said = f"# kubectl failed: {error}\n"
            parts.append(f"# kubectl get {what} {' '.join(scope)}\n{said}")
        return "---\n".join(parts)

    return dump


@contextlib.contextmanager
def watched(config: pytest.Config, source: Source) -> Iterator[Source]:
    """Keep ``source``'s evidence for the tests that fail while the block runs."""
    run = config.stash[_RUN]
    run.sources.append(source)
    try:
        yield source
    finally:
        run.sources.remove(source)


def slug(nodeid: str) -> str:
    """A folder name for a test: ``tests/e2e/test_x.py::test_y[a]`` -> ``e2e.test_x.test_y[a]``."""
    name = nodeid.removeprefix("tests/").replace(".py::", ".").replace("::", ".").replace("/", ".")
    return re.sub(r"[^\w.\[\]=+-]+", "-", name)[:150]


def keep(run: _Run, item: pytest.Item, report: pytest.TestReport, sources: list[Source]) -> Path:
    """Write the failing test's evidence; the folder it is in."""
    folder = run.folder / slug(item.nodeid)
    marks = run.marks.get(item.nodeid, {})
    namespace = item.funcargs.get("namespace") if hasattr(item, "funcargs") else None
    namespaces = [namespace] if isinstance(namespace, str) else []
    for index, source in enumerate(sources):
        target = folder if len(sources) == 1 else folder / f"stack-{index + 1}"
        keep_logs(source.root, target, marks)
        (target / "objects.yaml").write_text(source.dump(namespaces)[-FILE_BYTES:])
    (folder / "failure.txt").write_text(f"{item.nodeid} failed in {report.when}\n\n{report.longreprtext}\n")
    return folder


def prune(base: Path, newest: int = RUNS_KEPT) -> None:
    """Only the ``newest`` runs' folders stay (their names start with the time of the run); others are left alone."""
    runs = sorted((p for p in base.iterdir() if p.is_dir() and RUN_NAME.match(p.name)), key=lambda p: p.name)
    for old in runs[:-newest]:
        shutil.rmtree(old, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    config.stash[_RUN] = _Run(folder=config.rootpath / FOLDER / f"{stamp}-{os.getpid()}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    run = item.config.stash[_RUN]
    run.marks[item.nodeid] = {log: log.stat().st_size for s in run.sources for log in s.logs() if log.exists()}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    run = item.config.stash[_RUN]
    sources = [s for s in run.sources if s.fixture in getattr(item, "fixturenames", ())]
    if report.failed and sources and item.nodeid not in run.kept:
        if len(run.kept) >= FAILURES_KEPT:
            run.dropped.append(item.nodeid)
        else:
            run.kept[item.nodeid] = keep(run, item, report, sources)
            prune(run.folder.parent)
    if call.when == "teardown":
        run.marks.pop(item.nodeid, None)
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    run = config.stash[_RUN]
    if not (run.kept or run.dropped):
        return
    terminalreporter.section("evidence kept on failure")
    terminalreporter.write_line(f"in {_shown(run.folder, config.rootpath)}/ (logs cut to each test's window)")
    for nodeid, folder in run.kept.items():
        terminalreporter.write_line(f"{nodeid}: {_shown(folder, config.rootpath)}")
    for nodeid in run.dropped:
        terminalreporter.write_line(f"{nodeid}: not kept (the first {FAILURES_KEPT} failures of a run are)")


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
