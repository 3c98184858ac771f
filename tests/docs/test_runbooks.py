"""Each runbook's symptoms are what the hooks answer in its situation.

A runbook shows what ``kubectl get sharddb`` says in a table whose first column is
``when``; each row here is held to the decision for that situation, so a change in
what the hooks report cannot leave a runbook describing something no user will see.

Each runbook's commands can be pasted into a shell as they are: they set the ShardDB they
act on once, and every ``kubectl`` command names its namespace. The reasons the status
docs list are the ones the hooks can give, read from ``hooks/lifecycle/``.
"""

from __future__ import annotations

import copy
import re
import shlex
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from hooks import pod_templates
from hooks.backup.runs import BaseBackups
from hooks.lifecycle import Decision, decide
from hooks.snapshot import Snapshot
from hooks.trouble.lost import LostPod
from hooks.trouble.missing import MissingPod
from hooks.trouble.stuck import StuckPod
from hooks.workloads import SeedJobView

from ..support.backups import STORE
from ..support.hook import moment
from ..support.reasons import EMITTED, emitted
from ..support.snapshots import available, cache, made, snapshot, spec, sts

RUNBOOKS = Path(__file__).resolve().parents[2] / "docs" / "runbooks"
PAGES = sorted(path for path in RUNBOOKS.glob("*.md") if path.name != "index.md")
T0 = moment("2026-03-01T12:00:00Z")
WITHIN_GRACE = T0 + timedelta(seconds=30)  # the default grace is 120 s
PAST_GRACE = T0 + timedelta(seconds=130)
SCHEDULER = "0/3 nodes are available: 1 node(s) had volume node affinity conflict, 2 node(s) were unschedulable."


def unschedulable(name: str = "demo-db-2") -> StuckPod:
    return StuckPod(name, "db", "Unschedulable", SCHEDULER, int(name.rsplit("-", 1)[1]), T0)


DRAINED = (
    "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match PersistentVolume's node affinity."
)
NOT_READY = "Ready=False while its containers are ready: the node controller's mark of a node that stopped reporting"


def lost(name: str = "demo-db-2", component: str = "db") -> LostPod:
    return LostPod(name, component, "node-2", NOT_READY)


def refused_pod(**fields: object) -> Snapshot:
    """The StatefulSet controller created two of three shard pods: a quota refused demo-db-2."""
    return snapshot(
        statefulset=sts(ready=2, status_replicas=2), missing_pods=(MissingPod("demo-db-2", 2, T0),), **fields
    )


def drained(**fields: object) -> Snapshot:
    """An Available ShardDB whose shard demo-db-2 a drain evicted; it waits for its volume's cordoned node."""
    pod = StuckPod("demo-db-2", "db", "Unschedulable", DRAINED, 2, T0, "volume-node-cordoned")
    return one_shard_down(stuck_pods=(pod,), **fields)


def one_shard_down(**fields: object) -> Snapshot:
    """An Available ShardDB whose third shard is not ready, nor registered."""
    return available(statefulset=sts(seeded=3, ready=2), registered=frozenset({0, 1}), **fields)


def older_shard_template() -> Snapshot:
    """Available, the shards on a template an older release rendered from the same spec."""
    shape = spec()
    older = copy.deepcopy(pod_templates.db_template("demo", shape))
    older["spec"]["containers"][0]["lifecycle"]["preStop"]["exec"]["command"] = ["sh", "-c", "pg_ctl stop"]
    return available(statefulset=replace(sts(seeded=3), template=older, made=made(shape, "db")))


def cache_rolling(changed: dict[str, object], stuck: bool = False, **fields: object) -> Snapshot:
    """Available; a change to spec.cache rolls the cache: one new pod beside the two old ones, not ready."""
    shape = spec(cache={"image": "redis:7", "replicas": 2, **changed})
    base = cache(ready=2, status_replicas=3, stuck=stuck)
    return available(spec=shape, cache=replace(base, rollout=replace(base.rollout, updated=1)), **fields)


RESTORE = {"source": {"name": "orders", "objectStore": STORE}}
# A member whose restore found its own archive folder used: it says so in its termination message.
REFUSED = StuckPod(
    "demo-db-2",
    "db",
    "CrashLoopBackOff",
    "container db exited 1: spec.backup.objectStore.destinationPath: s3://backups/orders/demo-db-2 already holds WAL",
    2,
    T0,
)


