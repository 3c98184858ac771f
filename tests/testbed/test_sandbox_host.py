"""What the data tier says when this machine cannot run its node: before any namespace is made."""

from __future__ import annotations

import pytest

from testbed.real import sandbox


def test_without_root_the_data_tier_says_so_and_what_to_run_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(sandbox.SandboxError) as refused:
        sandbox.check_host()
    assert "needs root" in str(refused.value)
    assert "sudo make data" in str(refused.value)
    assert "make unit" in str(refused.value)


def test_a_missing_program_is_named_with_its_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("shutil.which", lambda tool: None if tool == "containerd" else f"/usr/bin/{tool}")
    with pytest.raises(sandbox.SandboxError) as refused:
        sandbox.check_host()
    assert "apt-get install containerd" in str(refused.value)


def test_the_command_line_without_a_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert sandbox.main(["--"]) == 2
    assert "usage: python -m testbed.real.sandbox -- COMMAND" in capsys.readouterr().err


def test_outside_the_namespaces_nothing_counts_as_inside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sandbox.RUN_ENV, raising=False)
    assert not sandbox.inside()
