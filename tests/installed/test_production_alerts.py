"""Each shipped alert fires on the installed product when its fault is made, names what it is about, and clears once
the fault is undone.

The Prometheus is a real one (Debian's, the server of ``testbed.real.promtool``) run as a pod in the namespace
``monitoring``, as a user without the Operator runs it: the shipped ``prometheus/prometheus.yaml`` through the
monitoring components' headless Services, with the production token and CA copied beside it, and the shipped
rules. Its clock runs 30 times faster (``tests/support/alerts.py``): every ``for:``, range window and the
not-synced threshold, the scrape, and, so that threshold keeps its meaning, the CompositeController's resync
period. The faults are what a person or a cluster does: an image that cannot be pulled, a pod that will not go,
requests the hooks cannot read, a Secret rotated without the reload, Metacontroller stopped, the scrapes refused
for the scraper's old token, the members example's synchronous standby held away, then both its members. Two
alerts have no fault made from outside: ``ShardDBHooksFailing`` (5xx, a bug of the hooks) and
``ShardDBHooksSlow``; promtool's unit tests alone hold them. Of the replication alerts,
``ShardDBShardWithoutSyncStandby`` (the standby held away) and ``ShardDBShardWithoutPrimary`` (both members held
away) have their faults made here; promtool's unit tests and the service tier's live Prometheus hold the other two.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml

from hooks import names
from testbed.images import workloads
from testbed.real import promtool
from tools import monitoring

from ..support import alerts as fast_clock
from ..support.examples import example
from ..support.sharddbs import wait_until
from .installs import HOOKS_NAMESPACE, METACONTROLLER_NAMESPACE, Install, Obj
from .steps import ROOT, Step

NAMESPACE = "alerts"
MONITORING = "monitoring"  # the namespace the monitoring component's NetworkPolicy admits
MINIMAL = ROOT / "examples" / "sharddb-minimal.yaml"
MEMBERS = ROOT / "examples" / "sharddb-members.yaml"
COMPONENTS = ("monitoring", "monitoring-metacontroller")
SECRETS_DIR = "/etc/prometheus/secrets"
PROGRAM = "/opt/prometheus/prometheus"
RESYNC_SECONDS = 600  # the shipped CompositeController's resyncPeriodSeconds
# How long a phase waits for its alerts to fire, and then to clear (Kubernetes' own steps included).
FIRE_SECONDS = 300
CLEAR_SECONDS = 300
HOLD = "alerts.example.com/hold"  # a finalizer of the test's: the pod it holds cannot go
# Run in a hooks pod: a call to /sync with the token but a body no hook can read (a 4xx, counted client_error).
UNREADABLE = """
import os, ssl, urllib.error, urllib.request
token = open(os.environ["SHARDDB_AUTH_TOKEN_FILE"]).read().strip()
url = f"https://127.0.0.1:{os.environ['SHARDDB_PORT']}/sync"
headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
request = urllib.request.Request(url, data=b"{}", headers=headers, method="POST")
try:
    print(urllib.request.urlopen(request, context=ssl._create_unverified_context()).status)
except urllib.error.HTTPError as error:
    print(error.code)
"""
Sample = dict[str, Any]


def kustomization(folder: Path, *, with_overlay: bool) -> Path:
    """A user's own kustomization: the production overlay (or nothing) with the monitoring components."""
    folder.mkdir(parents=True, exist_ok=True)
    deploy = Path(os.path.relpath(ROOT / "metacontroller", folder))
    text: Obj = {"components": [str(deploy / "components" / name) for name in COMPONENTS]}
    if with_overlay:
        text["resources"] = [str(deploy / "overlays" / "production")]
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(text))
    return folder


