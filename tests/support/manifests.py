"""The shipped kustomize tree, rendered as kubectl renders it, and the hook objects in it: shared by the
tests of the manifests and of the monitoring that scrapes them."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from testbed.real import kubectl

from .crds import one

Obj = dict[str, Any]

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "metacontroller"
KUBERNETES_VERSION = "1.32.0"  # oldest Kubernetes the manifests promise to pass
HOOK_NAMESPACE = "sharddb-system"
HOOK_SERVICE = "sharddb-hooks"
HOOKS = ("customize", "sync", "finalize")


@cache
def _render(target: Path) -> tuple[Obj, ...]:
    assert kubectl.found(), "kubectl (with its built-in kustomize) is required to render metacontroller/"
    done = kubectl.Kubectl().run("kustomize", str(target), timeout=60)
    assert done.returncode == 0, f"kubectl kustomize {target.relative_to(REPO)} failed:\n{done.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def render(target: Path) -> list[Obj]:
    return list(_render(target))


def pod_spec(objs: list[Obj]) -> Obj:
    spec: Obj = one(objs, "Deployment", HOOK_SERVICE)["spec"]["template"]["spec"]
    return spec


def container(objs: list[Obj]) -> Obj:
    containers = pod_spec(objs)["containers"]
    assert len(containers) == 1
    found: Obj = containers[0]
    return found


def webhooks(objs: list[Obj]) -> dict[str, Obj]:
    hooks = one(objs, "CompositeController", "sharddb")["spec"]["hooks"]
    return {name: hooks[name]["webhook"] for name in HOOKS}
