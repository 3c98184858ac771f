"""Bring-up: Available through the default seed, one member primary and one replica on another node, the status
naming both, the ``-primary`` Service reaching the primary alone, a write through it committed; and the shard-roles
runbook's first questions, run as written, answering of this shard; ``kubectl sharddb status`` and the diagnostics
bundle showing Patroni's view."""

from __future__ import annotations

import tarfile
from pathlib import Path

from ..installs import Install
from ..steps import ROOT, Step, runbook
from .shard import NAME, NAMESPACE, RUNBOOK_SETTINGS, SHARD, BroughtUp, primary_and_replica, role_of

SHARD_ROLES = ROOT / "docs" / "runbooks" / "shard-roles.md"


def test_a_shard_with_two_members_runs_one_pod_labelled_primary_and_one_replica(brought_up: BroughtUp) -> None:
    assert sorted(role_of(pod) for pod in brought_up.pods) == ["primary", "replica"], brought_up.pods


def test_the_two_members_of_a_shard_run_on_different_nodes(brought_up: BroughtUp) -> None:
    nodes = [pod["spec"].get("nodeName") for pod in brought_up.pods]
    assert len(nodes) == 2
    assert len(set(nodes)) == 2, nodes


def test_the_status_names_the_shards_primary_and_its_synchronous_standby(brought_up: BroughtUp) -> None:
    primary, replica = primary_and_replica(brought_up.pods)
    shards = brought_up.status["replication"]["shards"]
    assert [(each["shard"], each.get("primary"), each.get("syncStandby")) for each in shards] == [
        (0, primary, replica)
    ], shards


def test_the_primary_service_reaches_only_the_primary(brought_up: BroughtUp) -> None:
    primary, _ = primary_and_replica(brought_up.pods)
    assert brought_up.primary_endpoints == [primary]


def test_a_write_through_the_primary_service_commits(brought_up: BroughtUp) -> None:
    assert brought_up.write == ("Succeeded", "1\n"), brought_up.write


def test_the_shard_roles_runbooks_questions_find_both_members_and_patronis_leader(
    install: Install, brought_up: BroughtUp
) -> None:
    said = install.run(runbook(SHARD_ROLES, ("shard-roles-set", "shard-roles-ask"), RUNBOOK_SETTINGS))
    primary, replica = primary_and_replica(brought_up.pods)
    assert [line for line in said.splitlines() if primary in line and "Leader" in line], said
    assert [line for line in said.splitlines() if replica in line and "Sync Standby" in line], said


def rows(said: str) -> list[list[str]]:
    return [line.split("\t") for line in said.splitlines()]


def test_the_status_plugin_shows_the_shards_primary_and_synchronous_standby(
    install: Install, brought_up: BroughtUp
) -> None:
    said = install.run(Step("status", f"tools/kubectl-sharddb-status {NAME} -n {NAMESPACE}\n"))
    primary, replica = primary_and_replica(brought_up.pods)
    assert ["0", "Ready", primary, replica] in [row[:4] for row in rows(said)], said


def test_the_status_plugin_shows_each_members_role_and_patronis_state(install: Install, brought_up: BroughtUp) -> None:
    said = install.run(Step("status", f"tools/kubectl-sharddb-status {NAME} --namespace={NAMESPACE}\n"))
    primary, replica = primary_and_replica(brought_up.pods)
    members = {row[0]: row[1:4] for row in rows(said) if row[0] in (primary, replica)}
    assert members == {primary: ["primary", "running", ""], replica: ["replica", "running", "streaming"]}, said


def test_the_diagnostics_bundle_holds_patronis_state_and_every_members_log(
    install: Install, brought_up: BroughtUp, tmp_path: Path
) -> None:
    archive = tmp_path / "bundle.tar.gz"
    install.run(Step("diagnose", f"tools/kubectl-sharddb-diagnose {NAMESPACE}/{NAME} -o {archive}\n"))
    with tarfile.open(archive) as tar:
        files = {
            member.name.split("/", 1)[1]: tar.extractfile(member).read().decode()  # type: ignore[union-attr]
            for member in tar.getmembers()
            if member.isfile()
        }
    primary, replica = primary_and_replica(brought_up.pods)
    here = f"sharddbs/{NAMESPACE}/{NAME}"
    assert files["errors.txt"] == "", files["errors.txt"]
    assert [line for line in files[f"{here}/patroni/{SHARD}.txt"].splitlines() if primary in line and "Leader" in line]
    assert f"name: {SHARD}-leader" in files[f"{here}/patroni/configmaps.yaml"]
    assert f"name: {SHARD}-sync" in files[f"{here}/patroni/configmaps.yaml"]
    assert f"{here}/patroni/{SHARD}.history.txt" in files
    for member in (primary, replica):
        assert files.get(f"logs/{NAMESPACE}/{member}.log"), sorted(files)
