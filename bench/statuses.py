"""``python -m bench.statuses DIR``: what each ShardDB status write changed, from ``bench.fleet --dump DIR``.

Every status write of a parent makes Metacontroller sync it again, so a status that
moves more often costs hook calls. Per dump (a version's bring-up of N ShardDBs):
status writes per ShardDB, how many of them changed each field (a condition's field
is ``Type.field``), the hook calls by hook and answer, and one ShardDB's writes in
order with what each changed.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

Flat = dict[str, str]


@dataclass(frozen=True)
class StatusWrite:
    at: datetime
    name: str
    status: Flat


def flatten(status: dict[str, Any]) -> Flat:
    """A status as ``field -> value``; a condition's fields under its type (``Progressing.message``)."""
    flat: Flat = {}
    for key, value in status.items():
        if key == "conditions" and isinstance(value, list):
            for condition in value:
                kind = str(condition.get("type", "?"))
                for field, inner in condition.items():
                    if field != "type":
                        flat[f"{kind}.{field}"] = str(inner)
        elif isinstance(value, dict | list):
            flat[key] = json.dumps(value, sort_keys=True)
        else:
            flat[key] = str(value)
    return flat


def changed(before: Flat, after: Flat) -> list[str]:
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def status_writes(path: Path) -> dict[str, list[StatusWrite]]:
    """Per ShardDB, its successful status writes in the order their answers went out."""
    by_name: dict[str, list[StatusWrite]] = {}
    for line in path.read_text().splitlines():
        write = json.loads(line)
        if write["kind"] == "status" and write["resource"] == "sharddbs" and "status" in write:
            entry = StatusWrite(datetime.fromisoformat(write["at"]), write["name"], flatten(write["status"]))
            by_name.setdefault(entry.name, []).append(entry)
    for writes in by_name.values():
        writes.sort(key=lambda w: w.at)
    return by_name


@dataclass(frozen=True)
class Counts:
    """Over every ShardDB's status writes."""

    fields: Counter[str]  # writes that changed each field (a first write changes every field)
    flips: Counter[str]  # writes that put a field back to the value it had two writes before (A → B → A)
    unchanged: int  # writes that changed no field at all


def field_counts(by_name: dict[str, list[StatusWrite]]) -> Counts:
    fields: Counter[str] = Counter()
    flips: Counter[str] = Counter()
    unchanged = 0
    for writes in by_name.values():
        older: Flat = {}
        previous: Flat = {}
        for write in writes:
            moved = changed(previous, write.status)
            fields.update(moved)
            flips.update(f for f in moved if older and f in older and older.get(f) == write.status.get(f))
            unchanged += not moved
            older, previous = previous, write.status
    return Counts(fields, flips, unchanged)


def hook_counts(path: Path) -> Counter[str]:
    """Hook calls by ``hook status`` (``sync 200``, ``sync 304``, ``customize 200`` …)."""
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        call = json.loads(line)
        counts[f"{call.get('hook', '?')} {call.get('status', '?')}"] += 1
    return counts


def _short(value: str | None, width: int = 90) -> str:
    text = "—" if value is None else value
    return text if len(text) <= width else text[: width - 1] + "…"


def sequence(writes: list[StatusWrite], skip: frozenset[str]) -> list[str]:
    """One ShardDB's writes: seconds since its first, then each changed field as ``old → new``."""
    lines: list[str] = []
    previous: Flat = {}
    for index, write in enumerate(writes):
        offset = (write.at - writes[0].at).total_seconds()
        fields = [f for f in changed(previous, write.status) if f not in skip]
        if index == 0:
            lines.append(f"  #{index + 1} +{offset:.2f}s (first)")
            for field in sorted(write.status):
                lines.append(f"      {field} = {_short(write.status[field])}")
        else:
            lines.append(f"  #{index + 1} +{offset:.2f}s changed {', '.join(fields) or '(only clock fields)'}")
            for field in fields:
                lines.append(f"      {field}: {_short(previous.get(field))} → {_short(write.status.get(field))}")
        previous = write.status
    return lines


def report(directory: Path, name: str, skip: frozenset[str]) -> str:
    out: list[str] = []
    for writes_path in sorted(directory.glob("*.writes.jsonl")):
        stem = writes_path.name.removesuffix(".writes.jsonl")
        by_name = status_writes(writes_path)
        if not by_name:
            continue
        size = len(by_name)
        total = sum(len(w) for w in by_name.values())
        counts = field_counts(by_name)
        out.append(f"== {stem}: {size} ShardDBs, {total / size:.2f} status writes per ShardDB")
        out.append(f"   writes that changed nothing: {counts.unchanged}")
        flips = ", ".join(f"{field} {count}" for field, count in sorted(counts.flips.items())) or "none"
        out.append(f"   writes putting a field back to its value two writes before (A → B → A): {flips}")
        out.append("   writes changing each field, per ShardDB (the first write counts for every field):")
        for field, count in sorted(counts.fields.items(), key=lambda item: (-item[1], item[0])):
            out.append(f"     {count / size:6.2f}  {field}")
        hooks_path = directory / f"{stem}.hooks.jsonl"
        if hooks_path.exists():
            calls = hook_counts(hooks_path)
            split = ", ".join(f"{key} {count / size:.2f}" for key, count in sorted(calls.items()))
            out.append(f"   hook calls per ShardDB: {sum(calls.values()) / size:.2f} ({split})")
        chosen = name if name in by_name else sorted(by_name)[0]
        out.append(f"   {chosen}'s status writes:")
        out += sequence(by_name[chosen], skip)
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.statuses", description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="a directory written by python -m bench.fleet --dump")
    parser.add_argument("--name", default="db-000", help="the ShardDB whose writes are listed (db-000)")
    parser.add_argument(
        "--skip", default="", help="fields left out of the listed writes, comma-separated (still counted)"
    )
    args = parser.parse_args(argv)
    skip = frozenset(part for part in args.skip.split(",") if part)
    print(report(args.directory, args.name, skip))


if __name__ == "__main__":
    main()
