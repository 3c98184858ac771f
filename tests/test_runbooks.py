"""Each runbook's symptoms are what the hooks answer in its situation.

A runbook shows what ``kubectl get sharddb`` says in a table whose first column is
``when``; each row here is held to the decision for that situation, so a change in
what the hooks report cannot leave a runbook describing something no user will see.
"""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from hooks import pods
from hooks.lifecycle import Decision, decide
from hooks.snapshot import LostPod, MissingPod, SeedJobView, Snapshot, StuckPod

from .hook import moment
from .test_lifecycle import available, cache, made, snapshot, spec, sts

RUNBOOKS = Path(__file__).resolve().parent.parent / "docs" / "runbooks"
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
    older = copy.deepcopy(pods.db_template("demo", shape))
    older["spec"]["containers"][0]["lifecycle"]["preStop"]["exec"]["command"] = ["sh", "-c", "pg_ctl stop"]
    return available(statefulset=replace(sts(seeded=3), template=older, made=made(shape, "db")))


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
    "drain-waits-on-budget.md": [one_shard_down()],
    "newer-template-waits.md": [older_shard_template()],
    "restore-from-claims.md": [snapshot(statefulset=sts(ready=3)), available()],
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
