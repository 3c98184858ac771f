"""Real stack: a partitioned install as data, which CompositeController and Metacontroller serve each partition.

Rendered with ``kubectl kustomize`` from an overlay plus ``components/partitions-<N>``,
so the tests and the fleet benchmark start exactly what a user applies: each
partition's CompositeController as rendered, and the arguments (with its
``--target-label-selector``) of the Metacontroller that runs it.
"""

from __future__ import annotations

import ast
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testbed.real.kubectl import Kubectl

Obj = dict[str, Any]

LABEL = "mygroup.example.com/partition"
FIRST = "p0"
ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "metacontroller"
COMPONENTS = DEPLOY / "components"
TARGET_FLAG = "--target-label-selector="
# What a Metacontroller shared with other controllers must run with beside a
# partitioned install: every ShardDB CompositeController there carries the label.
SHARED_SELECTOR = f"!{LABEL}"
ROLE = "sharddb-metacontroller"
POLICY = "sharddb-partition"


class SelectorError(ValueError):
    """A label selector this module cannot read; the message quotes it."""


def counts() -> list[int]:
    """The partition counts a component ships for, smallest first."""
    found = (re.fullmatch(r"partitions-(\d+)", path.parent.name) for path in COMPONENTS.glob("*/kustomization.yaml"))
    return sorted(int(match.group(1)) for match in found if match)


def component(count: int) -> Path:
    path = COMPONENTS / f"partitions-{count}"
    if not (path / "kustomization.yaml").is_file():
        raise ValueError(f"no component for {count} partitions; shipped: {counts()}")
    return path


def kustomize(target: Path) -> list[Obj]:
    """``kubectl kustomize`` of a directory, as objects; kubectl missing or refusing raises ``KubectlError``."""
    return [doc for doc in yaml.safe_load_all(Kubectl().kustomize(target)) if doc]


