"""The alert rules, shipped twice from one source, run by a real promtool; and the scrapes that feed them.

``prometheus/rules.yaml`` is the source: a Prometheus without the Operator loads it, the
PrometheusRule carries it for the Operator, and promtool checks and unit-tests it here (every
alert firing, and quiet where it must be). promtool comes from Debian's ``prometheus`` package
(``testbed.real.promtool``); a machine without it fails these tests saying how to get it.
The scrape examples are held to the manifests they scrape, so a renamed port or Secret fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import kubernetes_validate
import pytest
import yaml
from fastapi.testclient import TestClient

from hooks.service.app import create_app
from testbed.models.world import World, bring_up, sharddb, tear_down
from testbed.real import promtool
from tools import monitoring

from ..support import alerts as fast_clock
from ..support import replication as with_members
from ..support.backups import RUNS_WITH_ONE_GOING, STORE, cronjob_recording
from ..support.crds import one
from ..support.hook import over_http
from ..support.manifests import DEPLOY, HOOK_NAMESPACE, HOOK_SERVICE, KUBERNETES_VERSION, container, render, webhooks
from ..support.prerequisites import Prerequisite

Obj = dict[str, Any]
COMPONENT = monitoring.COMPONENT
PROMETHEUS = COMPONENT / "prometheus"
RULES = yaml.safe_load(monitoring.RULES.read_text())
UNIT_TESTS = PROMETHEUS / "rules.test.yaml"
SCRAPE = PROMETHEUS / "prometheus.yaml"
SECRETS = "/etc/prometheus/secrets/"
PROMTOOL = Prerequisite("promtool", promtool.promtool, promtool.PromtoolMissingError)


def run_promtool(*args: str, cwd: Path = PROMETHEUS) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PROMTOOL.get()), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@cache
def served_metrics() -> str:
    """What the hooks serve once one ShardDB is up, another finalized and a third runs members and backs up, a base
    backup going: every series the rules read."""
    with TestClient(create_app()) as client:
        bring_up(World(sharddb("shop")), over_http(client))
        tear_down(World(sharddb("gone")), over_http(client))
        running = with_members.stages()["running"]
        marks = [
            *with_members.healthy(),
            *[with_members.sync_record(shard) for shard in range(2)],
            with_members.member_pod(0, 2, None, streaming=False),
        ]
        members = with_members.parent({"backup": {"objectStore": STORE}}, members_count=3)
        children = with_members.applied(running["children"])
        children["CronJob.batch/v1"] = {"demo-backup": cronjob_recording(RUNS_WITH_ONE_GOING)}
        over_http(client)(with_members.request(members, children, marks), False)
        text: str = client.get("/metrics").text
        return text


def rules() -> Iterator[Obj]:
    for group in RULES["groups"]:
        yield from group["rules"]


def alerts() -> list[str]:
    return [rule["alert"] for rule in rules() if "alert" in rule]


def unit_cases() -> list[Obj]:
    cases: list[Obj] = [
        case for test in yaml.safe_load(UNIT_TESTS.read_text())["tests"] for case in test.get("alert_rule_test", [])
    ]
    return cases


# --- one source, shipped twice ----------------------------------------------------------------


def test_the_prometheusrule_carries_the_plain_rules_file_as_it_is() -> None:
    shipped = yaml.safe_load(monitoring.PROMETHEUS_RULE.read_text())
    assert shipped["spec"] == RULES


def test_the_committed_prometheusrule_is_what_the_tool_makes_of_the_rules_file() -> None:
    """So a hand edit of the PrometheusRule (which would drift from what promtool tested) fails too."""
    assert monitoring.PROMETHEUS_RULE.read_text() == monitoring.rendered()


# --- promtool ---------------------------------------------------------------------------------


def test_promtool_checks_the_rules_file() -> None:
    done = run_promtool("check", "rules", "rules.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(list(rules()))} rules found" in done.stdout


def test_promtool_passes_the_rules_unit_tests() -> None:
    done = run_promtool("test", "rules", UNIT_TESTS.name)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("alert", alerts())
def test_each_alert_is_unit_tested_firing(alert: str) -> None:
    assert any(case["alertname"] == alert and case.get("exp_alerts") for case in unit_cases())


@pytest.mark.parametrize("alert", alerts())
def test_each_alert_is_unit_tested_quiet(alert: str) -> None:
    assert any(case["alertname"] == alert and not case.get("exp_alerts") for case in unit_cases())


def test_the_rules_on_a_faster_clock_differ_only_in_their_durations() -> None:
    """The installed tier watches these fire and clear; what they prove of the shipped rules rests on this."""
    fast = fast_clock.scaled(RULES)
    shipped_rules = [rule for group in RULES["groups"] for rule in group["rules"]]
    fast_rules = [rule for group in fast["groups"] for rule in group["rules"]]
    assert len(fast_rules) == len(shipped_rules)
    for shipped, quick in zip(shipped_rules, fast_rules, strict=True):
        assert {k: v for k, v in quick.items() if k not in ("for", "expr")} == {
            k: v for k, v in shipped.items() if k not in ("for", "expr")
        }
        if "for" in shipped:
            assert fast_clock.seconds(quick["for"]) * fast_clock.FACTOR == fast_clock.seconds(shipped["for"])
        words = re.compile(r"\[\d+[smh]\]|\d+")
        assert words.sub("N", quick["expr"]) == words.sub("N", shipped["expr"].strip()), shipped.get("alert")
    (not_synced,) = [rule for rule in fast_rules if rule.get("alert") == "ShardDBNotSynced"]
    assert not_synced["expr"].endswith(f"> {1200 // fast_clock.FACTOR}")


def test_promtool_checks_the_rules_on_a_faster_clock(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(fast_clock.scaled(RULES)))
    done = run_promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_scrape_example_is_a_valid_prometheus_config(tmp_path: Path) -> None:
    """promtool wants the token and CA files to exist: they are made under tmp_path, where the config points."""
    text = SCRAPE.read_text()
    assert SECRETS in text
    for relative in re.findall(rf"{re.escape(SECRETS)}(\S+)", text):
        (tmp_path / "secrets" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "secrets" / relative).write_text("placeholder\n")
    (tmp_path / "prometheus.yaml").write_text(text.replace(SECRETS, f"{tmp_path}/secrets/"))
    (tmp_path / "rules.yaml").write_text(monitoring.RULES.read_text())
    done = run_promtool("check", "config", "prometheus.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


# --- the rules read what the hooks serve --------------------------------------------------------


def test_every_metric_the_rules_read_is_one_the_hooks_serve() -> None:
    named = {name for rule in rules() for name in re.findall(r"\bsharddb_\w+", rule["expr"])}
    exported = set(re.findall(r"^(sharddb_\w+?)(?:\{| )", served_metrics(), re.M))
    assert named
    assert named <= exported, named - exported


def test_the_unit_tests_feed_the_labels_the_hooks_serve() -> None:
    """A series in rules.test.yaml with a label the hooks do not serve would test rules against nothing real."""
    served = {
        name: set(re.findall(r'(\w+)="', labels))
        for name, labels in re.findall(r"^(sharddb_\w+)\{(.*)\} ", served_metrics(), re.M)
    }
    fed = [
        (name, set(re.findall(r'(\w+)="', labels)) - {"job", "instance"})
        for test in yaml.safe_load(UNIT_TESTS.read_text())["tests"]
        for series in test["input_series"]
        for name, labels in re.findall(r"^(sharddb_\w+)\{(.*)\}$", series["series"])
    ]
    assert fed
    assert [(name, labels) for name, labels in fed if served.get(name) != labels] == []


# --- the scrapes, against the manifests they scrape -----------------------------------------------


def monitored(tmp_path: Path) -> list[Obj]:
    """The production overlay with every monitoring component, as a user with the Operator would compose it."""
    relative = Path(os.path.relpath(DEPLOY, tmp_path))
    kustomization = {
        "resources": [str(relative / "overlays" / "production")],
        "components": [
            str(relative / "components" / name)
            for name in ("monitoring", "monitoring-metacontroller", "monitoring-operator")
        ],
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return render(tmp_path)


@pytest.fixture(scope="module")
def objs(tmp_path_factory: pytest.TempPathFactory) -> list[Obj]:
    return monitored(tmp_path_factory.mktemp("monitored"))


def scrape_jobs() -> dict[str, Obj]:
    return {job["job_name"]: job for job in yaml.safe_load(SCRAPE.read_text())["scrape_configs"]}


def test_the_monitoring_component_needs_no_operator(tmp_path: Path) -> None:
    """Without the Prometheus Operator's CRDs, kubectl apply refuses its kinds: they live in monitoring-operator."""
    relative = Path(os.path.relpath(DEPLOY, tmp_path))
    kustomization = {
        "resources": [str(relative / "overlays" / "production")],
        "components": [str(relative / "components" / "monitoring")],
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    assert not [o["kind"] for o in render(tmp_path) if o["apiVersion"].startswith("monitoring.coreos.com/")]


def test_the_jobs_are_the_ones_the_rules_name(objs: list[Obj]) -> None:
    named = {job for rule in rules() for job in re.findall(r'job="([^"]+)"', rule["expr"])}
    by_monitor = {
        o["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] for o in objs if o["kind"] == "ServiceMonitor"
    }
    assert named == set(scrape_jobs()) == by_monitor


def test_the_servicemonitor_sends_the_token_and_trusts_the_ca_production_mounts(objs: list[Obj]) -> None:
    endpoint = one(objs, "ServiceMonitor", HOOK_SERVICE)["spec"]["endpoints"][0]
    volumes = one(objs, "Deployment", HOOK_SERVICE)["spec"]["template"]["spec"]["volumes"]
    mounted = {volume["secret"]["secretName"] for volume in volumes if "secret" in volume} | {
        source["secret"]["name"]
        for volume in volumes
        for source in volume.get("projected", {}).get("sources", [])
        if "secret" in source
    }
    assert {endpoint["authorization"]["credentials"]["name"], endpoint["tlsConfig"]["ca"]["secret"]["name"]} <= mounted


def test_both_scrapes_verify_the_name_metacontroller_calls(objs: list[Obj]) -> None:
    """The certificate is for the Service's name; the scrapes reach pod addresses, so they must name it."""
    called = {urlparse(hook["url"]).hostname for hook in webhooks(objs).values()}
    endpoint = one(objs, "ServiceMonitor", HOOK_SERVICE)["spec"]["endpoints"][0]
    assert {endpoint["tlsConfig"]["serverName"], scrape_jobs()["sharddb-hooks"]["tls_config"]["server_name"]} == called


def test_the_servicemonitor_selects_the_headless_service_of_every_replica(objs: list[Obj]) -> None:
    monitor = one(objs, "ServiceMonitor", HOOK_SERVICE)["spec"]
    services = [
        o
        for o in objs
        if o["kind"] == "Service"
        and o["metadata"]["namespace"] in monitor["namespaceSelector"]["matchNames"]
        and monitor["selector"]["matchLabels"].items() <= o["metadata"]["labels"].items()
    ]
    assert [(s["metadata"]["name"], s["spec"]["clusterIP"]) for s in services] == [("sharddb-hooks-metrics", "None")]
    assert monitor["endpoints"][0]["port"] in {port["name"] for port in services[0]["spec"]["ports"]}


def test_the_plain_scrape_resolves_the_headless_service_on_the_hooks_port(objs: list[Obj]) -> None:
    headless = one(objs, "Service", "sharddb-hooks-metrics")
    (sd,) = scrape_jobs()["sharddb-hooks"]["dns_sd_configs"]
    assert sd["names"] == [f"sharddb-hooks-metrics.{HOOK_NAMESPACE}.svc"]
    port = next(p for p in container(objs)["ports"] if p["name"] == headless["spec"]["ports"][0]["targetPort"])
    assert sd["port"] == port["containerPort"] == headless["spec"]["ports"][0]["port"]


def test_the_plain_scrape_of_metacontroller_resolves_a_service_the_components_make(objs: list[Obj]) -> None:
    made = {f"{o['metadata']['name']}.{o['metadata']['namespace']}.svc" for o in objs if o["kind"] == "Service"}
    (sd,) = scrape_jobs()["metacontroller"]["dns_sd_configs"]
    assert set(sd["names"]) <= made


def test_the_components_builtin_objects_pass_the_kubernetes_schema_strictly(objs: list[Obj]) -> None:
    made = [o for o in objs if o["metadata"]["name"].endswith("-metrics")]
    assert {o["kind"] for o in made} == {"Service", "NetworkPolicy"}
    for obj in made:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_the_scraper_is_admitted_to_the_hooks_port(objs: list[Obj]) -> None:
    policy = one(objs, "NetworkPolicy", "sharddb-hooks-metrics")["spec"]
    ports = {p["name"] for p in container(objs)["ports"]}
    assert {p["port"] for rule in policy["ingress"] for p in rule["ports"]} <= ports
