"""Every kustomize overlay applies to a real API server with strict field validation.

Metacontroller's own CRDs are installed first (found once per run by the
``metacontroller_crds`` fixture: a path, ``shared/`` beside the repository, or the
pinned release, verified), so the server validates our CompositeController against
its real schema, unknown fields included. The apply is a server-side dry run:
admission and validation run in full, nothing is stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ..support.kube import Kube, error_message
from .conftest import ROOT

OVERLAYS = sorted(path.parent for path in (ROOT / "metacontroller" / "overlays").glob("*/kustomization.yaml"))


def render(kube: Kube, overlay: Path) -> list[dict[str, Any]]:
    result = kube.kubectl("kustomize", str(overlay))
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def ensure_namespaces(kube: Kube, docs: list[dict[str, Any]]) -> None:
    """A dry run creates nothing, so the namespaces its objects live in must exist already."""
    wanted = {doc["metadata"]["name"] for doc in docs if doc["kind"] == "Namespace"}
    wanted |= {doc["metadata"]["namespace"] for doc in docs if doc["metadata"].get("namespace")}
    for name in sorted(wanted):
        response = kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        assert response.status_code in (201, 409), error_message(response)


def test_at_least_two_overlays_exist() -> None:
    assert len(OVERLAYS) >= 2, f"overlays found: {[o.name for o in OVERLAYS]}"


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[overlay.name for overlay in OVERLAYS])
def test_overlay_applies_with_strict_validation(with_metacontroller: Kube, overlay: Path) -> None:
    docs = render(with_metacontroller, overlay)
    assert any(doc["kind"] == "CompositeController" for doc in docs), "overlay has no CompositeController"
    ensure_namespaces(with_metacontroller, docs)
    result = with_metacontroller.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "--field-manager=sharddb-overlay-test",
        "-k",
        str(overlay),
    )
    assert result.returncode == 0, f"{overlay.name}:\n{result.stderr}"
    applied = [line for line in result.stdout.splitlines() if "serverside-applied (server dry run)" in line]
    assert len(applied) == len(docs), result.stdout


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[overlay.name for overlay in OVERLAYS])
def test_overlay_compositecontrollers_target_sharddbs(with_metacontroller: Kube, overlay: Path) -> None:
    controllers = [doc for doc in render(with_metacontroller, overlay) if doc["kind"] == "CompositeController"]
    assert controllers
    for controller in controllers:
        spec = controller["spec"]
        parent = {key: spec["parentResource"][key] for key in ("apiVersion", "resource")}
        assert parent == {"apiVersion": "mygroup.example.com/v1alpha1", "resource": "sharddbs"}
        strategies = {c["resource"]: c.get("updateStrategy", {}).get("method") for c in spec["childResources"]}
        assert strategies["statefulsets"] == "InPlace"
        assert strategies["deployments"] == "InPlace"
        assert strategies["services"] == "InPlace"
        assert strategies["jobs"] in (None, "OnDelete")
