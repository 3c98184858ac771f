"""Offline preview, like ``helm template``: ``python -m hooks render FILE [--stage STAGE]``.

Prints the children (and, as a comment, the status) the hooks would answer for
each ShardDB in a manifest, so a user sees what Metacontroller will create
before it does, and can pipe it to ``kubectl apply --dry-run=server -f -``. No
cluster is involved: each stage's observed world is built from the hooks' own
earlier answers, stored as the API server would report them once the
controllers have done their part, and fed back through the same handler that
answers ``/sync`` and ``/finalize``.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import handler, kinds, names
from .clock import Clock, rfc3339, system_clock
from .errors import HookError

Obj = dict[str, Any]

# In lifecycle order; each stage is the one before it plus what the controllers do next.
STAGES = ("new", "ready", "available", "deleting")
DEFAULT_STAGE = "available"
DEFAULT_NAMESPACE = "default"  # what kubectl uses for a manifest without one

EXIT_BAD_INPUT = 2


class PreviewError(Exception):
    """Input the preview cannot render; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Preview:
    """What the hooks answer for one ShardDB at one stage."""

    name: str
    namespace: str
    stage: str
    children: list[Obj]
    status: Obj


class _World:
    """What Metacontroller would send for one ShardDB: the parent, its children as stored, pods, endpoints."""

    def __init__(self, parent: Obj, now: Clock) -> None:
        self.parent = parent
        self.now = now
        self.children: dict[str, dict[str, Obj]] = {}
        self.pods: dict[str, Obj] = {}
        self.slices: dict[str, Obj] = {}
        self.finalizing = False

    @property
    def name(self) -> str:
        return str(self.parent["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.parent["metadata"]["namespace"])

    def _key(self, name: str) -> str:
        return f"{self.namespace}/{name}"

    def stored(self, kind: kinds.Kind, name: str) -> Obj | None:
        return self.children.get(kind.group_key, {}).get(self._key(name))

    def sync(self) -> Obj:
        """One hook call on the world as it stands, its answer applied as Metacontroller would."""
        request = {
            "parent": self.parent,
            "children": self.children,
            "related": {kinds.ENDPOINTSLICE.group_key: self.slices, kinds.POD.group_key: self.pods},
            "finalizing": self.finalizing,
        }
        body = json.dumps(request).encode()
        answer = handler.sync(body, finalize=self.finalizing, now=self.now).body
        self._apply(answer)
        return answer

    def _apply(self, answer: Obj) -> None:
        """Desired children are stored (keeping what their controllers reported); the rest are gone."""
        desired: dict[str, dict[str, Obj]] = {}
        for child in answer["children"]:
            key = self._key(child["metadata"]["name"])
            group = kinds.BY_KIND[child["kind"]].group_key
            before = self.children.get(group, {}).get(key, {})
            stored = copy.deepcopy(child)
            stored["metadata"] = {**stored["metadata"], "namespace": self.namespace, "generation": 1}
            stored["status"] = before.get("status", {})
            desired.setdefault(group, {})[key] = stored
        self.children = desired
        self.parent["status"] = {**answer["status"], "observedGeneration": self.parent["metadata"]["generation"]}

    def _pod(self, name: str, component: str) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": names.labels(self.name, component)},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }

    def shards_ready(self) -> None:
        """The StatefulSet controller: every replica on the latest template, running and ready."""
        sts = self.stored(kinds.STATEFULSET, names.db_name(self.name))
        if sts is None:  # a paused ShardDB creates nothing
            return
        replicas = sts["spec"]["replicas"]
        revision = f"{names.db_name(self.name)}-preview"
        sts["status"] = {
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "currentReplicas": replicas,
            "updatedReplicas": replicas,
            "observedGeneration": 1,
            "currentRevision": revision,
            "updateRevision": revision,
        }
        for ordinal in range(replicas):
            pod = names.shard_pod_name(self.name, ordinal)
            self.pods[self._key(pod)] = self._pod(pod, names.DB)

    def seeds_done(self) -> None:
        """The Job controller: every seed Job has completed."""
        for job in self.children.get(kinds.JOB.group_key, {}).values():
            job["status"] = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}

    def shards_registered(self) -> None:
        """The EndpointSlice controller: every shard pod a ready endpoint of the headless Service."""
        service = names.db_name(self.name)
        endpoints = [
            {
                "conditions": {"ready": True},
                "hostname": pod["metadata"]["name"],
                "targetRef": {"kind": "Pod", "name": pod["metadata"]["name"]},
            }
            for pod in self.pods.values()
            if pod["metadata"]["labels"][names.COMPONENT_LABEL] == names.DB
        ]
        slice_name = f"{service}-preview"
        self.slices = {
            self._key(slice_name): {
                "apiVersion": kinds.ENDPOINTSLICE.api_version,
                "kind": kinds.ENDPOINTSLICE.kind,
                "metadata": {
                    "name": slice_name,
                    "namespace": self.namespace,
                    "labels": {names.SERVICE_NAME_LABEL: service},
                },
                "endpoints": endpoints,
            }
        }

    def cache_ready(self) -> None:
        """The Deployment controller: every cache replica on the latest template, running and ready."""
        cache = self.stored(kinds.DEPLOYMENT, names.cache_name(self.name))
        if cache is None:
            return
        replicas = cache["spec"]["replicas"]
        cache["status"] = {
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "updatedReplicas": replicas,
            "observedGeneration": 1,
            "conditions": [{"type": "Available", "status": "True"}],
        }
        for index in range(replicas):
            pod = f"{names.cache_name(self.name)}-preview-{index}"
            self.pods[self._key(pod)] = self._pod(pod, names.CACHE)

    def delete(self) -> None:
        """``kubectl delete``: Metacontroller calls the finalize hook from now on."""
        self.finalizing = True
        self.parent["metadata"]["deletionTimestamp"] = rfc3339(self.now())


def preview(manifest: Obj, stage: str = DEFAULT_STAGE, now: Clock = system_clock) -> Preview:
    """The hooks' answer for one ShardDB manifest at ``stage``; ``HookError`` if they refuse it."""
    if stage not in STAGES:
        raise ValueError(f"stage {stage!r} is not one of {', '.join(STAGES)}")
    parent = copy.deepcopy(manifest)
    metadata = parent.get("metadata")
    if isinstance(metadata, dict):  # anything else is for the hook to refuse, naming the field
        metadata["namespace"] = metadata.get("namespace") or DEFAULT_NAMESPACE
        metadata.setdefault("generation", 1)
    world = _World(parent, now)
    answer = world.sync()  # new: nothing observed
    if stage != "new":
        world.shards_ready()
        answer = world.sync()  # ready: every shard ready, the seed asked for
    if stage in ("available", "deleting"):
        world.seeds_done()
        world.shards_registered()
        world.sync()  # gates open: the cache is asked for
        world.cache_ready()
        answer = world.sync()
    if stage == "deleting":
        world.delete()
        answer = world.sync()
    children = [_with_namespace(child, world.namespace) for child in answer["children"]]
    return Preview(world.name, world.namespace, stage, children, answer["status"])


def _with_namespace(child: Obj, namespace: str) -> Obj:
    """Where Metacontroller creates it: the ShardDB's namespace (placed after the name, for reading)."""
    meta = child["metadata"]
    placed = {"name": meta["name"], "namespace": namespace, **{k: v for k, v in meta.items() if k != "name"}}
    return {**child, "metadata": placed}


def sharddbs(text: str, source: str) -> list[Obj]:
    """Every ShardDB document of a manifest; other documents (a Secret beside it) are left out."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise PreviewError(f"{source} is not YAML: {where}{error.problem or error.context}") from None
    except yaml.YAMLError as error:
        raise PreviewError(f"{source} is not YAML: {error}") from None
    found = [doc for doc in documents if isinstance(doc, dict) and doc.get("kind") == names.KIND]
    if not found:
        raise PreviewError(f"{source} has no ShardDB in it (a document with kind: {names.KIND})")
    # As JSON, the way kubectl sends it: YAML dates and the like become strings.
    loaded: list[Obj] = json.loads(json.dumps(found, default=str))
    return loaded


class _Dumper(yaml.SafeDumper):
    """YAML for people: a value used twice is written twice, never as an anchor and an alias."""

    def ignore_aliases(self, _data: Any) -> bool:
        return True


def _dump(obj: object) -> str:
    """Block style, keys in the hooks' order, one line per value however long."""
    return yaml.dump(
        obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1_000_000, allow_unicode=True
    )


# A claim template's `status` reads like a volume stuck in Pending; it is there because the API
# server stores every claim template with it, and a child must be returned as stored.
_CLAIM_STATUS = re.compile(r"^(?P<indent> +)status:\n(?P=indent)  phase: Pending$", re.MULTILINE)
CLAIM_STATUS_NOTE = (
    "# not a volume's state: the API server stores every claim template with this status,",
    "# so the hooks return it as stored and Metacontroller's update sees no difference",
)


def _child_yaml(child: Obj) -> str:
    """A child as YAML, with a note where a reader would take a field for a problem."""
    text = _dump(child).rstrip("\n")
    if child.get("kind") != "StatefulSet":
        return text
    return _CLAIM_STATUS.sub(lambda m: "".join(f"{m['indent']}{line}\n" for line in CLAIM_STATUS_NOTE) + m[0], text)


def to_yaml(previews: Sequence[Preview]) -> str:
    """One YAML stream: each child a document; the status a comment, so the stream applies as is."""
    out: list[str] = []
    for shown in previews:
        status = shown.status
        header = [
            f"# ShardDB {shown.namespace}/{shown.name} at stage {shown.stage}: phase {status['phase']}",
            "# status the hooks would report (a comment: not applied):",
            *(f"#   {line}" for line in _dump(status).splitlines()),
        ]
        if not shown.children:  # paused before anything exists: nothing to create
            out.append("\n".join(["---", *header, "# no children"]))
        for index, child in enumerate(shown.children):
            lines = ["---", *(header if index == 0 else []), _child_yaml(child)]
            out.append("\n".join(lines))
    return "\n".join(out) + "\n"


def render(text: str, source: str, stage: str = DEFAULT_STAGE) -> str:
    """The preview of every ShardDB in ``text``; ``PreviewError`` names the file and the problem."""
    previews = []
    for manifest in sharddbs(text, source):
        try:
            previews.append(preview(manifest, stage))
        except HookError as error:
            metadata = manifest.get("metadata")
            name = metadata.get("name") if isinstance(metadata, dict) else None
            raise PreviewError(f"{source}: ShardDB {name or '(unnamed)'}: {error.message}") from None
    return to_yaml(previews)


def main(argv: Sequence[str]) -> int:
    """``python -m hooks render``: 0 with the YAML on stdout, 2 with a message on stderr."""
    parser = argparse.ArgumentParser(
        prog="python -m hooks render",
        description="Print the children (and, as a comment, the status) the hooks would answer for each "
        "ShardDB in FILE at a lifecycle stage, as YAML for kubectl apply --dry-run=server -f -.",
    )
    parser.add_argument("file", metavar="FILE", help="a manifest with one or more ShardDBs; - reads stdin")
    parser.add_argument(
        "--stage",
        choices=STAGES,
        default=DEFAULT_STAGE,
        help="new: nothing exists yet; ready: every shard ready (the seed starts); "
        "available: seeded, registered, cache ready; deleting: an available ShardDB being deleted "
        f"(default {DEFAULT_STAGE})",
    )
    args = parser.parse_args(argv)
    source: str = args.file
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        print(f"sharddb-hooks render: cannot read {source}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        output = render(text, "stdin" if source == "-" else source, args.stage)
    except PreviewError as error:
        print(f"sharddb-hooks render: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    sys.stdout.write(output)
    return 0
