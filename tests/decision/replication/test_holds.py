"""A refused change changes nothing that runs: for every refusal, asked together with a new image for the
shards and the cache, a new shard and a roll on demand, the answer keeps every template and replica count
it gives the unedited ShardDB, starts no Job, grants no Role and deletes no child.

Each case is a running ShardDB (members, or today's single copies) and an edit that one refusal answers.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from hooks import handler, names
from hooks.replication import shape
from testbed.models.world import World, bring_up, sharddb

from ...support.hook import at, direct
from ...support.replication import applied, healthy, parent, primary_slice, request, stages, sync_record

Obj = dict[str, Any]
LONG_NAME = "a" * 46  # fits single copies (49), not members (names.MAX_REPLICATED_NAME_LENGTH)
PGPASSWORD = {"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": "demo-db", "key": "password"}}}
# The kinds whose appearance would be a change acted on: a Job runs, a Role grants.
ACTING_KINDS = frozenset({"Job", "Role", "RoleBinding"})
RUNNING = stages()["running"]["children"]


@dataclass(frozen=True)
class Case:
    """A running ShardDB's last request, and the refused edit made to its spec."""

    running: Obj
    edit: Callable[[Obj], None]
    reason: str


def members_running() -> Obj:
    """The request a ShardDB with two members per shard, running with its cache, would send next."""
    marks = [*healthy(), sync_record(0), sync_record(1), primary_slice(0), primary_slice(1)]
    return request(parent(), applied(RUNNING), marks)


def single_copies_running(name: str = "demo", image: str = "postgres:16") -> Obj:
    """The request today's ShardDB (one member), brought up to a running cache, would send next."""
    world = World(sharddb(name=name, dbImage=image))
    bring_up(world, direct)
    return world.request()


def also_asked(spec: Obj) -> None:
    """What rides with every refused edit: a new cache image and one more shard."""
    spec["cache"] = {**spec["cache"], "image": "redis:7.4"}
    spec["shards"] = spec["shards"] + 1


def members_on(image: str) -> Callable[[Obj], None]:
    def edit(spec: Obj) -> None:
        spec["dbImage"] = image
        spec["replication"] = {"members": 2}
        also_asked(spec)

    return edit


def fewer_members(spec: Obj) -> None:
    spec["dbImage"] = "registry.example.com/postgres-patroni:16-4.1.6"
    spec["replication"] = {"members": 1}
    also_asked(spec)


def asynchronous(spec: Obj) -> None:
    spec["dbImage"] = "registry.example.com/postgres-patroni:16-4.1.6"
    spec["replication"] = {"members": 2, "synchronous": False}
    also_asked(spec)


def pgpassword(spec: Obj) -> None:
    spec["dbImage"] = "registry.example.com/postgres-patroni:16-4.1.6"
    spec["db"] = {**spec.get("db", {}), "env": [*spec.get("db", {}).get("env", []), PGPASSWORD]}
    also_asked(spec)


def credentials_removed(spec: Obj) -> None:
    spec["dbImage"] = "registry.example.com/postgres-patroni:16-4.1.6"
    spec["db"] = {**spec.get("db", {}), "env": []}
    also_asked(spec)


CASES: dict[str, Callable[[], Case]] = {
    "members on MariaDB": lambda: Case(members_running(), members_on("mariadb:11"), shape.UNSUPPORTED),
    "members 2 to 1": lambda: Case(members_running(), fewer_members, shape.CHANGE_REFUSED),
    "synchronous to asynchronous": lambda: Case(members_running(), asynchronous, shape.CHANGE_REFUSED),
    "PGPASSWORD with members": lambda: Case(members_running(), pgpassword, shape.PASSWORD_REFUSED),
    "members without credentials": lambda: Case(members_running(), credentials_removed, shape.CREDENTIALS_MISSING),
    "single copies to members": lambda: Case(
        single_copies_running(), members_on("registry.example.com/postgres-patroni:16-4.1.6"), shape.CHANGE_REFUSED
    ),
    "a name too long for members": lambda: Case(
        single_copies_running(LONG_NAME), members_on("postgres:17"), shape.NAME_TOO_LONG
    ),
    "single MariaDB copies to members": lambda: Case(
        single_copies_running(image="mariadb:11"), members_on("mariadb:11.4"), shape.UNSUPPORTED
    ),
}


def test_every_refusal_reason_has_a_case() -> None:
    built = {case().reason for case in CASES.values()}
    assert built == set(shape.REFUSAL_REASONS)


def sync(asked: Obj) -> Obj:
    body: Obj = handler.sync(json.dumps(asked).encode(), finalize=False, now=at("2026-05-05T05:05:05Z")).body
    return body


def refused(case: Case, *, roll_now: bool) -> tuple[list[Obj], Obj]:
    """The children the running ShardDB is answered with unedited, and the answer to the refused edit
    (with a roll asked on demand if ``roll_now``)."""
    asked = copy.deepcopy(case.running)
    parent = asked["parent"]
    case.edit(parent["spec"])
    parent["metadata"]["generation"] = parent["metadata"].get("generation", 1) + 1
    if roll_now:
        parent["metadata"].setdefault("annotations", {})[names.APPLY_TEMPLATES_ANNOTATION] = "now"
    running: list[Obj] = sync(case.running)["children"]
    return running, sync(asked)


def by_name(children: list[Obj], kinds: frozenset[str] | None = None) -> dict[tuple[str, str], Obj]:
    return {
        (each["kind"], each["metadata"]["name"]): each for each in children if kinds is None or each["kind"] in kinds
    }


@pytest.mark.parametrize("roll_now", [False, True], ids=["edited", "roll asked"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_refused_change_is_degraded_naming_its_reason(name: str, roll_now: bool) -> None:
    case = CASES[name]()
    _, body = refused(case, roll_now=roll_now)
    degraded = next(c for c in body["status"]["conditions"] if c["type"] == "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", case.reason)


@pytest.mark.parametrize("roll_now", [False, True], ids=["edited", "roll asked"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_refused_change_moves_no_template_and_no_replica_count(name: str, roll_now: bool) -> None:
    running, body = refused(CASES[name](), roll_now=roll_now)
    workloads = frozenset({"StatefulSet", "Deployment"})
    before, after = by_name(running, workloads), by_name(body["children"], workloads)
    assert set(after) == set(before)
    for key, obj in before.items():
        assert after[key]["spec"]["template"] == obj["spec"]["template"], key
        assert after[key]["spec"].get("replicas") == obj["spec"].get("replicas"), key


@pytest.mark.parametrize("roll_now", [False, True], ids=["edited", "roll asked"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_refused_change_starts_no_job_and_grants_no_role(name: str, roll_now: bool) -> None:
    running, body = refused(CASES[name](), roll_now=roll_now)
    assert set(by_name(body["children"], ACTING_KINDS)) <= set(by_name(running, ACTING_KINDS))


@pytest.mark.parametrize("name", list(CASES))
def test_a_refused_change_deletes_no_child(name: str) -> None:
    running, body = refused(CASES[name](), roll_now=False)
    assert set(by_name(running)) <= set(by_name(body["children"]))