def folder_used(pod: str, scope: str) -> StuckPod:
    """A member whose new cluster found its own archive folder used: it says so in its termination message."""
    path = f"s3://backups/orders/{scope}"
    said = f"container db exited 1: spec.backup.objectStore.destinationPath: {path} already holds WAL"
    return StuckPod(pod, "db", "CrashLoopBackOff", said, int(scope.rsplit("-", 1)[1]), T0)


BACKUP = {"objectStore": STORE}

# Each runbook's rows, in the order the page shows them.
SITUATIONS: dict[str, list[Snapshot]] = {
    "shard-pod-waits.md": [
        snapshot(statefulset=sts(ready=2), stuck_pods=(unschedulable(),), now=WITHIN_GRACE),
        snapshot(statefulset=sts(ready=2), stuck_pods=(unschedulable(),), now=PAST_GRACE),
        one_shard_down(stuck_pods=(unschedulable(),), now=WITHIN_GRACE),
        one_shard_down(stuck_pods=(unschedulable(),), now=PAST_GRACE),
    ],
    "failed-seed.md": [
        snapshot(
            statefulset=sts(),
            seed_jobs=(SeedJobView(3, succeeded=False, failed=True, reason="BackoffLimitExceeded"),),
        ),
        snapshot(
            statefulset=sts(),
            seed_jobs=(SeedJobView(3, succeeded=False, failed=False),),
            stuck_pods=(StuckPod("demo-seed-3-x7k2p", "seed", "ImagePullBackOff", "postgres:16", -1, T0),),
            now=WITHIN_GRACE,
        ),
    ],
    "deletion-waits.md": [
        available(finalizing=True, cache=cache(replicas=0, ready=0, status_replicas=0), cache_pods=1),
        available(
            finalizing=True,
            cache=None,
            cache_pods=0,
            statefulset=sts(replicas=0, ready=0, seeded=3, status_replicas=1),
            shard_pods=1,
        ),
        available(
            finalizing=True,
            cache=cache(replicas=0, ready=0, status_replicas=0),
            cache_pods=1,
            lost_pods=(lost("demo-cache-7c9f-0", "cache"),),
        ),
    ],
    "admission-refuses.md": [
        refused_pod(now=WITHIN_GRACE),
        refused_pod(now=PAST_GRACE),
        snapshot(created=T0, now=PAST_GRACE),
        available(
            cache=replace(cache(ready=0, status_replicas=0), refused="exceeded quota: q", refused_since=T0),
            now=PAST_GRACE,
        ),
    ],
    "node-gone.md": [
        one_shard_down(),
        one_shard_down(lost_pods=(lost(),)),
        drained(now=WITHIN_GRACE),
        drained(now=PAST_GRACE),
    ],
    "shard-not-ready.md": [
        one_shard_down(),
        one_shard_down(stuck_pods=(StuckPod("demo-db-2", "db", "CrashLoopBackOff", "container db exited 1", 2, T0),)),
        one_shard_down(lost_pods=(lost(),)),
    ],
    "drain-waits-on-budget.md": [one_shard_down()],
    "newer-template-waits.md": [older_shard_template()],
    "restore-from-claims.md": [snapshot(statefulset=sts(ready=3)), available()],
    "cache-rollout-stuck.md": [
        cache_rolling({"port": 6380}),
        cache_rolling({"port": 6380}, stuck=True),
        cache_rolling(
            {"image": "redis:7.9-typo"},
            stuck=True,
            stuck_pods=(StuckPod("demo-cache-6d8b9f7c4-x2kqz", "cache", "ImagePullBackOff", "redis:7.9-typo", -1, T0),),
        ),
    ],
    "shrink-refused.md": [
        available(spec=spec(shards=2)),
        available(statefulset=sts(replicas=4, ready=4, seeded=3)),
    ],
    "storage-immutable.md": [available(spec=spec(storage={"size": "2Gi"}))],
    "base-backup-failed.md": [
        available(spec=spec(backup={"objectStore": STORE}), base_backups=BaseBackups(T0, None, running=False)),
        available(  # a CronJob made two days ago that never ran: overdue, yet nothing failed
            spec=spec(backup={"objectStore": STORE}),
            base_backups=BaseBackups(None, None, running=False, created=T0 - timedelta(days=2)),
        ),
    ],
    "archive-folder-used.md": [
        snapshot(
            spec=spec(backup=BACKUP),
            statefulset=sts(ready=2),
            stuck_pods=(folder_used("demo-db-2-0", "demo-db-2"),),
            now=WITHIN_GRACE,
        ),
        available(
            spec=spec(shards=4, backup=BACKUP),
            statefulset=sts(replicas=4, ready=3, seeded=3),
            stuck_pods=(folder_used("demo-db-3-0", "demo-db-3"),),
            now=WITHIN_GRACE,
        ),
    ],
    "restore-from-backup.md": [
        snapshot(spec=spec(restore=RESTORE), statefulset=sts(ready=2), now=WITHIN_GRACE),
        snapshot(spec=spec(restore=RESTORE), statefulset=sts(ready=2), stuck_pods=(REFUSED,), now=WITHIN_GRACE),
    ],
}


