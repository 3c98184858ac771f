"""`make help` is where a newcomer learns the targets: every phony target is listed with its comment."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def phony_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text()
    match = re.search(r"^\.PHONY:(.*)$", makefile, re.MULTILINE)
    assert match, "the Makefile has no .PHONY line"
    return set(match.group(1).split())


def listed() -> dict[str, str]:
    out = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {line.split(maxsplit=1)[0]: line.split(maxsplit=1)[1] for line in out.splitlines() if line.strip()}


def test_make_help_lists_every_phony_target_with_its_comment() -> None:
    targets = listed()
    missing = phony_targets() - set(targets)
    assert not missing, f"targets without a `##` comment above them, so missing from make help: {sorted(missing)}"
    assert all(len(text) > 10 for text in targets.values())


def test_make_help_names_the_seven_binaries_of_the_test_stack() -> None:
    text = listed()["testbin"]
    for binary in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"):
        assert binary in text
    assert "seven" in text
