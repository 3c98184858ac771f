"""Patroni's timing has one source, ``hooks/replication/config.py``: every page and the CRD state its figures.

The guide and the CRD's descriptions say how long Patroni's ``ttl``, its loop (``loop_wait``) and its
``retry_timeout`` are, in many places; a figure that drifts from the code's would have an on-call person
wait the wrong time. Patroni's own defaults (``30/10/10``) and figures derived from these (twice ``loop_wait``)
are not stated figures of ShardDB's timing, and are left alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from hooks.replication.config import LOOP_WAIT, RETRY_TIMEOUT, TTL

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), ROOT / "crds" / "sharddb.yaml"])
# What may stand between a name and its figure: backticks, brackets, commas, "=", "up to" and line breaks
# (a description in the CRD is wrapped), never a word.
GAP = r"(?:[\s`(),=]|up to|loop_wait)*"
TIMES = "\N{MULTIPLICATION SIGN}"
FIGURES = {
    # "`ttl` 20 s", "ttl=20", "`ttl` (20 s: ..."; not "ttl` (19 ≤ 20)", a sum compared with it
    "ttl": (re.compile(rf"\bttl{GAP}(\d+)(?![\d.]|\s*≤)"), TTL),
    # "a loop (5 s)", "one Patroni loop, 5 s", "(`loop_wait`, 5 s)", "loop_wait=5"; not twice it
    # ("2 x `loop_wait` (10 s)", with the multiplication sign), nor a time measured ("loop (7.1 s once)")
    "loop": (re.compile(rf"(?<!{TIMES} `)\bloop(?:_wait)?{GAP}(\d+)(?![\d.])"), LOOP_WAIT),
    # "`retry_timeout` 7 s", "retry_timeout=7"
    "retry_timeout": (re.compile(rf"\bretry_timeout{GAP}(\d+)(?![\d.])"), RETRY_TIMEOUT),
}


def stated() -> list[tuple[str, str, int, str]]:
    """Every figure a page states for Patroni's timing: (page:line, which, figure, the words around it)."""
    found = []
    for source in SOURCES:
        text = source.read_text()
        for which, (pattern, _) in FIGURES.items():
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                words = " ".join(text[max(0, match.start() - 40) : match.end() + 10].split())
                found.append((f"{source.relative_to(ROOT)}:{line}", which, int(match[1]), words))
    return found


def test_every_page_states_patronis_ttl_loop_and_retry_timeout_as_the_code_sets_them() -> None:
    found = stated()
    assert {which for _, which, _, _ in found} == set(FIGURES), "a pattern no longer finds the pages' figures"
    wrong = [(where, which, figure, words) for where, which, figure, words in found if figure != FIGURES[which][1]]
    assert not wrong, f"the code says ttl {TTL}, loop_wait {LOOP_WAIT}, retry_timeout {RETRY_TIMEOUT}; pages say:\n" + (
        "\n".join(f"{where}: {which} {figure} ({words})" for where, which, figure, words in wrong)
    )
