"""The README and the guide in docs/ stay true: examples, links, shown output, alert rules.

Fast tier: nothing but the files and the hooks. The site itself is built by ``make docs``
(MkDocs, strict); these tests also cover the README, which the site does not build, and
what MkDocs cannot know: that a shown ShardDB is one the API server accepts.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import yaml
from fastapi.testclient import TestClient

from hooks.service.app import create_app
from hooks.spec import ShardDBSpec

from ..support.crds import crd_schema, schema_errors, sharddb_crd
from ..support.preview import rendered

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md"), *ROOT.glob("*/README.md")])
FENCE = re.compile(
    r"^(?P<indent> *)(?P<fence>```+)(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)(?P=fence)\s*$", re.M | re.S
)
SNIPPET = re.compile(r'^--8<-- "(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"$', re.M)
LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (?P<title>.+?)\s*#*$", re.M)
EXTERNAL = ("http://", "https://", "mailto:")


@dataclass(frozen=True)
class Block:
    page: Path
    lang: str
    body: str


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@cache
def expanded(page: Path) -> str:
    """The page as MkDocs reads it: each ``--8<--`` line replaced by the file (section) it names."""

    def include(match: re.Match[str]) -> str:
        text = (ROOT / match["path"]).read_text()
        section = match["section"]
        if section is None:
            return text
        start, end = f"--8<-- [start:{section}]", f"--8<-- [end:{section}]"
        assert start in text, f"{rel(page)}: no section {section!r} in {match['path']}"
        assert end in text, f"{rel(page)}: section {section!r} of {match['path']} never ends"
        inner = text.split(start, 1)[1].split(end, 1)[0]
        return inner.split("\n", 1)[1].rsplit("\n", 1)[0]

    return SNIPPET.sub(include, page.read_text())


def blocks(page: Path) -> list[Block]:
    return [
        Block(page, m["lang"], "\n".join(line.removeprefix(m["indent"]) for line in m["body"].splitlines()))
        for m in FENCE.finditer(expanded(page))
    ]


def prose(page: Path) -> str:
    """The page without its fenced blocks and inline code: where links and headings live."""
    text = FENCE.sub("", expanded(page))
    return re.sub(r"`[^`\n]*`", "", text)


def slug(title: str) -> str:
    """A heading's anchor as GitHub and MkDocs' toc both make it (for the ASCII headings used here)."""
    text = re.sub(r"`([^`]*)`", r"\1", title)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[\s]+", "-", text)


@cache
def anchors(page: Path) -> frozenset[str]:
    return frozenset(slug(m["title"]) for m in HEADING.finditer(FENCE.sub("", expanded(page))))


def sharddbs_shown() -> list[tuple[Block, dict[str, Any]]]:
    found = []
    for page in PAGES:
        for block in blocks(page):
            if block.lang not in ("yaml", "yml"):
                continue
            for doc in yaml.safe_load_all(block.body):
                if isinstance(doc, dict) and doc.get("kind") == "ShardDB":
                    found.append((block, doc))
    return found


def links() -> list[tuple[Path, str]]:
    return [
        (page, m["target"])
        for page in PAGES
        for m in LINK.finditer(prose(page))
        if not m["target"].startswith(EXTERNAL)
    ]


SHOWN = sharddbs_shown()
SHOWN_DOCS = [doc for _, doc in SHOWN]
SHOWN_IDS = [f"{rel(block.page)}:{doc['metadata']['name']}" for block, doc in SHOWN]
LINKS = links()


def _id(page: Path, target: str) -> str:
    return f"{rel(page)}->{target}"


# --- examples that stay true -------------------------------------------------------


def test_the_readme_and_the_guide_show_sharddbs() -> None:
    pages = {rel(block.page) for block, _ in SHOWN}
    assert "README.md" in pages
    assert any(page.startswith("docs/") for page in pages)


@pytest.mark.parametrize("doc", SHOWN_DOCS, ids=SHOWN_IDS)
def test_every_sharddb_shown_passes_the_crd_schema(doc: dict[str, Any]) -> None:
    """No field the API server would prune, and every type, limit and pattern the schema sets."""
    schema = crd_schema(sharddb_crd(), "v1alpha1")
    assert schema_errors(doc, schema) == []
    limits = jsonschema.Draft202012Validator(schema).iter_errors(doc)
    assert [f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in limits] == []


@pytest.mark.parametrize("doc", SHOWN_DOCS, ids=SHOWN_IDS)
def test_every_sharddb_shown_is_one_the_hooks_accept(doc: dict[str, Any]) -> None:
    assert doc["apiVersion"] == "mygroup.example.com/v1alpha1"
    ShardDBSpec.model_validate(doc["spec"])


# --- links ---------------------------------------------------------------------------


def test_the_pages_have_relative_links_to_check() -> None:
    assert {rel(page) for page, _ in LINKS} >= {"README.md", "docs/index.md"}


@pytest.mark.parametrize(("page", "target"), LINKS, ids=[_id(p, t) for p, t in LINKS])
def test_every_relative_link_resolves_to_a_file_and_its_heading(page: Path, target: str) -> None:
    path, _, anchor = target.partition("#")
    goal = (page.parent / path).resolve() if path else page
    assert goal.exists(), f"{rel(page)}: {target} names no file"
    if anchor:
        assert goal.suffix == ".md", f"{rel(page)}: {target}: an anchor into a file that is not Markdown"
        assert anchor in anchors(goal), f"{rel(page)}: {target}: no heading {anchor!r} in {rel(goal)}"


def test_the_guide_links_only_inside_the_guide() -> None:
    """MkDocs publishes docs/ alone: a relative link out of it would be broken on the site."""
    outside = [
        (rel(page), target)
        for page, target in LINKS
        if page.is_relative_to(DOCS)
        and target.partition("#")[0]
        and not (page.parent / target.partition("#")[0]).resolve().is_relative_to(DOCS)
    ]
    assert outside == []


# --- shown output ----------------------------------------------------------------------


def shown_renders() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.body.startswith("$ ") and " render " in b.body]


def test_the_preview_page_shows_render_output() -> None:
    assert [rel(block.page) for block in shown_renders()] == ["docs/api/preview.md"]


@pytest.mark.parametrize("block", shown_renders(), ids=lambda b: rel(b.page))
def test_every_shown_render_line_is_in_the_real_output_in_order(block: Block) -> None:
    command, *shown = block.body.splitlines()
    args = shlex.split(command.removeprefix("$ "))
    assert args[1:4] == ["-m", "hooks", "render"], command
    source, stage = args[4], args[args.index("--stage") + 1] if "--stage" in args else None
    real = rendered(source, stage).splitlines()
    position = 0
    for line in (line for line in shown if line.strip("# ") != "…"):  # an elision, plain or in a comment
        assert line in real[position:], f"not in the output of {command!r} (after line {position}): {line!r}"
        position = real.index(line, position) + 1


# --- alert rules ---------------------------------------------------------------------------


def test_the_monitoring_page_names_every_shipped_alert() -> None:
    """The rules live in the monitoring component (tests/test_monitoring.py runs them); the page's table explains
    each, in the file's order, so a rule added or dropped shows on the page."""
    shipped = yaml.safe_load((ROOT / "metacontroller/components/monitoring/prometheus/rules.yaml").read_text())
    alerts = [rule["alert"] for group in shipped["groups"] for rule in group["rules"] if "alert" in rule]
    page = (DOCS / "operating" / "monitoring.md").read_text()
    assert alerts
    assert re.findall(r"^\| `(ShardDB\w+)` \|", page, re.M) == alerts


# --- a hook tried by hand ------------------------------------------------------------------


def hand_calls() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.lang == "sh" and b.body.startswith("curl -s localhost")]


def test_the_getting_started_page_shows_a_hook_called_by_hand() -> None:
    assert [rel(block.page) for block in hand_calls()] == ["docs/getting-started.md"]


@pytest.mark.parametrize("block", hand_calls(), ids=lambda b: rel(b.page))
def test_a_hook_called_by_hand_as_shown_answers_with_children(block: Block) -> None:
    args = shlex.split(block.body)
    path = args[2].removeprefix("localhost:8080")
    body = args[args.index("-d") + 1]
    with TestClient(create_app()) as client:
        answer = client.post(path, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text
    assert {child["kind"] for child in answer.json()["children"]} >= {"Service", "StatefulSet"}


# --- kubectl get sharddb as shown --------------------------------------------------------


def shown_tables() -> list[tuple[Block, list[list[str]]]]:
    """Each block that shows ``kubectl get sharddb`` output: its header and rows, split on spaces."""
    found = []
    for page in PAGES:
        for block in blocks(page):
            lines = [line.removeprefix("# ").split() for line in block.body.splitlines()]
            starts = [i for i, words in enumerate(lines) if words[:2] == ["NAME", "SHARDS"]]
            for i in starts:
                rows = [words for words in lines[i + 1 :] if len(words) == len(lines[i])]
                found.append((block, [lines[i], *rows]))
    return found


def test_the_readme_shows_kubectl_get_sharddb() -> None:
    assert "README.md" in {rel(block.page) for block, _ in shown_tables()}


TABLES = shown_tables()


@pytest.mark.parametrize(("block", "table"), TABLES, ids=[rel(block.page) for block, _ in TABLES])
def test_every_kubectl_get_shown_has_the_crds_columns_and_values_they_can_take(
    block: Block, table: list[list[str]]
) -> None:
    version = sharddb_crd()["spec"]["versions"][0]
    columns = [c["name"].upper() for c in version["additionalPrinterColumns"] if not c.get("priority")]
    header, *rows = table
    assert header == ["NAME", *columns], rel(block.page)
    phases = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["phase"]["enum"]
    for row in rows:
        shown = dict(zip(header, row, strict=True))
        assert shown["PHASE"] in phases, row
        assert shown["READY"] in ("True", "False"), row
        assert shown["CACHE"] in ("true", "false"), row