def scrape_config() -> str:
    """The shipped plain configuration, its scrape and discovery on the same faster clock as the rules."""
    config: Obj = yaml.safe_load((monitoring.COMPONENT / "prometheus" / "prometheus.yaml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"}
    for job in config["scrape_configs"]:
        for discovery in job.get("dns_sd_configs", []):
            discovery["refresh_interval"] = "1s"
    return yaml.safe_dump(config)


def prometheus_pod(program: Path) -> Obj:
    """Debian's Prometheus, from the node's copy of the package's program, in a Debian bookworm test image."""
    mounts = [
        {"name": "program", "mountPath": PROGRAM, "readOnly": True},
        {"name": "config", "mountPath": "/etc/prometheus/config", "readOnly": True},
        {"name": "token", "mountPath": f"{SECRETS_DIR}/sharddb-hooks-token", "readOnly": True},
        {"name": "tls", "mountPath": f"{SECRETS_DIR}/sharddb-hooks-tls", "readOnly": True},
        {"name": "data", "mountPath": "/prometheus"},
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "prometheus", "namespace": MONITORING, "labels": {"app.kubernetes.io/name": "prometheus"}},
        "spec": {
            "containers": [
                {
                    "name": "prometheus",
                    "image": workloads.REDIS,
                    "command": [
                        PROGRAM,
                        "--config.file=/etc/prometheus/config/prometheus.yaml",
                        "--storage.tsdb.path=/prometheus",
                        "--web.listen-address=:9090",
                    ],
                    "ports": [{"name": "web", "containerPort": 9090}],
                    "volumeMounts": mounts,
                }
            ],
            "volumes": [
                {"name": "program", "hostPath": {"path": str(program), "type": "File"}},
                {"name": "config", "configMap": {"name": "prometheus"}},
                {"name": "token", "secret": {"secretName": "sharddb-hooks-token"}},
                {"name": "tls", "secret": {"secretName": "sharddb-hooks-tls"}},
                {"name": "data", "emptyDir": {}},
            ],
        },
    }


@dataclass
class Prometheus:
    """The pod's HTTP API, through the API server's proxy."""

    install: Install

    def query(self, promql: str) -> list[Sample]:
        path = f"/api/v1/namespaces/{MONITORING}/pods/prometheus:9090/proxy/api/v1/query?{urlencode({'query': promql})}"
        answer = json.loads(self.install.kubectl("get", "--raw", path))
        assert answer["status"] == "success", answer
        result: list[Sample] = answer["data"]["result"]
        return result

    def alerts(self, alertname: str, state: str | None = None) -> list[dict[str, str]]:
        """The labels of each ALERTS series of ``alertname`` (in ``state``, pending or firing, if given)."""
        chosen = f',alertstate="{state}"' if state else ""
        return [sample["metric"] for sample in self.query(f'ALERTS{{alertname="{alertname}"{chosen}}}')]


@dataclass(frozen=True)
class Expected:
    """An alert a fault should fire, the labels its series must carry, and how many such series at least."""

    alertname: str
    labels: dict[str, str] = field(default_factory=dict)
    series: int = 1

    def among(self, series: list[dict[str, str]]) -> list[dict[str, str]]:
        return [labels for labels in series if self.labels.items() <= labels.items()]


@dataclass
class Watched:
    """What the alerts of one fault did: the firing series seen (by alert), and whether each then cleared."""

    fired: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    cleared: dict[str, bool] = field(default_factory=dict)
    fired_after: dict[str, float] = field(default_factory=dict)
    # What Prometheus said of the fault's own series when the wait to fire ended: a failure's evidence.
    seen: dict[str, list[Sample]] = field(default_factory=dict)


def watch(
    prometheus: Prometheus,
    expected: list[Expected],
    make: Callable[[], None],
    undo: Callable[[], None],
    evidence: tuple[str, ...] = (),
) -> Watched:
    """Makes the fault, waits for every expected alert to fire, undoes it, waits for each to clear; records it all.

    Nothing is asserted here: each test reads its own alert's record, so one alert that never fires fails its test
    alone. The fault is always undone.
    """
    watched = Watched()
    began = time.monotonic()
    try:
        make()
        deadline = time.monotonic() + FIRE_SECONDS
        while time.monotonic() < deadline and len(watched.fired) < len(expected):
            for each in expected:
                if each.alertname in watched.fired:
                    continue
                found = each.among(prometheus.alerts(each.alertname, "firing"))
                if len(found) >= each.series:
                    watched.fired[each.alertname] = found
                    watched.fired_after[each.alertname] = time.monotonic() - began
            time.sleep(1)
        watched.seen = {query: prometheus.query(query) for query in evidence}
    finally:
        undo()
    deadline = time.monotonic() + CLEAR_SECONDS
    while time.monotonic() < deadline:
        watched.cleared = {each.alertname: not each.among(prometheus.alerts(each.alertname)) for each in expected}
        if all(watched.cleared.values()):
            break
        time.sleep(1)
    return watched


