"""The PrometheusRule of the monitoring-operator component, made from the plain rules file: one source, shipped twice.

``prometheus/rules.yaml`` is what a Prometheus without the Operator loads and what promtool
tests; the PrometheusRule carries the same groups for the Operator. ``python -m tools.monitoring``
writes it; ``--check`` exits 1 when the committed one differs (tests/shipped/test_monitoring.py holds the
two equal too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPONENT = ROOT / "metacontroller" / "components" / "monitoring"
OPERATOR_COMPONENT = ROOT / "metacontroller" / "components" / "monitoring-operator"
RULES = COMPONENT / "prometheus" / "rules.yaml"
PROMETHEUS_RULE = OPERATOR_COMPONENT / "prometheusrule.yaml"
HEADER = (
    "# Made from ../monitoring/prometheus/rules.yaml by `python -m tools.monitoring`: edit that file, then run it.\n"
    "# The Prometheus Operator's Prometheus loads it when its ruleSelector selects these labels.\n"
)


def prometheus_rule(rules: dict[str, Any]) -> dict[str, Any]:
    """The PrometheusRule whose spec is the rules file's content, as it is."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "sharddb",
            "namespace": "sharddb-system",
            "labels": {"app.kubernetes.io/name": "sharddb-hooks", "app.kubernetes.io/component": "metrics"},
        },
        "spec": rules,
    }


def rendered(rules_file: Path = RULES) -> str:
    rules = yaml.safe_load(rules_file.read_text())
    return HEADER + yaml.safe_dump(prometheus_rule(rules), sort_keys=False, width=1000, allow_unicode=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed PrometheusRule differs")
    args = parser.parse_args(argv)
    text = rendered()
    if args.check:
        if PROMETHEUS_RULE.read_text() != text:
            shipped, source = PROMETHEUS_RULE.relative_to(ROOT), RULES.relative_to(ROOT)
            print(f"{shipped} differs from {source}: run python -m tools.monitoring")
            return 1
        return 0
    PROMETHEUS_RULE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
