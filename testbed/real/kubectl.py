"""Real stack: the one way the testbed, the tests and the benchmarks run kubectl, as one identity or offline.

kubectl is what users type, so the tests drive the API server through it where what is checked
is what a person would see (``kubectl get``, ``explain``, ``apply``, ``drain``), and it renders
the overlays (``kubectl kustomize``, no server needed). ``Kubectl`` fixes the two things every
call must get right: the kubeconfig (the identity it acts as, never a default one from the
machine it runs on) and a timeout, so a hung server fails a test instead of stopping it. Output is
captured as text; ``run`` hands back the finished process for the caller to judge, ``must``
raises ``KubectlError`` with kubectl's own words. ``tests/tree/test_imports.py`` holds every other
module to it.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TIMEOUT = 120.0
MISSING = "kubectl (with its built-in kustomize) is required on PATH"


class KubectlError(RuntimeError):
    """kubectl is missing, or refused a command; the message carries what it said."""


def found() -> str | None:
    """kubectl's path on PATH, or None: for a tier to say up front what it lacks."""
    return shutil.which("kubectl")


@dataclass(frozen=True)
class Kubectl:
    """kubectl as the identity of ``kubeconfig``; with none, only for what needs no server (``kustomize``)."""

    kubeconfig: Path | None = None
    timeout: float = DEFAULT_TIMEOUT

    def run(
        self, *args: str, stdin: str | None = None, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``kubectl args``; the caller checks ``returncode``. Past the timeout, ``TimeoutExpired``."""
        config = [f"--kubeconfig={self.kubeconfig}"] if self.kubeconfig is not None else []
        return subprocess.run(
            ["kubectl", *config, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=self.timeout if timeout is None else timeout,
            check=False,
        )

    def must(self, *args: str, stdin: str | None = None, timeout: float | None = None) -> str:
        """Run ``kubectl args`` and return what it printed; a refusal raises ``KubectlError`` with its stderr."""
        if found() is None:
            raise KubectlError(MISSING)
        result = self.run(*args, stdin=stdin, timeout=timeout)
        if result.returncode != 0:
            raise KubectlError(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
        return result.stdout

    def kustomize(self, target: Path, timeout: float = 60.0) -> str:
        """``kubectl kustomize target``: the rendered YAML; kubectl missing or refusing raises ``KubectlError``."""
        return self.must("kustomize", str(target), timeout=timeout)
