"""The resync period and client budget every shipped overlay and partition carries: the specification.

Chosen from ``make bench-latency`` (docs/operating/write-budgets.md). ``tests/shipped/test_budget.py``
holds the rendered manifests and the guide to these values; the end-to-end partitions stack and the
change-latency benchmark's tests run at them.
"""

from __future__ import annotations

RESYNC_SECONDS = 600
QPS = 50
BURST = 100