@pytest.fixture(scope="module")
def install(production: Install) -> Install:
    return production.settled()


@pytest.fixture(scope="module")
def prometheus(install: Install, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    """The components applied over the production overlay, the Secrets copied, the pod up and scraping every
    hooks replica and Metacontroller, and the CompositeController's resync on the same faster clock."""
    folder = tmp_path_factory.mktemp("monitoring")
    user = kustomization(folder / "user", with_overlay=True)
    install.kubectl("apply", "-k", str(user))
    for namespace in (MONITORING, NAMESPACE):
        install.kubectl("create", "namespace", namespace)
    token = install.get("secret", "-n", HOOKS_NAMESPACE, "sharddb-hooks-token")["data"]["token"]
    ca = install.get("secret", "-n", HOOKS_NAMESPACE, "sharddb-hooks-tls")["data"]["ca.crt"]
    copies = [
        secret(MONITORING, "sharddb-hooks-token", {"token": token}),
        secret(MONITORING, "sharddb-hooks-tls", {"ca.crt": ca}),
    ]
    rules = yaml.safe_dump(fast_clock.scaled(yaml.safe_load(monitoring.RULES.read_text())))
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "prometheus", "namespace": MONITORING},
        "data": {"prometheus.yaml": scrape_config(), "rules.yaml": rules},
    }
    pod = prometheus_pod(promtool.prometheus())
    install.kubectl(
        "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [*copies, config_map, pod]})
    )
    resync(install, RESYNC_SECONDS // fast_clock.FACTOR)
    found = Prometheus(install)
    try:
        install.kubectl("wait", "-n", MONITORING, "pod/prometheus", "--for=condition=Ready", "--timeout=120s")
        wait_until("every hooks replica and Metacontroller scraped", lambda: scraping_everything(found), 120, every=1)
        yield found
    finally:
        resync(install, RESYNC_SECONDS)
        install.kubectl("delete", "namespace", NAMESPACE, MONITORING, "--wait", "--timeout=5m", check=False)
        components = kustomization(folder / "components", with_overlay=False)
        install.kubectl("delete", "-k", str(components), "--ignore-not-found", check=False)


def scraping_everything(prometheus: Prometheus) -> bool:
    hooks = prometheus.query('up{job="sharddb-hooks"} == 1')
    controller = prometheus.query('up{job="metacontroller"} == 1')
    return len(hooks) == 3 and len(controller) == 1


def secret(namespace: str, name: str, data: dict[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "data": data}


def resync(install: Install, seconds: int) -> None:
    """The ShardDB CompositeController's resync period (a spec change: Metacontroller rebuilds its controller)."""
    patch = json.dumps({"spec": {"resyncPeriodSeconds": seconds}})
    install.kubectl("patch", "compositecontroller", "sharddb", "--type=merge", "-p", patch)


def apply_minimal(install: Install, name: str, **spec: Any) -> None:
    documents = example(name, NAMESPACE, MINIMAL)
    documents[-1]["spec"].update(spec)
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(documents))


def available(install: Install, name: str) -> None:
    wait_until(f"{name} Available", lambda: install.available(NAMESPACE, name), 300, every=1)


def in_a_hooks_pod(install: Install, script: str) -> str:
    pod = install.hooks_pods()[0]["metadata"]["name"]
    command = ("exec", "-n", HOOKS_NAMESPACE, pod, "-c", "hooks", "--", "python", "-c", script)
    return install.kubectl(*command)


# --- the faults, each with the alerts it must fire --------------------------------------------------------------


@pytest.fixture(scope="module")
def sharddb_faults(install: Install, prometheus: Prometheus) -> Watched:
    """Three at once, on two ShardDBs and the hooks: a cache image that cannot be pulled (not Available, Degraded),
    a deletion held by a cache pod that will not go, and requests no hook can read."""
    apply_minimal(install, "stuck")
    available(install, "stuck")
    stop = threading.Event()
    answers: list[str] = []

    def unreadable_requests() -> None:
        while not stop.wait(3):
            answers.append(in_a_hooks_pod(install, UNREADABLE).strip())

    sender = threading.Thread(target=unreadable_requests, daemon=True)
    cache = "app.kubernetes.io/instance=stuck,app.kubernetes.io/component=cache"

    def make() -> None:
        apply_minimal(install, "unready", podStartGraceSeconds=10, cache={"image": f"{workloads.REDIS}-absent"})
        for pod in install.pods(NAMESPACE, cache):
            hold = json.dumps({"metadata": {"finalizers": [HOLD]}})
            install.kubectl("patch", "pod", "-n", NAMESPACE, pod["metadata"]["name"], "--type=merge", "-p", hold)
        install.kubectl("delete", "sharddb", "-n", NAMESPACE, "stuck", "--wait=false")
        sender.start()

    def undo() -> None:
        stop.set()
        sender.join(timeout=30)
        patch = json.dumps({"spec": {"cache": {"image": workloads.REDIS}}})
        install.kubectl("patch", "sharddb", "-n", NAMESPACE, "unready", "--type=merge", "-p", patch)
        for pod in install.pods(NAMESPACE, cache):
            name = pod["metadata"]["name"]
            kept = [each for each in pod["metadata"].get("finalizers", []) if each != HOLD]
            release = json.dumps({"metadata": {"finalizers": kept or None}})
            install.kubectl("patch", "pod", "-n", NAMESPACE, name, "--type=merge", "-p", release)

    expected = [
        Expected("ShardDBNotAvailable", {"namespace": NAMESPACE, "name": "unready"}),
        Expected("ShardDBDegraded", {"namespace": NAMESPACE, "name": "unready"}),
        Expected("ShardDBDeletionStalled", {"namespace": NAMESPACE, "name": "stuck"}),
        Expected("ShardDBHookRefusesARequest", {"hook": "sync"}),
    ]
    watched = watch(prometheus, expected, make, undo)
    assert answers, "no unreadable request was sent"
    assert set(answers) <= {"400", "422"}, f"the unreadable requests were answered {sorted(set(answers))}"
    available(install, "unready")
    return watched


@pytest.fixture(scope="module")
def token_fault(install: Install, prometheus: Prometheus, sharddb_faults: Watched) -> Watched:
    """The hooks' Secret rotated without the reload: Metacontroller keeps sending the token it read at its start.
    The Prometheus's copy takes the new token too, so it goes on scraping."""
    del sharddb_faults  # after those: one fault at a time
    old = install.get("secret", "-n", HOOKS_NAMESPACE, "sharddb-hooks-token")["data"]["token"]
    new = secrets.token_hex(32)
    stop = threading.Event()

    def changes() -> None:
        grace = 20
        while not stop.wait(2):
            grace += 1
            patch = json.dumps({"spec": {"podStartGraceSeconds": grace}})
            install.kubectl("patch", "sharddb", "-n", NAMESPACE, "unready", "--type=merge", "-p", patch)

    changer = threading.Thread(target=changes, daemon=True)

    def make() -> None:
        for namespace in (HOOKS_NAMESPACE, MONITORING):
            create = ("create", "secret", "generic", "sharddb-hooks-token", f"--from-literal=token={new}")
            manifest = install.kubectl("-n", namespace, *create, "--dry-run=client", "-o", "yaml")
            install.kubectl("apply", "-f", "-", stdin=manifest)
        changer.start()

    def undo() -> None:
        install.run(Step("reload", "tools/kubectl-sharddb-reload\n"))
        stop.set()
        changer.join(timeout=30)

    evidence = (
        'sharddb_hook_calls_total{outcome="unauthorized"}',
        'up{job="sharddb-hooks"}',
        'sum by (hook) (rate(sharddb_hook_calls_total{outcome="unauthorized"}[10s]))',
        '{__name__=~"metacontroller_.*_requests_total"}',
    )
    # Each change is a new generation, so Metacontroller asks customize first: that is the hook that refuses.
    expected = [Expected("ShardDBHooksRefuseTheToken")]
    watched = watch(prometheus, expected, make, undo, evidence)
    assert old != new
    return watched


@pytest.fixture(scope="module")
def metacontroller_fault(install: Install, prometheus: Prometheus, token_fault: Watched) -> Watched:
    """Metacontroller stopped: nothing calls the hooks, so every ShardDB's last sync ages."""
    del token_fault  # after it: one fault at a time
    scale = ("-n", METACONTROLLER_NAMESPACE, "scale", "statefulset", "metacontroller")

    def make() -> None:
        install.kubectl(*scale, "--replicas=0")

    def undo() -> None:
        install.kubectl(*scale, "--replicas=1")
        install.kubectl(
            "-n", METACONTROLLER_NAMESPACE, "rollout", "status", "statefulset/metacontroller", "--timeout=5m"
        )

    expected = [
        Expected("ShardDBMetacontrollerDown"),
        Expected("ShardDBNotSynced", {"namespace": NAMESPACE, "name": "unready"}),
    ]
    return watch(prometheus, expected, make, undo)


@pytest.fixture(scope="module")
def scrape_fault(install: Install, prometheus: Prometheus, metacontroller_fault: Watched) -> Watched:
    """The Prometheus's copy of the token out of date (a rotation that forgot the scraper): every replica answers
    its scrapes with 401, so each reads ``up == 0``.

    Not the NetworkPolicy: deleting the monitoring component's policy leaves a scraper that is already connected
    scraping, since the policy agent lets established connections go on, and Prometheus keeps its connection to
    each replica open between scrapes (seen here: all three up for minutes after the delete)."""
    del metacontroller_fault  # after it: one fault at a time
    token = install.get("secret", "-n", MONITORING, "sharddb-hooks-token")["data"]["token"]

    def copy(data: str) -> None:
        manifest = json.dumps(secret(MONITORING, "sharddb-hooks-token", {"token": data}))
        install.kubectl("apply", "-f", "-", stdin=manifest)

    def make() -> None:
        copy(base64.b64encode(secrets.token_hex(32).encode()).decode())

    expected = [Expected("ShardDBHooksDown"), Expected("ShardDBHooksReplicaDown", {"job": "sharddb-hooks"}, series=3)]
    return watch(prometheus, expected, make, lambda: copy(token))


@pytest.fixture(scope="module")
def replication_fault(install: Install, prometheus: Prometheus, scrape_fault: Watched) -> Watched:
    """``examples/sharddb-members.yaml`` (one shard, a primary and its synchronous standby), its standby stopped and
    held: its pod deleted but kept by a finalizer, so its StatefulSet cannot make it again. The primary commits on
    one copy until the hold is released and a new standby streams."""
    del scrape_fault  # after it: one fault at a time
    install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(example("ha", NAMESPACE, MEMBERS)))
    available(install, "ha")
    selector = f"app.kubernetes.io/instance=ha,app.kubernetes.io/component=db,{names.ROLE_LABEL}=replica"
    (standby,) = [pod["metadata"]["name"] for pod in install.pods(NAMESPACE, selector)]

    def make() -> None:
        hold = json.dumps({"metadata": {"finalizers": [HOLD]}})
        install.kubectl("patch", "pod", "-n", NAMESPACE, standby, "--type=merge", "-p", hold)
        install.kubectl("delete", "pod", "-n", NAMESPACE, standby, "--wait=false")

    def undo() -> None:
        release = json.dumps({"metadata": {"finalizers": None}})
        install.kubectl("patch", "pod", "-n", NAMESPACE, standby, "--type=merge", "-p", release)

    expected = [Expected("ShardDBShardWithoutSyncStandby", {"namespace": NAMESPACE, "name": "ha"})]
    return watch(prometheus, expected, make, undo, evidence=('sharddb:shard_health{name="ha"}',))


