"""The shipped alert rules on a faster clock, for a test that makes each fault and watches its alert fire and clear.

Every ``for:``, every range window (``[5m]``) and the one threshold counted in seconds
(``ShardDBNotSynced``'s two resync periods) are divided by one factor; nothing else changes, so the
expressions, labels and annotations are the shipped ones (``tests/shipped/test_monitoring.py``
holds this, and promtool checks the result).
"""

from __future__ import annotations

import copy
import re
from typing import Any

Obj = dict[str, Any]
FACTOR = 30
_UNIT = {"s": 1, "m": 60, "h": 3600}
_DURATION = re.compile(r"^(\d+)([smh])$")
_WINDOW = re.compile(r"\[(\d+)([smh])\]")
# Alerts whose expression ends in a number of seconds: the comparison is scaled with the clock.
_SECONDS_THRESHOLD = {"ShardDBNotSynced": re.compile(r"> (\d+)$")}


def seconds(duration: str) -> int:
    """A Prometheus duration of one unit (``15m``) in seconds."""
    found = _DURATION.match(duration)
    assert found, f"unexpected duration {duration!r}"
    return int(found[1]) * _UNIT[found[2]]


def _scaled(duration_seconds: int, factor: int) -> str:
    scaled = duration_seconds // factor
    assert scaled > 0, f"{duration_seconds}s is less than {factor}"
    assert scaled * factor == duration_seconds, f"{duration_seconds}s does not divide by {factor}"
    return f"{scaled}s"


def scaled(rules: Obj, factor: int = FACTOR) -> Obj:
    """``rules`` (a rules file, parsed) with its clock ``factor`` times faster."""
    out = copy.deepcopy(rules)
    for group in out["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = _scaled(seconds(rule["for"]), factor)
            expr = _WINDOW.sub(lambda m: f"[{_scaled(seconds(m[1] + m[2]), factor)}]", rule["expr"])
            threshold = _SECONDS_THRESHOLD.get(rule.get("alert", ""))
            if threshold is not None:
                expr = threshold.sub(lambda m: f"> {_scaled(int(m[1]), factor).removesuffix('s')}", expr.strip())
            rule["expr"] = expr
    return out
