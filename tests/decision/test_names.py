"""Names: the longest ShardDB name is derived from the name builders (members' too); the CRD and hooks hold to it."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from hooks import handler, names
from hooks.lifecycle import Phase, decide
from hooks.trouble.stuck import StuckPod
from testbed.models.world import Obj, World, bring_up, sharddb

from ..support.hook import direct
from ..support.snapshots import available, condition, snapshot

CRD = yaml.safe_load((Path(__file__).resolve().parents[2] / "crds" / "sharddb.yaml").read_text())
NAME_SCHEMA: Obj = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"]["properties"][
    "name"
]


def test_the_longest_name_leaves_every_derived_name_within_its_limit() -> None:
    for what, value, limit in names.derived("x" * names.MAX_NAME_LENGTH):
        assert len(value) <= limit, what


def test_one_character_more_breaks_a_derived_name() -> None:
    broken = [what for what, value, limit in names.derived("x" * (names.MAX_NAME_LENGTH + 1)) if len(value) > limit]
    assert broken == [names.binding_limit()[0]]


def test_the_shard_pods_revision_label_is_what_binds_today() -> None:
    assert names.binding_limit() == ("a shard pod's label controller-revision-hash", 63)
    assert 63 - len("-db-") - names.REVISION_HASH_MAX == names.MAX_NAME_LENGTH


def test_the_longest_name_with_members_leaves_every_member_name_within_its_limit() -> None:
    longest = "x" * names.MAX_REPLICATED_NAME_LENGTH
    for what, value, limit in names.replicated_derived(longest):
        assert len(value) <= limit, what
    assert names.replicated_binding_limit() == "a member pod's label controller-revision-hash"


def test_patronis_own_configmaps_are_named_after_its_scope() -> None:
    assert names.patroni_owned("demo-db-0") == {
        "demo-db-0-leader",
        "demo-db-0-config",
        "demo-db-0-sync",
        "demo-db-0-failover",
        "demo-db-0-history",
    }


def test_the_crd_rule_admits_exactly_the_longest_name() -> None:
    rules = NAME_SCHEMA["x-kubernetes-validations"]
    lengths = [int(m.group(1)) for rule in rules if (m := re.fullmatch(r"size\(self\) <= (\d+)", rule["rule"]))]
    assert lengths == [names.MAX_NAME_LENGTH]
    assert f"at most {names.MAX_NAME_LENGTH} characters" in " ".join(rules[0]["message"].split())


def test_the_crd_rule_for_members_admits_exactly_the_longest_name_with_members() -> None:
    root = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    (rule,) = [each for each in root["x-kubernetes-validations"] if "spec.replication.members" in each["rule"]]
    assert re.match(rf"size\(self\.metadata\.name\) <= {names.MAX_REPLICATED_NAME_LENGTH}\b", rule["rule"])
    assert f"at most {names.MAX_REPLICATED_NAME_LENGTH} characters" in " ".join(rule["message"].split())
    assert rule["fieldPath"] == ".spec.replication.members"
    assert rule["optionalOldSelf"] is True, "an object that has members already is never refused for its name"


def test_the_crd_and_the_hooks_refuse_the_same_name_shapes() -> None:
    rule = next(rule["rule"] for rule in NAME_SCHEMA["x-kubernetes-validations"] if "matches" in rule["rule"])
    assert rule == f"self.matches('{names.NAME_PATTERN}')"


def test_shard_ordinals_and_seed_counts_are_parsed_where_the_names_are_built() -> None:
    assert names.shard_ordinal("shop", names.shard_pod_name("shop", 17)) == 17
    assert names.seed_job_shards("shop", names.seed_job_name("shop", 5)) == 5
    assert names.shard_ordinal("shop", "shop-db-017") is None
    assert names.shard_ordinal("shop", "shopx-db-1") is None
    assert names.seed_job_shards("shop", "shop-seed-0") is None
    assert names.count("12") == 12
    assert names.count("1e3") == 0


def test_a_name_too_long_is_refused_with_the_limit_and_why() -> None:
    reason, message = names.unfit("orders-eu-west-primary-payments-ledger-shard-group-a1") or ("", "")
    assert reason == "NameTooLong"
    assert f"has 53 characters; at most {names.MAX_NAME_LENGTH} fit" in message


def test_a_name_no_service_can_carry_is_name_invalid() -> None:
    assert (names.unfit("1shop") or ("",))[0] == "NameInvalid"
    assert (names.unfit("shop.eu") or ("",))[0] == "NameInvalid"
    assert names.unfit("shop") is None


TOO_LONG = "orders-eu-west-primary-payments-ledger-shard-group-a1"


def test_a_too_long_name_gets_no_children_and_says_why() -> None:
    answer = direct(World(sharddb(TOO_LONG)).request(), False)
    assert answer["children"] == []
    assert answer["status"]["phase"] == "NameTooLong"
    status = {c["type"]: (c["status"], c["reason"]) for c in answer["status"]["conditions"]}
    assert status == {
        "Available": ("False", "NameTooLong"),
        "Progressing": ("False", "NameTooLong"),
        "Degraded": ("True", "NameTooLong"),
    }


def test_a_too_long_name_keeps_the_children_that_exist() -> None:
    """Data safety: children an older release created are answered as they are, never deleted."""
    world = World(sharddb("shop"))
    bring_up(world, direct)
    request = json.loads(json.dumps(world.request()).replace('"shop"', f'"{TOO_LONG}"'))
    answer = direct(request, False)
    observed = sorted(f"{o['kind']}/{o['metadata']['name']}" for g in request["children"].values() for o in g.values())
    assert sorted(f"{c['kind']}/{c['metadata']['name']}" for c in answer["children"]) == observed
    assert answer["status"]["phase"] == "NameTooLong"


def test_a_too_long_name_still_tears_down_in_order() -> None:
    world = World(sharddb(TOO_LONG))
    world.delete()
    answer = direct(world.request(), True)
    assert answer["finalized"] is True


def test_customize_asks_for_no_pods_by_a_label_no_pod_can_carry() -> None:
    body = json.dumps({"controller": {}, "parent": sharddb("x" * 64)}).encode()
    assert handler.customize(body) == {"relatedResources": []}


# --- failing pods in the decision ----------------------------------------------------------


def stuck(name: str, reason: str, component: str = "db", ordinal: int = 0, detail: str = "d") -> StuckPod:
    return StuckPod(name, component, reason, detail, ordinal)


def degraded_message(pods: tuple[StuckPod, ...], **changes: Any) -> str:
    snap = replace(available(**changes), stuck_pods=tuple(sorted(pods, key=StuckPod.sort_key)))
    return next(c.message for c in decide(snap).conditions if c.type == "Degraded")


def test_pods_furthest_from_running_come_first_then_by_ordinal() -> None:
    message = degraded_message(
        (
            stuck("demo-db-10", "CrashLoopBackOff", ordinal=10),
            stuck("demo-db-9", "CrashLoopBackOff", ordinal=9),
            stuck("demo-db-11", "Unschedulable", ordinal=11),
        )
    )
    assert message.index("demo-db-11: Unschedulable") < message.index("demo-db-9:") < message.index("demo-db-10:")


def test_at_most_three_pods_are_named_per_component_and_the_rest_counted() -> None:
    pods = tuple(stuck(f"demo-db-{i}", "ImagePullBackOff", ordinal=i) for i in range(5))
    message = degraded_message(pods)
    assert "demo-db-2: ImagePullBackOff (d) and 2 more" in message
    assert "demo-db-3" not in message


def test_failing_shards_are_reported_before_a_failing_cache() -> None:
    pods = (stuck("demo-cache-1", "ImagePullBackOff", "cache"), stuck("demo-db-1", "CrashLoopBackOff", ordinal=1))
    decision = decide(replace(available(), stuck_pods=pods))
    assert condition(decision, "Degraded") == (True, "ShardPodsFailing")
    message = next(c.message for c in decision.conditions if c.type == "Degraded")
    assert message.index("shard pods cannot start") < message.index("cache pods cannot start")


def test_the_degraded_message_is_capped() -> None:
    long = "x" * 500
    pods = tuple(
        stuck(f"demo-{c}-{i}", "CreateContainerError", c, i, long) for c in ("db", "seed", "cache") for i in range(3)
    )
    assert len(degraded_message(pods)) <= 1024


def test_an_unfit_name_wins_over_everything_but_deletion() -> None:
    snap = replace(snapshot(), name=TOO_LONG)
    assert decide(snap).phase == Phase.NAME_TOO_LONG
    assert decide(replace(snap, finalizing=True)).phase != Phase.NAME_TOO_LONG