def seen(decision: Decision, column: str) -> str:
    """What ``kubectl get sharddb`` shows in ``column`` for this answer."""
    conditions = {c.type: c for c in decision.conditions}
    if column == "PHASE":
        return decision.phase.value
    if column == "READY":
        return str(conditions["Available"].status)
    if column == "PROGRESS":
        return conditions["Progressing"].reason
    if column == "HEALTH":
        return conditions["Degraded"].reason
    if column == "NEWER-TEMPLATE":
        return ", ".join(decision.newer_templates) or "none"
    raise AssertionError(f"no column {column}")


def symptom_rows(page: Path) -> list[dict[str, str]]:
    """The rows of the page's ``| when | … |`` tables, by column, values without their backticks."""
    rows: list[dict[str, str]] = []
    columns: list[str] = []
    for line in page.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells and cells[0] == "when":
            columns = [cell.strip("`") for cell in cells[1:]]
        elif cells and columns and not re.fullmatch(r"-+", cells[0]):
            rows.append({"when": cells[0]} | dict(zip(columns, (cell.strip("`") for cell in cells[1:]), strict=True)))
        elif not cells:
            columns = []
    return rows


CASES = [(name, i) for name, situations in SITUATIONS.items() for i in range(len(situations))]


def test_every_runbook_has_symptoms_cause_and_steps() -> None:
    for page in PAGES:
        headings = re.findall(r"^## (.+)$", page.read_text(), re.M)
        assert {"Symptoms", "Cause", "Steps"} <= set(headings), page.name


def test_every_symptoms_table_has_its_situations_here() -> None:
    shown = {page.name: len(symptom_rows(page)) for page in PAGES if symptom_rows(page)}
    assert shown == {name: len(situations) for name, situations in SITUATIONS.items()}


@pytest.mark.parametrize(("name", "row"), CASES, ids=[f"{name}:{row}" for name, row in CASES])
def test_each_symptom_row_is_what_the_hooks_answer(name: str, row: int) -> None:
    shown = symptom_rows(RUNBOOKS / name)[row]
    decision = decide(SITUATIONS[name][row])
    answered = {column: seen(decision, column) for column in shown if column != "when"}
    assert answered == {column: value for column, value in shown.items() if column != "when"}, shown["when"]


def test_the_index_links_every_runbook() -> None:
    index = (RUNBOOKS / "index.md").read_text()
    assert {page.name for page in PAGES} <= set(re.findall(r"\]\(([\w-]+\.md)\)", index))


# --- commands that can be pasted as they are ------------------------------------------------

FENCE = re.compile(
    r"^(?P<indent> *)(?P<fence>```+)(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)(?P=fence)\s*$", re.M | re.S
)
ALL_PAGES = sorted(RUNBOOKS.glob("*.md"))
# kubectl verbs that never act on a namespaced object, and resource types that are cluster-scoped.
CLUSTER_VERBS = frozenset(
    {"taint", "cordon", "uncordon", "drain", "config", "version", "cluster-info", "api-resources"}
)
TYPED_VERBS = frozenset({"get", "describe", "delete", "patch", "annotate", "label", "edit", "top", "wait"})
CLUSTER_TYPES = frozenset(
    {
        *("node", "nodes", "no", "namespace", "namespaces", "ns"),
        *("persistentvolume", "persistentvolumes", "pv", "storageclass", "storageclasses", "sc"),
        *("customresourcedefinition", "customresourcedefinitions", "crd", "crds"),
        *("clusterrole", "clusterroles", "clusterrolebinding", "clusterrolebindings"),
        *("compositecontroller", "compositecontrollers", "cc"),
    }
)
# Flags whose value is the next word (written ``-l x``, not ``-l=x``).
VALUE_FLAGS = frozenset(
    {
        *("-l", "--selector", "-o", "--output", "-f", "--filename", "-p", "--patch", "--type", "-c", "--container"),
        *("--field-selector", "--tail", "--since", "-L", "--label-columns", "--sort-by", "--grace-period"),
        *("--timeout", "--for", "--context", "--from-literal", "--from-file"),
    }
)
NAMESPACED = ("-n", "--namespace", "-A", "--all-namespaces")
VARIABLE = re.compile(r"\$\{?([A-Z_][A-Z0-9_]*)")
ASSIGNMENT = re.compile(r"^([A-Z_][A-Z0-9_]*)=")


