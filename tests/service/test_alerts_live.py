"""The shipped rules on a real Prometheus, scraping two real hooks replicas with the token and TLS.

promtool's unit tests feed the rules series written by hand; here the series are the ones the
hooks serve, scraped as the shipped plain configuration scrapes them (its job, with static targets
for its DNS names): the recorded view of a ShardDB is the freshest replica's, a finalize on one
replica outweighs another replica's older view, and an alert names its ShardDB. The Prometheus is
the one in Debian's package, as promtool is (``testbed.real.promtool``).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from hooks import names
from testbed.models.world import World, bring_up, sharddb, step, tear_down
from testbed.real import promtool
from testbed.real.server import free_port, serve, spawn
from tools import monitoring

from ..support import replication as with_members
from ..support.hook import over_http
from ..support.pki import issue
from ..support.prerequisites import Prerequisite

SCRAPE = monitoring.COMPONENT / "prometheus" / "prometheus.yaml"

pytestmark = pytest.mark.http
TOKEN = "metrics-token"
PROMETHEUS = Prerequisite("prometheus", promtool.prometheus, promtool.PromtoolMissingError)
Sample = dict[str, Any]


@dataclass(frozen=True)
class Monitored:
    replicas: tuple[httpx.Client, httpx.Client]
    prometheus: str

    def query(self, promql: str) -> list[Sample]:
        answer = httpx.get(f"{self.prometheus}/api/v1/query", params={"query": promql}, timeout=5).json()
        assert answer["status"] == "success", answer
        result: list[Sample] = answer["data"]["result"]
        return result

    def eventually(self, promql: str, check: Callable[[list[Sample]], bool], timeout: float = 30.0) -> list[Sample]:
        """Scrapes and evaluations run every second: wait for a few of them."""
        deadline = time.monotonic() + timeout
        while not check(found := self.query(promql)):
            assert time.monotonic() < deadline, f"{promql}: {found}"
            time.sleep(0.5)
        return found


def scrape_job(targets: list[str], token: Path, ca: Path) -> dict[str, Any]:
    """The shipped sharddb-hooks job, with these targets for its DNS names and these files for its Secrets."""
    job: dict[str, Any] = next(
        j for j in yaml.safe_load(SCRAPE.read_text())["scrape_configs"] if j["job_name"] == "sharddb-hooks"
    )
    del job["dns_sd_configs"]
    job["static_configs"] = [{"targets": targets, "labels": {"namespace": "sharddb-system"}}]
    job["authorization"]["credentials_file"] = str(token)
    job["tls_config"]["ca_file"] = str(ca)
    return job


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Monitored]:
    folder = tmp_path_factory.mktemp("prometheus")
    pki = issue(folder / "pki", "monitoring test CA")
    token = folder / "token"
    token.write_text(TOKEN)
    env = {
        "SHARDDB_TLS_CERT_FILE": str(pki.cert),
        "SHARDDB_TLS_KEY_FILE": str(pki.key),
        "SHARDDB_AUTH_TOKEN_FILE": str(token),
        "SHARDDB_METRICS_AUTH": "true",
    }
    with serve(env, scheme="https") as a, serve(env, scheme="https") as b:
        targets = [base.removeprefix("https://") for base in (a, b)]
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(monitoring.RULES)],
            "scrape_configs": [scrape_job(targets, token, pki.ca)],
        }
        (folder / "prometheus.yaml").write_text(yaml.safe_dump(config))
        port = free_port()
        args = [
            str(PROMETHEUS.get()),
            f"--config.file={folder / 'prometheus.yaml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        with (folder / "prometheus.log").open("wb") as log:
            process = spawn(args, stdout=log, stderr=log)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        trust = ssl.create_default_context(cafile=str(pki.ca))
        clients = tuple(httpx.Client(base_url=base, verify=trust, headers=headers, timeout=5) for base in (a, b))
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while not _ready(url):
                assert process.poll() is None, (folder / "prometheus.log").read_text()
                assert time.monotonic() < deadline, (folder / "prometheus.log").read_text()
                time.sleep(0.2)
            yield Monitored((clients[0], clients[1]), url)
        finally:
            for client in clients:
                client.close()
            process.terminate()
            process.wait(timeout=30)


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/-/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def new_sharddb(name: str) -> dict[str, Any]:
    """A ShardDB created now, as the live replicas' real clock sees a new one.

    The model's fixed creation time lies months before that clock, so its first answer would find the
    children it just asked for missing past their grace (ChildrenMissing), and a scrape between two
    rounds of a bring-up would make that a pending alert for a moment.
    """
    parent = sharddb(name, namespace="prod")
    parent["metadata"]["creationTimestamp"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return parent


def of(name: str, samples: list[Sample]) -> list[Sample]:
    return [sample["metric"] for sample in samples if sample["metric"].get("name") == name]


def test_prometheus_scrapes_every_replica_with_the_token_and_tls(monitored: Monitored) -> None:
    up = monitored.eventually('up{job="sharddb-hooks"} == 1', lambda found: len(found) == 2)
    assert sorted(sample["value"][1] for sample in up) == ["1", "1"]


def test_the_recorded_view_of_a_sharddb_is_the_replica_that_synced_it_last(monitored: Monitored) -> None:
    a, b = monitored.replicas
    world = World(new_sharddb("fresh"))
    step(world, over_http(b))  # b's view: Provisioning, and older
    time.sleep(1.1)
    bring_up(world, over_http(a))
    phases = monitored.eventually(
        "sharddb:phase", lambda found: [m.get("phase") for m in of("fresh", found)] == ["Available"]
    )
    assert {"namespace": "prod", "name": "fresh", "phase": "Available"}.items() <= of("fresh", phases)[0].items()


def test_a_degraded_sharddb_raises_an_alert_naming_it(monitored: Monitored) -> None:
    a, b = monitored.replicas
    world = World(new_sharddb("broken"))
    bring_up(world, over_http(a))
    world.fail_pod("broken-db-1", "ImagePullBackOff")
    time.sleep(1.1)
    step(world, over_http(b))
    alerts = monitored.eventually('ALERTS{alertname="ShardDBDegraded"}', lambda found: bool(of("broken", found)))
    (alert,) = of("broken", alerts)
    assert (alert["namespace"], alert["reason"], alert["alertstate"]) == ("prod", "ShardPodsFailing", "pending")


def test_a_shard_whose_standby_stopped_raises_its_own_alert_naming_the_shard_and_not_the_degraded_one(
    monitored: Monitored,
) -> None:
    """Shard 1's standby does not stream; shard 0 is whole. The ShardDB is Degraded (NoSyncStandby, its grace long
    past), but that reason is the replication alert's, per shard."""
    a, _ = monitored.replicas
    marks = [
        with_members.member_pod(0, 0, names.LEADER_LABEL_VALUE),
        with_members.member_pod(0, 1, names.FOLLOWER_LABEL_VALUE),
        with_members.member_pod(1, 0, names.LEADER_LABEL_VALUE),
        with_members.member_pod(1, 1, names.FOLLOWER_LABEL_VALUE, streaming=False),
        *[with_members.sync_record(shard) for shard in range(2)],
    ]
    running = with_members.stages()["running"]
    request = with_members.request(with_members.parent(), with_members.applied(running["children"]), marks)
    over_http(a)(request, False)
    alerts = monitored.eventually(
        'ALERTS{alertname="ShardDBShardWithoutSyncStandby"}', lambda found: bool(of("demo", found))
    )
    (alert,) = of("demo", alerts)
    assert (alert["namespace"], alert["shard"], alert["alertstate"]) == ("shop", "1", "pending")
    degraded = monitored.eventually("sharddb:degraded == 1", lambda found: bool(of("demo", found)))
    assert [sample["reason"] for sample in of("demo", degraded)] == ["NoSyncStandby"]
    time.sleep(3)  # three more evaluations of every group
    assert of("demo", monitored.query('ALERTS{alertname="ShardDBDegraded"}')) == []


def test_a_sharddb_finalized_on_one_replica_leaves_no_view_though_another_holds_one(monitored: Monitored) -> None:
    a, b = monitored.replicas
    world = World(new_sharddb("gone"))
    bring_up(world, over_http(a))
    monitored.eventually("sharddb:available", lambda found: bool(of("gone", found)))
    time.sleep(1.1)
    tear_down(world, over_http(b))
    monitored.eventually("sharddb:available", lambda found: not of("gone", found))
    assert of("gone", monitored.query("sharddb_available"))  # a still exports its older view
