"""Offline preview, like ``helm template``: ``python -m hooks render FILE [--stage STAGE]``.

Prints the children (and, as a comment, the status) the hooks would answer for
each ShardDB in a manifest, so a user sees what Metacontroller will create
before it does, and can pipe it to ``kubectl apply --dry-run=server -f -``. No
cluster is involved: ``stages`` walks each ShardDB to the stage asked for.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from .. import names
from ..errors import HookError
from .stages import DEFAULT_STAGE, STAGES, Preview, preview
from .world import Obj

EXIT_BAD_INPUT = 2


class PreviewError(Exception):
    """Input the preview cannot render; the message names the file and what is wrong."""


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