@pytest.fixture(scope="module")
def no_primary_fault(install: Install, prometheus: Prometheus, replication_fault: Watched) -> Watched:
    """Both members of the example's shard deleted and held: no member runs, so no write reaches the shard, until the
    holds are released and Patroni elects a primary again from the members' kept volumes."""
    del replication_fault  # after it: one fault at a time
    available(install, "ha")
    members = [
        pod["metadata"]["name"]
        for pod in install.pods(NAMESPACE, "app.kubernetes.io/instance=ha,app.kubernetes.io/component=db")
    ]
    assert len(members) == 2, members

    def make() -> None:
        hold = json.dumps({"metadata": {"finalizers": [HOLD]}})
        for pod in members:
            install.kubectl("patch", "pod", "-n", NAMESPACE, pod, "--type=merge", "-p", hold)
        install.kubectl("delete", "pod", "-n", NAMESPACE, *members, "--wait=false")

    def undo() -> None:
        release = json.dumps({"metadata": {"finalizers": None}})
        for pod in members:
            install.kubectl("patch", "pod", "-n", NAMESPACE, pod, "--type=merge", "-p", release)

    expected = [Expected("ShardDBShardWithoutPrimary", {"namespace": NAMESPACE, "name": "ha"})]
    return watch(prometheus, expected, make, undo, evidence=('sharddb:shard_health{name="ha"}',))


