"""Fault tooling: a fault step as clients saw it, each writer's longest wait for an acknowledged write.

The installed tier's writers (``tests/installed/writers.py``) measure one ``Outage`` per step and its
conftest prints them as a table (``HEADER``, ``Outage.row``) and writes them, one JSON object each, to
the file ``SHARDDB_OUTAGES_JSON`` names; ``bench/ha.py`` reads each run's back (``Outage.from_json``)
and pools them over the runs. One class for both, so the file one writes is the file the other reads.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

HEADER = (
    "| step | shards stopped | outage p50 (s) | outage max (s) | other shards' max (s) | cache max (s) |\n"
    "|---|---:|---:|---:|---:|---:|"
)


@dataclass(frozen=True)
class Outage:
    """One step as the clients saw it: the longest gap of each writer (seconds, by its name), which writers'
    shards the step stopped (``affected``), and the cache writer's longest gap, if one ran."""

    step: str
    gaps: dict[str, float]
    affected: tuple[str, ...]
    cache: float | None = None

    @property
    def hit(self) -> list[float]:
        return [self.gaps[name] for name in self.affected]

    @property
    def others(self) -> list[float]:
        return [gap for name, gap in self.gaps.items() if name not in self.affected]

    def row(self) -> str:
        """``| step | shards stopped | p50 | max | the others' max | the cache's max |``, in seconds."""

        def seconds(values: list[float], pick: str) -> str:
            if not values:
                return "—"
            return f"{statistics.median(values) if pick == 'p50' else max(values):.1f}"

        cache = "—" if self.cache is None else f"{self.cache:.1f}"
        hit = self.hit
        return (
            f"| {self.step} | {len(hit)} | {seconds(hit, 'p50')} | {seconds(hit, 'max')} "
            f"| {seconds(self.others, 'max')} | {cache} |"
        )

    @classmethod
    def from_json(cls, item: object) -> Outage:
        """One outage as ``dataclasses.asdict`` wrote it and ``json`` read it back; ``ValueError`` saying what
        is wrong when it is not one."""
        if not isinstance(item, dict):
            raise ValueError(f"an outage is not an object: {item!r}")
        step, gaps, affected, cache = item.get("step"), item.get("gaps"), item.get("affected"), item.get("cache")
        number = (int, float)
        if (
            not isinstance(step, str)
            or not isinstance(gaps, dict)
            or not all(isinstance(k, str) and isinstance(v, number) for k, v in gaps.items())
            or not isinstance(affected, list)
            or not all(isinstance(name, str) and name in gaps for name in affected)
            or not (cache is None or isinstance(cache, number))
        ):
            raise ValueError(f"not an outage (step, gaps, affected, cache): {item!r}")
        return cls(
            step, {k: float(v) for k, v in gaps.items()}, tuple(affected), None if cache is None else float(cache)
        )
