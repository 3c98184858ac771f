"""Where the alert rules' tests get promtool: a named one, PATH, or Debian's package, kept in the cache.

A machine without it must fail those tests with how to get it, never skip them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.real import promtool


def test_sharddb_promtool_names_the_promtool_to_run(tmp_path: Path) -> None:
    assert promtool.find({"SHARDDB_PROMTOOL": "/opt/prometheus/promtool", "PATH": str(tmp_path)}) == Path(
        "/opt/prometheus/promtool"
    )


def test_sharddb_prometheus_names_the_server_to_run(tmp_path: Path) -> None:
    environ = {"SHARDDB_PROMETHEUS": "/opt/prometheus/prometheus", "PATH": str(tmp_path)}
    assert promtool.find(environ, program="prometheus") == Path("/opt/prometheus/prometheus")


def test_a_promtool_on_path_is_found(tmp_path: Path) -> None:
    found = tmp_path / "promtool"
    found.write_text("#!/bin/sh\n")
    found.chmod(0o755)
    assert promtool.find({"PATH": str(tmp_path)}) == found


def test_the_cached_promtool_is_found_when_none_is_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cached = promtool.cache_dir() / "promtool"
    cached.parent.mkdir(parents=True)
    cached.write_text("#!/bin/sh\n")
    assert promtool.find({"PATH": str(tmp_path / "empty")}) == cached


def test_without_apt_get_the_failure_says_how_to_get_promtool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(promtool.PromtoolMissingError, match=r"apt-get install prometheus"):
        promtool.fetch()