# --- each alert: fired, named what it is about, cleared ----------------------------------------------------------


def fired_and_cleared(watched: Watched, alertname: str) -> list[dict[str, str]]:
    assert alertname in watched.fired, f"{alertname} never fired within {FIRE_SECONDS} s: {watched}"
    assert watched.cleared.get(alertname), (
        f"{alertname} still pending or firing {CLEAR_SECONDS} s after the fault was undone"
    )
    return watched.fired[alertname]


def test_a_sharddb_whose_cache_cannot_start_fires_not_available_naming_it_and_clears(sharddb_faults: Watched) -> None:
    (labels,) = fired_and_cleared(sharddb_faults, "ShardDBNotAvailable")
    assert (labels["namespace"], labels["name"], labels["severity"]) == (NAMESPACE, "unready", "critical")


def test_a_sharddb_whose_cache_cannot_start_fires_degraded_with_its_reason_and_clears(sharddb_faults: Watched) -> None:
    (labels,) = fired_and_cleared(sharddb_faults, "ShardDBDegraded")
    assert (labels["name"], labels["reason"]) == ("unready", "CachePodsFailing")


def test_a_deletion_held_by_a_cache_pod_fires_deletion_stalled_and_clears_once_it_goes(sharddb_faults: Watched) -> None:
    (labels,) = fired_and_cleared(sharddb_faults, "ShardDBDeletionStalled")
    assert (labels["namespace"], labels["name"]) == (NAMESPACE, "stuck")


def test_requests_no_hook_can_read_fire_refuses_a_request_and_clear(sharddb_faults: Watched) -> None:
    (labels,) = fired_and_cleared(sharddb_faults, "ShardDBHookRefusesARequest")
    assert labels["hook"] == "sync"


def test_a_secret_rotated_without_the_reload_fires_refuse_the_token_and_clears_after_the_reload(
    token_fault: Watched,
) -> None:
    series = fired_and_cleared(token_fault, "ShardDBHooksRefuseTheToken")
    assert {labels["hook"] for labels in series} <= {"customize", "sync", "finalize"}
    assert {labels["severity"] for labels in series} == {"critical"}


def test_metacontroller_stopped_fires_metacontroller_down_and_clears(metacontroller_fault: Watched) -> None:
    fired_and_cleared(metacontroller_fault, "ShardDBMetacontrollerDown")


def test_metacontroller_stopped_fires_not_synced_for_each_sharddb_and_clears(metacontroller_fault: Watched) -> None:
    (labels,) = fired_and_cleared(metacontroller_fault, "ShardDBNotSynced")
    assert (labels["namespace"], labels["name"]) == (NAMESPACE, "unready")


def test_scrapes_refused_for_an_old_token_fire_hooks_down_and_clear(scrape_fault: Watched) -> None:
    fired_and_cleared(scrape_fault, "ShardDBHooksDown")


def test_scrapes_refused_for_an_old_token_fire_replica_down_for_every_replica_and_clear(
    scrape_fault: Watched,
) -> None:
    series = fired_and_cleared(scrape_fault, "ShardDBHooksReplicaDown")
    assert len({labels["instance"] for labels in series}) == 3


def test_a_standby_held_away_fires_without_sync_standby_naming_the_shard_and_clears_once_it_streams(
    replication_fault: Watched,
) -> None:
    (labels,) = fired_and_cleared(replication_fault, "ShardDBShardWithoutSyncStandby")
    assert (labels["name"], labels["shard"], labels["severity"]) == ("ha", "0", "warning")


def test_both_members_held_away_fire_without_primary_naming_the_shard_and_clear_once_one_leads(
    no_primary_fault: Watched,
) -> None:
    (labels,) = fired_and_cleared(no_primary_fault, "ShardDBShardWithoutPrimary")
    assert (labels["name"], labels["shard"], labels["severity"]) == ("ha", "0", "critical")