def shell_blocks(page: Path) -> list[str]:
    return [
        "\n".join(line.removeprefix(m["indent"]) for line in m["body"].splitlines())
        for m in FENCE.finditer(page.read_text())
        if m["lang"] == "sh"
    ]


def _scan(text: str) -> tuple[str, list[str]]:
    """The text with each ``$( … )`` replaced by ``SUB``, and what those held; a ``#`` comment dropped."""
    out: list[str] = []
    inner: list[str] = []
    quote = ""
    i = 0
    while i < len(text):
        char = text[i]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "'" and not quote:
            quote = "'"
        elif char == '"':
            quote = "" if quote == '"' else '"'
        elif char == "#" and not quote and (i == 0 or text[i - 1].isspace()):
            break
        elif text.startswith("$(", i):
            depth, j = 1, i + 2
            while depth and j < len(text):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            inner.append(text[i + 2 : j - 1])
            out.append("SUB")
            i = j
            continue
        out.append(char)
        i += 1
    return "".join(out), inner


def commands(block: str) -> list[list[str]]:
    """Each simple command of a block, as words: pipes, ``;``, ``&&`` and ``$( … )`` split apart."""
    found: list[list[str]] = []
    for line in block.replace("\\\n", " ").splitlines():
        text, inner = _scan(line)
        for part in inner:
            found.extend(commands(part))
        for segment in re.split(r"\|\||&&|[|;]", text):
            words = shlex.split(segment)
            if words:
                found.append(words)
    return found


def unnamespaced(words: list[str]) -> bool:
    """A ``kubectl`` command that acts on a namespaced object without saying which namespace."""
    if words[0] != "kubectl" or any(w in NAMESPACED or w.startswith(("--namespace=", "-n=")) for w in words):
        return False
    positional: list[str] = []
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in VALUE_FLAGS:
            skip = True
        elif not word.startswith("-"):
            positional.append(word)
    verb, *rest = positional or [""]
    if verb in CLUSTER_VERBS:
        return False
    if verb in TYPED_VERBS and rest:
        kinds = {kind.split(".")[0] for kind in rest[0].split("/")[0].split(",")}
        return not kinds <= CLUSTER_TYPES
    return True


def test_the_command_checker_tells_namespaced_commands_apart() -> None:
    def flagged(line: str) -> list[str]:
        return [" ".join(words) for words in commands(line) if unnamespaced(words)]

    assert flagged("kubectl get pods -l app=x") == ["kubectl get pods -l app=x"]
    assert flagged('kubectl -n "$NS" logs job/"$NAME-seed-3"; kubectl get nodes') == []
    assert flagged('kubectl get pv "$(kubectl get pvc data -o name)"') == ["kubectl get pvc data -o name"]
    assert flagged("kubectl describe statefulset,pv x | grep y  # kubectl get pods") == [
        "kubectl describe statefulset,pv x"
    ]
    assert flagged("kubectl taint nodes n key=v:NoExecute && kubectl get pods -A") == []
    assert flagged("kubectl annotate compositecontroller sharddb a=b --overwrite") == []


@pytest.mark.parametrize("page", ALL_PAGES, ids=lambda page: page.name)
def test_every_kubectl_command_of_a_runbook_names_its_namespace(page: Path) -> None:
    found = [" ".join(words) for block in shell_blocks(page) for words in commands(block) if unnamespaced(words)]
    assert found == []


@pytest.mark.parametrize("page", ALL_PAGES, ids=lambda page: page.name)
def test_no_runbook_command_names_the_example_sharddb(page: Path) -> None:
    """``demo`` may be the value a runbook sets ``NAME`` to, never part of a command."""
    found = [
        " ".join(words)
        for block in shell_blocks(page)
        for words in commands(block)
        if not ASSIGNMENT.match(words[0]) and any(re.search(r"\bdemo\b", word) for word in words)
    ]
    assert found == []


