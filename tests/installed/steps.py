"""The README's "Deploy on a cluster" steps, and the guide's operating steps (a rotation, a runbook's), read from
the pages themselves: the one source of what users run.

Each step is a fenced ``sh`` block preceded by ``<!-- step: NAME -->``; the tier runs
the blocks as written, in bash with ``set -euo pipefail``, from a scratch directory
that links to the clone's folders the commands name.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SECTION = "## Deploy on a cluster"
_STEP = re.compile(r"<!-- step: (?P<name>[a-z-]+) -->\s*\n\s*```sh\n(?P<body>.*?)\n\s*```", re.DOTALL)


@dataclass(frozen=True)
class Step:
    name: str
    script: str


def deploy_steps(readme: Path = README) -> dict[str, Step]:
    """Every named step of the README's deploy section."""
    text = readme.read_text()
    start = text.index(SECTION)
    following = text.find("\n## ", start + len(SECTION))
    return steps_in(text[start : following if following != -1 else len(text)])


def page_steps(page: Path) -> dict[str, Step]:
    """Every named step of a page of the guide (``docs/…``), which its tests run as the page says."""
    return steps_in(page.read_text())


def runbook(page: Path, names: tuple[str, ...], settings: dict[str, str]) -> Step:
    """A runbook's steps ``names``, in order, as one shell, its settings (``NS=default`` and the like, which the page
    asks a person to set once) set to ``settings`` as that person sets them."""
    steps = page_steps(page)
    script = "".join(steps[name].script for name in names)
    for variable, value in settings.items():
        script, found = re.subn(rf"^{variable}=\S+", f"{variable}={value}", script, count=1, flags=re.M)
        assert found, f"{page.name} no longer sets {variable}"
    return Step("+".join(names), script)


def steps_in(text: str) -> dict[str, Step]:
    """Every named step of the text, its indentation (a list item's) removed."""
    steps: dict[str, Step] = {}
    for match in _STEP.finditer(text):
        lines = match["body"].splitlines()
        indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
        steps[match["name"]] = Step(match["name"], "\n".join(line[indent:] for line in lines) + "\n")
    return steps


def run_step(step: Step, *, kubeconfig: Path, workdir: Path, env: dict[str, str], timeout: float = 600.0) -> str:
    """One step as a user runs it from a clone (``workdir`` links to the clone's folders, so the files a step
    writes, such as the certificates, stay out of the repository); its words on failure."""
    workdir.mkdir(parents=True, exist_ok=True)
    for folder in ("metacontroller", "crds", "examples", "tools"):
        link = workdir / folder
        if not link.exists():
            link.symlink_to(ROOT / folder)
    result = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + step.script],
        cwd=workdir,
        env={**os.environ, "KUBECONFIG": str(kubeconfig), **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"step {step.name} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout
