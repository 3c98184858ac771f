"""``python -m hooks render``: the offline preview, run as a user runs it (a real subprocess).

Each stage prints what the hooks answer once the controllers have done that
much: the kinds, names and sizes here are the lifecycle's, read from the
example manifests; bad input is one line naming the problem, exit 2.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..support.preview import render, rendered

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
STAGES = ("new", "ready", "available", "deleting")
PHASES = {"new": "Provisioning", "ready": "Seeding", "available": "Available", "deleting": "DrainingCache"}
HEADER = re.compile(r"^# ShardDB (?P<namespace>\S+)/(?P<name>\S+) at stage (?P<stage>\S+): phase (?P<phase>\S+)$")

Obj = dict[str, Any]
Child = tuple[str, str, int | None]  # kind, name, replicas (workloads only)
WORKLOADS = ("StatefulSet", "Deployment")


def documents(output: str) -> list[Obj]:
    docs = [doc for doc in yaml.safe_load_all(output) if doc is not None]
    assert all(isinstance(doc, dict) for doc in docs), docs
    return docs


def children(output: str) -> set[Child]:
    return {
        (doc["kind"], doc["metadata"]["name"], doc["spec"].get("replicas") if doc["kind"] in WORKLOADS else None)
        for doc in documents(output)
    }


def sharddbs(path: Path) -> list[Obj]:
    return [
        doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict) and doc.get("kind") == "ShardDB"
    ]


def expected(sharddb: Obj, stage: str) -> set[Child]:
    """The lifecycle, stage by stage: shards; then their seed; then the cache; then the cache drains first."""
    name, spec = sharddb["metadata"]["name"], sharddb["spec"]
    shards, cache_replicas = spec["shards"], spec["cache"].get("replicas", 1)
    shard_children: set[Child] = {("Service", f"{name}-db", None), ("StatefulSet", f"{name}-db", shards)}
    budget: set[Child] = {("PodDisruptionBudget", f"{name}-db", None)}
    seed: set[Child] = {("Job", f"{name}-seed-{shards}", None)}
    cache_children: set[Child] = {("Deployment", f"{name}-cache", cache_replicas), ("Service", f"{name}-cache", None)}
    if cache_replicas >= 2:
        cache_children.add(("PodDisruptionBudget", f"{name}-cache", None))
    return {
        "new": shard_children | budget,
        "ready": shard_children | budget | seed,
        "available": shard_children | budget | seed | cache_children,
        "deleting": shard_children | seed | {("Deployment", f"{name}-cache", 0)},
    }[stage]


def with_members(path: Path) -> bool:
    return any(doc["spec"].get("replication", {}).get("members", 1) > 1 for doc in sharddbs(path))


# The preview plays no Patroni (no member is ever labelled primary), so a ShardDB with members stays at its
# first stage; the lifecycle's stages are checked on single copies, and the members' shape below.
SINGLE = [path for path in EXAMPLES if not with_members(path)]
MEMBERS = [path for path in EXAMPLES if with_members(path)]
CASES = [(path, stage) for path in SINGLE for stage in STAGES]
IDS = [f"{path.stem}-{stage}" for path, stage in CASES]


def test_there_are_examples_to_render() -> None:
    assert any(sharddbs(path) for path in EXAMPLES)


@pytest.mark.parametrize(("path", "stage"), CASES, ids=IDS)
def test_each_stage_prints_the_children_the_hooks_answer_then(path: Path, stage: str) -> None:
    want: set[Child] = set()
    for sharddb in sharddbs(path):
        want |= expected(sharddb, stage)
    assert children(rendered(str(path.relative_to(ROOT)), stage)) == want


@pytest.mark.parametrize(("path", "stage"), CASES, ids=IDS)
def test_the_status_is_a_comment_naming_the_phase_of_the_stage(path: Path, stage: str) -> None:
    output = rendered(str(path.relative_to(ROOT)), stage)
    headers = [match for line in output.splitlines() if (match := HEADER.match(line))]
    assert [(h["name"], h["stage"], h["phase"]) for h in headers] == [
        (doc["metadata"]["name"], stage, PHASES[stage]) for doc in sharddbs(path)
    ]
    status_lines = [line.removeprefix("#   ") for line in output.splitlines() if line.startswith("#   ")]
    assert yaml.safe_load("\n".join(status_lines[: status_lines.index("conditions:")]))["phase"] == PHASES[stage]


def members_children(sharddb: Obj) -> set[Child]:
    """A new ShardDB with members: per shard a StatefulSet of its members, its Services, budget and policy; the
    base backups' and restore points' CronJobs when it backs up."""
    name, spec = sharddb["metadata"]["name"], sharddb["spec"]
    members = spec["replication"]["members"]
    per_shard: set[Child] = set()
    for shard in range(spec["shards"]):
        prefix = f"{name}-db-{shard}"
        per_shard |= {("StatefulSet", prefix, members), ("PodDisruptionBudget", prefix, None)}
        per_shard |= {("NetworkPolicy", prefix, None), ("Service", prefix, None)}
        per_shard |= {("Service", f"{prefix}-primary", None), ("Service", f"{prefix}-standby", None)}
    patroni = {(kind, f"{name}-patroni", None) for kind in ("ServiceAccount", "Role", "RoleBinding")}
    cronjobs = {("CronJob", f"{name}-backup", None), ("CronJob", f"{name}-point", None)}
    backups = cronjobs if "backup" in spec else set()
    return {("Service", f"{name}-db", None)} | per_shard | patroni | backups


def test_there_are_examples_with_members() -> None:
    assert [path.name for path in MEMBERS] == [
        "sharddb-backup.yaml",
        "sharddb-from-single-copy.yaml",
        "sharddb-members.yaml",
        "sharddb-restore.yaml",
    ]


@pytest.mark.parametrize("path", MEMBERS, ids=[path.stem for path in MEMBERS])
def test_an_example_with_members_gets_each_shards_members_and_is_not_refused(path: Path) -> None:
    output = rendered(str(path.relative_to(ROOT)), "new")
    want: set[Child] = set()
    for sharddb in sharddbs(path):
        want |= members_children(sharddb)
    assert children(output) == want
    status_lines = [line.removeprefix("#   ") for line in output.splitlines() if line.startswith("#   ")]
    status = yaml.safe_load("\n".join(status_lines))
    (degraded,) = [each for each in status["conditions"] if each["type"] == "Degraded"]
    assert degraded["reason"] == "AsExpected", degraded


def test_without_a_stage_the_preview_shows_an_available_sharddb() -> None:
    source = "examples/sharddb.yaml"
    assert documents(rendered(source)) == documents(rendered(source, "available"))


def test_children_get_the_namespace_of_the_manifest_or_default() -> None:
    manifest = """\
apiVersion: mygroup.example.com/v1alpha1
kind: ShardDB
metadata: {name: plain}
spec: {shards: 2, dbImage: postgres:16, cache: {image: redis:7}}
---
apiVersion: mygroup.example.com/v1alpha1
kind: ShardDB
metadata: {name: placed, namespace: team-a}
spec: {shards: 1, dbImage: postgres:16, cache: {image: redis:7}}
"""
    docs = documents(rendered("-", "available", manifest))
    namespaces = {(doc["metadata"]["name"].split("-")[0], doc["metadata"]["namespace"]) for doc in docs}
    assert namespaces == {("plain", "default"), ("placed", "team-a")}


def test_other_documents_beside_a_sharddb_are_left_out() -> None:
    manifest = """\
apiVersion: v1
kind: Secret
metadata: {name: demo-credentials}
stringData: {password: example}
---
apiVersion: mygroup.example.com/v1alpha1
kind: ShardDB
metadata: {name: demo}
spec: {shards: 2, dbImage: postgres:16, cache: {image: redis:7}}
"""
    assert children(rendered("-", "new", manifest)) == {
        ("Service", "demo-db", None),
        ("StatefulSet", "demo-db", 2),
        ("PodDisruptionBudget", "demo-db", None),
    }


BAD_INPUT = {
    "not-yaml": ("shards: [3\n", "stdin is not YAML: line 2, column 1"),
    "no-sharddb": ("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n", "stdin has no ShardDB in it"),
    "invalid-spec": (
        "apiVersion: mygroup.example.com/v1alpha1\nkind: ShardDB\nmetadata: {name: demo}\n"
        "spec: {shards: 0, dbImage: postgres:16, cache: {image: redis:7}}\n",
        "stdin: ShardDB demo: parent.spec.shards: Input should be greater than or equal to 1",
    ),
    "missing-field": (
        "apiVersion: mygroup.example.com/v1alpha1\nkind: ShardDB\nmetadata: {name: demo}\n"
        "spec: {shards: 2, cache: {image: redis:7}}\n",
        "stdin: ShardDB demo: parent.spec.dbImage: Field required",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUT, ids=list(BAD_INPUT))
def test_bad_input_is_one_message_naming_the_problem_and_exit_2(case: str) -> None:
    manifest, message = BAD_INPUT[case]
    result = render("-", None, manifest)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"sharddb-hooks render: {message}")
    assert result.stderr.count("\n") == 1, "one line, no traceback"


def test_a_missing_file_is_a_message_and_exit_2() -> None:
    result = render("examples/no-such-file.yaml")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("sharddb-hooks render: cannot read examples/no-such-file.yaml")


@pytest.mark.parametrize("stage", STAGES)
def test_a_claim_templates_status_is_explained_where_it_shows(stage: str) -> None:
    lines = rendered("examples/sharddb.yaml", stage).splitlines()
    shown = [n for n, line in enumerate(lines) if line.strip() == "status:" and "phase: Pending" in lines[n + 1]]
    assert shown, "the StatefulSet's claim template carries the status the API server stores"
    for n in shown:
        note = lines[n - 2 : n]
        assert note[0].strip().startswith("# not a volume's state: the API server stores every claim template")
        assert note[1].strip().startswith("# so the hooks return it as stored")
        indent = len(lines[n]) - len(lines[n].lstrip())
        assert all(len(line) - len(line.lstrip()) == indent for line in note), "the note sits at its level"


def test_the_note_leaves_the_children_as_the_hooks_answer_them() -> None:
    sts = next(d for d in documents(rendered("examples/sharddb.yaml", "new")) if d["kind"] == "StatefulSet")
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["status"] == {"phase": "Pending"}


def test_serving_loads_neither_the_preview_nor_yaml() -> None:
    probe = (
        "import sys\n"
        "from hooks.__main__ import main\n"
        "from hooks.service.app import create_app\n"
        "from hooks.service.serving import HookServer\n"
        "create_app()\n"
        "print(sorted(m for m in ('yaml', 'hooks.cli.preview', 'hooks.cli.stages') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr
