"""``python -m bench.statuses``: what each ShardDB status write changed, read from a ``bench.fleet --dump``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.statuses import field_counts, flatten, report, status_writes


def condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": "t0"}


def status(ready: int, progressing: str) -> dict[str, Any]:
    return {"readyShards": ready, "conditions": [condition("Progressing", "True", "Provisioning", progressing)]}


def dump(folder: Path, *statuses: dict[str, Any], name: str = "db-000") -> Path:
    lines = [
        {"at": f"2026-12-05T02:00:0{i}+00:00", "kind": "status", "resource": "sharddbs", "name": name, "status": s}
        for i, s in enumerate(statuses)
    ]
    lines.append({"at": "2026-12-05T02:00:09+00:00", "kind": "create", "resource": "services", "name": "db-000-db"})
    path = folder / "current.fleet-1.writes.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_conditions_fields_are_named_by_its_type() -> None:
    flat = flatten(status(1, "1/3 shards ready"))
    assert flat["Progressing.message"] == "1/3 shards ready"
    assert flat["readyShards"] == "1"


def test_only_a_sharddbs_status_writes_are_read(tmp_path: Path) -> None:
    writes = status_writes(dump(tmp_path, status(0, "0/3 shards ready"), status(1, "1/3 shards ready")))
    assert [w.status["readyShards"] for w in writes["db-000"]] == ["0", "1"]


def test_each_field_counts_the_writes_that_changed_it(tmp_path: Path) -> None:
    writes = status_writes(dump(tmp_path, status(0, "0/3"), status(1, "1/3"), status(1, "1/3; a pod waits")))
    counts = field_counts(writes)
    assert counts.fields["readyShards"] == 2
    assert counts.fields["Progressing.message"] == 3


def test_a_field_put_back_two_writes_later_is_a_flip(tmp_path: Path) -> None:
    writes = status_writes(dump(tmp_path, status(0, "0/3"), status(0, "0/3; a pod waits"), status(0, "0/3")))
    assert field_counts(writes).flips == {"Progressing.message": 1}


def test_the_report_lists_a_sharddbs_writes_with_what_each_changed(tmp_path: Path) -> None:
    dump(tmp_path, status(0, "0/3 shards ready"), status(1, "1/3 shards ready"))
    text = report(tmp_path, "db-000", frozenset())
    assert "current.fleet-1: 1 ShardDBs, 2.00 status writes per ShardDB" in text
    assert "readyShards: 0 → 1" in text
