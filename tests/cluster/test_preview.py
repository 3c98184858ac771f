"""The preview pipes into ``kubectl apply --dry-run=server -f -`` and a real API server accepts it.

Each example is rendered at stage ``available`` (every child a ShardDB ever has
at once) into a namespace of the test's own, exactly as docs/api/preview.md shows it:
``python -m hooks render FILE | kubectl apply --dry-run=server -f -``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ..support.kube import Kube
from .conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def in_namespace(path: Path, namespace: str) -> str:
    """The example with its ShardDBs moved into ``namespace`` (the preview places children there)."""
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    for doc in docs:
        if doc.get("kind") == "ShardDB":
            doc["metadata"]["namespace"] = namespace
    return yaml.safe_dump_all(docs, sort_keys=False)


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_the_available_preview_of_each_example_is_accepted_by_the_api_server(
    kube: Kube, namespace: str, path: Path
) -> None:
    preview = subprocess.run(
        [sys.executable, "-m", "hooks", "render", "-", "--stage", "available"],
        cwd=ROOT,
        input=in_namespace(path, namespace),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert preview.returncode == 0, preview.stderr
    names = sorted(doc["metadata"]["name"] for doc in yaml.safe_load_all(preview.stdout) if doc is not None)
    result = kube.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=preview.stdout)
    assert result.returncode == 0, result.stderr
    # kubectl prints "<resource>/<name> created (server dry run)" for each object it sent.
    accepted = [line.split()[0] for line in result.stdout.splitlines() if line.endswith("created (server dry run)")]
    assert sorted(resource.split("/", 1)[1] for resource in accepted) == names, result.stdout