@pytest.mark.parametrize("page", ALL_PAGES, ids=lambda page: page.name)
def test_a_runbook_sets_each_variable_once_before_it_uses_it(page: Path) -> None:
    assigned: list[str] = []
    for block in shell_blocks(page):
        for line in block.replace("\\\n", " ").splitlines():
            code, inner = _scan(line)
            used = set(VARIABLE.findall(" ".join([code, *inner])))
            assert used <= set(assigned), f"{page.name}: {sorted(used - set(assigned))} used before set: {line}"
            assigned.extend(
                match[1] for part in re.split(r"\|\||&&|[|;]", code) if (match := ASSIGNMENT.match(part.strip()))
            )
    assert len(assigned) == len(set(assigned)), f"{page.name} sets a variable twice: {assigned}"
    if any("kubectl" in block for block in shell_blocks(page)) and page.name != "index.md":
        assert "NS" in assigned, f"{page.name}: no NS=… for its commands"


def test_the_hooks_logs_are_read_from_every_replica() -> None:
    """The production overlay runs three replicas: ``deploy/…`` would show one of them."""
    base = ROOT / "metacontroller" / "base" / "deployment.yaml"
    labels = yaml.safe_load(base.read_text())["spec"]["selector"]["matchLabels"]
    selector = ",".join(f"{key}={value}" for key, value in labels.items())
    logs = [
        words
        for page in ALL_PAGES
        for block in shell_blocks(page)
        for words in commands(block)
        if words[:1] == ["kubectl"] and "logs" in words and "sharddb-system" in words
    ]
    assert logs
    for words in logs:
        assert words[words.index("-l") + 1] == selector, " ".join(words)
        assert "--prefix" in words, " ".join(words)
    for page in [*ALL_PAGES, ROOT / "docs" / "api" / "status.md"]:
        assert "logs deploy/sharddb-hooks" not in page.read_text(), page.name


def test_no_runbook_removes_a_finalizer_by_position_alone() -> None:
    for page in ALL_PAGES:
        text = page.read_text()
        assert "/metadata/finalizers/0" not in text, page.name
        for block in shell_blocks(page):
            if '"op":"remove","path":"/metadata/finalizers/' in block:
                assert '"op":"test","path":"/metadata/finalizers/' in block, page.name


# --- the reasons the status docs list are the hooks' --------------------------------------

ROOT = RUNBOOKS.parent.parent
STATUS = ROOT / "docs" / "api" / "status.md"


def documented() -> dict[tuple[str, bool], set[str]]:
    """The reasons of status.md's ``| status | reason | …`` tables, by the ``###`` condition above them."""
    found: dict[tuple[str, bool], set[str]] = {}
    condition = ""
    columns: list[str] = []
    for line in STATUS.read_text().splitlines():
        if heading := re.fullmatch(r"### (\w+)", line):
            condition = heading[1]
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells[:2] == ["status", "reason"]:
            columns = cells
        elif cells and columns and not re.fullmatch(r"-+", cells[0]):
            status = cells[0].strip("`") == "True"
            found.setdefault((condition, status), set()).update(re.findall(r"`(\w+)`", cells[1]))
        elif not cells:
            columns = []
    return found


def test_the_reader_finds_the_reasons_the_hooks_give() -> None:
    """A few that are sure, so a reader that finds nothing cannot pass the tests below."""
    assert {"NameTooLong", "ChildrenMissing", "ShardsUnavailable", "StorageImmutable"} <= EMITTED[("Degraded", True)]
    assert {"Complete", "Paused", "Finalized"} <= EMITTED[("Progressing", False)]
    assert "Ready" in EMITTED[("Available", True)]
    assert "Deleting" in EMITTED[("Degraded", False)]


def test_every_reason_status_md_lists_is_one_the_hooks_give_that_condition() -> None:
    shown = documented()
    assert {condition for condition, _ in shown} == {"Available", "Progressing", "Degraded"}
    wrong = {key: sorted(reasons - EMITTED.get(key, set())) for key, reasons in shown.items()}
    assert {key: reasons for key, reasons in wrong.items() if reasons} == {}


def test_every_degraded_reason_the_hooks_give_is_in_status_md() -> None:
    shown = documented()
    assert emitted("Degraded") - shown.get(("Degraded", True), set()) - shown.get(("Degraded", False), set()) == set()


def test_every_degraded_reason_in_the_runbooks_index_is_one_the_hooks_give() -> None:
    index = (RUNBOOKS / "index.md").read_text()
    section = index.split("## Every Degraded reason", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert listed <= emitted("Degraded")
    assert EMITTED[("Degraded", True)] - {"AsExpected"} <= listed
