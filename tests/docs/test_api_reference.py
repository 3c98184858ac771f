"""The field reference in the guide is the CRD's: generated from it, and naming every field."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import api_reference
from tools.api_reference import Field

from ..support.crds import CRD_FILE


def rows(page: str) -> set[str]:
    """The field paths in the page's tables, as written in their first column."""
    return {line.split("|")[1].strip().strip("`") for line in page.splitlines() if line.startswith("| `")}


def walk(schema: dict[str, object], prefix: str) -> list[str]:
    """Every field path under ``schema``, straight from the YAML, core/v1 subtrees as one field."""
    found: list[str] = []
    properties = schema.get("properties")
    assert properties is None or isinstance(properties, dict)
    for name, child in (properties or {}).items():
        assert isinstance(child, dict)
        path = f"{prefix}.{name}"
        found.append(path)
        if Field(path, child, False).core_v1 is None:
            found += walk(child, path)
            items = child.get("items")
            if isinstance(items, dict):
                found += walk(items, f"{path}[]")
    return found


def test_the_committed_reference_is_what_the_crd_generates() -> None:
    expected = api_reference.render(api_reference.load_version(CRD_FILE))
    assert api_reference.PAGE.read_text() == expected, "run python -m tools.api_reference"


def test_every_spec_field_of_the_crd_has_a_row() -> None:
    spec = api_reference.load_version(CRD_FILE)["schema"]["openAPIV3Schema"]["properties"]["spec"]
    expected = walk(spec, "spec")
    assert len(expected) > 40
    assert set(expected) <= rows(api_reference.PAGE.read_text())


def test_every_status_field_of_the_crd_has_a_row() -> None:
    status = api_reference.load_version(CRD_FILE)["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert set(walk(status, "status")) <= rows(api_reference.PAGE.read_text())


def test_every_printer_column_has_a_row() -> None:
    columns = api_reference.load_version(CRD_FILE)["additionalPrinterColumns"]
    assert {column["name"].upper() for column in columns} <= rows(api_reference.PAGE.read_text())


def test_a_field_added_to_the_crd_changes_the_page() -> None:
    version = api_reference.load_version(CRD_FILE)
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["replicasOfNothing"] = {"type": "integer", "description": "A field no page names yet."}
    page = api_reference.render(version)
    assert "`spec.replicasOfNothing`" in page
    assert page != api_reference.PAGE.read_text()


def test_check_fails_when_the_page_is_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "reference.md"
    stale.write_text("# Field reference\n\nold\n")
    monkeypatch.setattr(api_reference, "PAGE", stale)
    monkeypatch.setattr(api_reference, "ROOT", tmp_path)
    assert api_reference.main(["--check"]) == 1