def render_objects(overlay: Path, count: int) -> list[Obj]:
    """The overlay with ``components/partitions-<count>`` added: the one step of docs/installing/partitions.md."""
    with tempfile.TemporaryDirectory(prefix="sharddb-partitions-") as scratch:
        root = Path(scratch)
        kustomization = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [os.path.relpath(overlay, root)],
            "components": [os.path.relpath(component(count), root)],
        }
        (root / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
        return kustomize(root)


# --- label selectors -------------------------------------------------------------


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a metav1.LabelSelector matches ``labels``; none at all matches everything, as in Metacontroller."""
    if selector is None:
        return True
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    expressions = selector.get("matchExpressions", [])
    return all(_requirement(e["key"], e["operator"], e.get("values", []), labels) for e in expressions)


def _requirement(key: str, operator: str, values: list[str], labels: Mapping[str, str]) -> bool:
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise SelectorError(f"unknown operator {operator!r} for {key}")


_SET = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQUALS = re.compile(r"^\s*([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*$")


def parse(text: str) -> Obj:
    """A selector in the command-line syntax (``a=b,c notin (d,e),!f``) as a metav1.LabelSelector."""
    expressions: list[Obj] = []
    for part in re.split(r",(?![^(]*\))", text) if text.strip() else []:
        if match := _SET.match(part):
            key, operator, values = match.groups()
            listed = [value.strip() for value in values.split(",") if value.strip()]
            expressions.append({"key": key, "operator": "In" if operator == "in" else "NotIn", "values": listed})
        elif match := _EQUALS.match(part):
            key, operator, value = match.groups()
            expressions.append({"key": key, "operator": "NotIn" if operator == "!=" else "In", "values": [value]})
        elif match := _EXISTS.match(part):
            negated, key = match.groups()
            expressions.append({"key": key, "operator": "DoesNotExist" if negated else "Exists"})
        else:
            raise SelectorError(f"cannot read the label selector {text!r} (at {part!r})")
    return {"matchExpressions": expressions}


# --- the setup -----------------------------------------------------------------------


@dataclass(frozen=True)
class Partition:
    """One partition: the CompositeController that selects its ShardDBs and the Metacontroller that runs it."""

    name: str
    controller: Obj
    instance: Obj

    @property
    def args(self) -> list[str]:
        """The Metacontroller container's arguments, as rendered."""
        (container,) = self.instance["spec"]["template"]["spec"]["containers"]
        return list(container["args"])

    def flag(self, name: str, default: str) -> str:
        """The value of ``--name=`` in the rendered arguments, or ``default`` (Metacontroller's own)."""
        prefix = f"--{name}="
        return next((arg.removeprefix(prefix) for arg in self.args if arg.startswith(prefix)), default)

    @property
    def target_selector(self) -> str:
        """The value of ``--target-label-selector``: the CompositeControllers this instance runs."""
        (value,) = [arg.removeprefix(TARGET_FLAG) for arg in self.args if arg.startswith(TARGET_FLAG)]
        return value

    @property
    def service_account(self) -> str:
        """The user name the instance writes as (what the API server's audit log records)."""
        meta = self.instance["metadata"]
        account = self.instance["spec"]["template"]["spec"]["serviceAccountName"]
        return f"system:serviceaccount:{meta['namespace']}:{account}"

    @property
    def parent_selector(self) -> Obj | None:
        """The ShardDBs this partition's CompositeController serves (None: every one)."""
        selector: Obj | None = self.controller["spec"]["parentResource"].get("labelSelector")
        return selector

    @property
    def finalizer(self) -> str:
        """The finalizer this partition's CompositeController puts on its ShardDBs."""
        return f"metacontroller.io/compositecontroller-{self.controller['metadata']['name']}"


@dataclass(frozen=True)
class Setup:
    """Every rendered object, and the partitions read off them."""

    objects: list[Obj]
    partitions: list[Partition]

    def serving(self, labels: Mapping[str, str]) -> Partition:
        """The one partition whose CompositeController selects a ShardDB with ``labels``."""
        found = [p for p in self.partitions if selects(p.parent_selector, labels)]
        if len(found) != 1:
            raise AssertionError(f"labels {dict(labels)} are selected by {[p.name for p in found]}, not one partition")
        return found[0]

    def of(self, kind: str) -> list[Obj]:
        return [obj for obj in self.objects if obj["kind"] == kind]

    def admitted(self) -> list[str]:
        """The partitions the admission policy lets a new ShardDB be labelled with."""
        return admitted(self.objects)


def admitted(objects: list[Obj]) -> list[str]:
    """The partition list of the rendered ValidatingAdmissionPolicy (its variable ``partitions``)."""
    (policy,) = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == POLICY]
    (expression,) = [v["expression"] for v in policy["spec"]["variables"] if v["name"] == "partitions"]
    names = ast.literal_eval(expression)
    if not (isinstance(names, list) and all(isinstance(name, str) for name in names)):
        raise AssertionError(f"the policy's partitions are not a list of names: {expression}")
    return names


def read(objects: list[Obj]) -> Setup:
    """The partitions of rendered objects, in order p0, p1, …; each must have one controller and one instance."""
    controllers = {obj["metadata"]["labels"].get(LABEL): obj for obj in objects if obj["kind"] == "CompositeController"}
    instances = {
        obj["metadata"]["labels"].get(LABEL): obj
        for obj in objects
        if obj["kind"] == "StatefulSet" and obj["metadata"]["labels"].get("app.kubernetes.io/name") == "metacontroller"
    }
    if set(controllers) != set(instances) or None in controllers:
        have = sorted(map(str, controllers)), sorted(map(str, instances))
        raise AssertionError(f"partitions with a controller {have[0]} differ from those with an instance {have[1]}")
    names = sorted(controllers, key=lambda name: int(name.removeprefix("p")))
    return Setup(objects, [Partition(name, controllers[name], instances[name]) for name in names])


def render(overlay: Path, count: int) -> Setup:
    """``overlay`` split into ``count`` partitions (``DEPLOY / "overlays" / "dev"`` for plain HTTP without secrets)."""
    return read(render_objects(overlay, count))
