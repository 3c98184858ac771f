"""The diagnostics bundle (``tools/kubectl-sharddb-diagnose``) run against the installed product.

What an SRE sends when asking for help must hold what is on the cluster: the ShardDB and each of its
children, every hooks and Metacontroller replica's log, the CompositeControllers and the versions.
Each test reads one part of the archive back and holds it to what the API server says now.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ..support.examples import example
from ..support.sharddbs import wait_until
from .installs import HOOKS_NAMESPACE, Install, Obj
from .steps import ROOT

NAMESPACE = "diagnosed"
NAME = "diagnosed"
TOOL = ROOT / "tools" / "kubectl-sharddb-diagnose"
MINIMAL = ROOT / "examples" / "sharddb-minimal.yaml"
CHILDREN = "statefulsets,pods,services,jobs,deployments,persistentvolumeclaims,poddisruptionbudgets"
METACONTROLLERS = "app.kubernetes.io/name=metacontroller"
CONTROLLERS = "app.kubernetes.io/name=sharddb-hooks,app.kubernetes.io/component=controller"


class Bundle:
    """An archive the tool wrote, read by its paths below the one top folder."""

    def __init__(self, path: Path) -> None:
        with tarfile.open(path) as tar:
            members = [m for m in tar.getmembers() if m.isfile()]
            self.files = {m.name.split("/", 1)[1]: tar.extractfile(m).read().decode() for m in members}  # type: ignore[union-attr]

    def yaml(self, name: str) -> Obj:
        found: Obj = yaml.safe_load(self.files[name])
        return found


def diagnose(install: Install, target: Path, *args: str) -> Bundle:
    """The tool as a user runs it, with the cluster's kubeconfig; the archive it wrote."""
    result = subprocess.run(
        [str(TOOL), *args, "-o", str(target)],
        env={**os.environ, "KUBECONFIG": str(install.stack.control_plane.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{TOOL.name} {' '.join(args)} failed ({result.returncode}): {result.stderr}"
    return Bundle(target)


@pytest.fixture(scope="module")
def install(production: Install) -> Iterator[Install]:
    """A minimal ShardDB, Available, in a namespace of this module's."""
    production.settled().kubectl("create", "namespace", NAMESPACE)
    production.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(example(NAME, NAMESPACE, MINIMAL)))
    wait_until(f"{NAME} Available", lambda: production.available(NAMESPACE, NAME), 300, every=1)
    yield production
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


@pytest.fixture(scope="module")
def bundle(install: Install, tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    return diagnose(install, tmp_path_factory.mktemp("diagnose") / "bundle.tar.gz", f"{NAMESPACE}/{NAME}")


def names(listed: Obj) -> set[str]:
    return {f"{item['kind']}/{item['metadata']['name']}" for item in listed["items"]}


def test_the_bundle_holds_the_sharddb_and_each_of_its_children(install: Install, bundle: Bundle) -> None:
    here = f"sharddbs/{NAMESPACE}/{NAME}"
    children = install.get(CHILDREN, "-n", NAMESPACE, "-l", f"app.kubernetes.io/instance={NAME}")
    kinds = {name.split("/")[0] for name in names(children)}
    assert kinds >= {"StatefulSet", "Pod", "Service", "Job", "Deployment", "PersistentVolumeClaim"}
    assert bundle.yaml(f"{here}/sharddb.yaml")["metadata"]["name"] == NAME
    assert names(bundle.yaml(f"{here}/children.yaml")) == names(children)


def test_the_bundle_holds_the_events_of_the_sharddbs_namespace(bundle: Bundle) -> None:
    events = bundle.files[f"sharddbs/{NAMESPACE}/{NAME}/events.txt"]
    assert f"statefulset/{NAME}-db" in events
    assert f"deployment/{NAME}-cache" in events


def test_the_bundle_holds_the_log_of_every_hooks_replica(install: Install, bundle: Bundle) -> None:
    pods = [pod["metadata"]["name"] for pod in install.hooks_pods()]
    assert len(pods) == 3
    for pod in pods:
        log = bundle.files.get(f"logs/{HOOKS_NAMESPACE}/{pod}.log", "")
        assert f"[pod/{pod}/hooks]" in log, f"{pod}: {log[:200]!r}"


def test_the_bundle_holds_the_log_of_every_metacontroller(install: Install, bundle: Bundle) -> None:
    pods = install.get("pods", "-A", "-l", METACONTROLLERS)["items"]
    assert pods
    for pod in pods:
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        log = bundle.files.get(f"logs/{namespace}/{name}.log", "")
        assert f"[pod/{name}/" in log, f"{namespace}/{name}: {log[:200]!r}"


def test_the_bundle_holds_every_sharddb_compositecontroller(install: Install, bundle: Bundle) -> None:
    running = install.get("compositecontrollers", "-l", CONTROLLERS)
    assert names(bundle.yaml("compositecontrollers.yaml")) == names(running)


def test_the_bundle_holds_the_api_servers_version_and_the_images_that_run(install: Install, bundle: Bundle) -> None:
    served = yaml.safe_load(install.kubectl("version", "-o", "yaml"))["serverVersion"]["gitVersion"]
    assert f"Server Version: {served}" in bundle.files["versions.txt"]
    lines = {line.split(" ", 1)[0]: line for line in bundle.files["images.txt"].splitlines()}
    for pod in install.hooks_pods():
        image = next(c["image"] for c in pod["spec"]["containers"] if c["name"] == "hooks")
        line = lines.get(f"{HOOKS_NAMESPACE}/{pod['metadata']['name']}", "")
        assert " hooks=" in line, line
        assert image.rsplit("/", 1)[-1] in line, (image, line)


def test_the_bundle_records_no_failed_command(bundle: Bundle) -> None:
    assert bundle.files["errors.txt"] == ""


def test_the_bundle_of_all_sharddbs_holds_each_of_them(install: Install, tmp_path: Path) -> None:
    every = diagnose(install, tmp_path / "all.tar.gz", "--all")
    listed = install.get("sharddbs", "-A")["items"]
    expected = {f"sharddbs/{s['metadata']['namespace']}/{s['metadata']['name']}/sharddb.yaml" for s in listed}
    assert expected
    assert expected <= set(every.files)
