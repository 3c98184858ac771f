"""``hooks/replication/shape.py``: what ``spec.replication`` asks for, given the shards that exist, and its refusals.

The plan decided from the spec and the shape the StatefulSets record, called directly: one member is
today's single copy, the engine, the changes refused once shards exist, the name too long for members,
and ``PGPASSWORD`` in the members' env. The refusals as the wired hooks report them are ``test_lifecycle.py``'s.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from hooks import names
from hooks.replication import shape
from hooks.replication.shape import SINGLE_COPY, Observed, Plan, decide
from hooks.spec import ShardDBSpec

from ...support.replication import CREDENTIALS, PATRONI_IMAGE, TWO, members, spec

# --- the field ----------------------------------------------------------------------------------------------


def test_a_sharddb_without_replication_has_one_member() -> None:
    assert spec().replication.members == 1
    assert decide("demo", spec(), Observed()).plan == SINGLE_COPY
    assert not SINGLE_COPY.patroni


def test_members_are_one_two_or_three() -> None:
    for count in (1, 2, 3):
        assert members(count).replication.members == count
    for count in (0, 4):
        with pytest.raises(ValidationError, match="members"):
            members(count)


def test_members_are_synchronous_by_default() -> None:
    asked = spec(replication={"members": 2})
    assert decide("demo", asked, Observed()).plan == Plan(2, synchronous=True)
    assert Plan(2, synchronous=True).synchronous_standbys == 1


def test_one_member_is_the_single_copy_whatever_synchronous_says() -> None:
    assert decide("demo", members(1, synchronous=True), Observed()).plan == SINGLE_COPY


# --- the engine ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "image",
    ["mariadb:10.11", "docker.io/library/mariadb:10.11", "mysql:8.4", "registry.example.com:5000/db/mariadb@sha256:ab"],
)
def test_mariadb_with_members_is_refused_naming_the_field(image: str) -> None:
    outcome = decide("demo", spec(dbImage=image, replication={"members": 2}), Observed())
    assert outcome.refusal is not None
    assert outcome.refusal.reason == "ReplicationUnsupported"
    assert "spec.replication.members" in outcome.refusal.message
    assert "MariaDB" in outcome.refusal.message


def test_a_refused_new_sharddb_gets_no_shards() -> None:
    assert decide("demo", spec(dbImage="mariadb:10.11", replication={"members": 2}), Observed()).plan is None


def test_a_refused_running_sharddb_keeps_its_shards_as_they_are() -> None:
    outcome = decide("demo", spec(dbImage="mariadb:10.11", replication={"members": 3}), Observed(single_copy=True))
    assert outcome.plan == SINGLE_COPY


def test_mariadb_with_one_member_is_not_refused() -> None:
    assert decide("demo", spec(dbImage="mariadb:10.11"), Observed()) == shape.Outcome(SINGLE_COPY)


@pytest.mark.parametrize("image", [PATRONI_IMAGE, "postgres:16", "ghcr.io/zalando/spilo-16:3.3-p1", "localhost/my-db"])
def test_an_image_not_named_for_mariadb_or_mysql_is_postgresql(image: str) -> None:
    assert shape.engine(image) is shape.Engine.POSTGRESQL


def test_a_registry_port_is_not_read_as_a_tag() -> None:
    assert shape.engine("mysql.example.com:5000/postgres:16") is shape.Engine.POSTGRESQL


# --- changes once shards exist ------------------------------------------------------------------------------


def test_single_copy_shards_are_not_given_members() -> None:
    outcome = decide("demo", members(2), Observed(single_copy=True))
    assert outcome.plan == SINGLE_COPY
    assert outcome.refusal is not None
    assert outcome.refusal.reason == "ReplicationChangeRefused"
    assert outcome.refusal.message.startswith("spec.replication.members may not change from 1 to 2")


def test_shards_with_members_are_never_made_single_copies() -> None:
    outcome = decide("demo", spec(), Observed(members=2, synchronous=True))
    assert outcome.plan == TWO
    assert outcome.refusal is not None
    assert "spec.replication.members may not change from 2 to 1" in outcome.refusal.message


def test_two_members_may_grow_to_three() -> None:
    assert decide("demo", members(3), Observed(members=2, synchronous=True)) == shape.Outcome(Plan(3, True))


def test_three_members_do_not_shrink_to_two() -> None:
    outcome = decide("demo", members(2), Observed(members=3, synchronous=True))
    assert outcome.plan == Plan(3, True)
    assert outcome.refusal is not None
    assert "from 3 to 2" in outcome.refusal.message


def test_synchronous_is_fixed_once_the_shards_exist() -> None:
    outcome = decide("demo", members(2, synchronous=False), Observed(members=2, synchronous=True))
    assert outcome.plan == TWO
    assert outcome.refusal is not None
    assert outcome.refusal.message.startswith("spec.replication.synchronous may not change from true to false")


# --- strict: writes wait rather than rest on one copy -------------------------------------------------------

STRICT = Plan(2, True, strict=True)


def strict(members_count: int = 2, value: bool = True) -> ShardDBSpec:
    return spec(replication={"members": members_count, "strict": value})


def test_members_are_not_strict_by_default() -> None:
    assert decide("demo", members(2), Observed()).plan == TWO


def test_strict_members_are_planned_strict() -> None:
    assert decide("demo", strict(), Observed()).plan == STRICT


def test_strict_on_asynchronous_members_the_crd_refuses_plans_them_asynchronous() -> None:
    """The CRD's CEL rule refuses it (the cluster tier shows it); the hooks never read strict without synchronous."""
    asked = spec(replication={"members": 2, "synchronous": False, "strict": True})
    assert decide("demo", asked, Observed()).plan == Plan(2, False)


@pytest.mark.parametrize(("was", "asked"), [(False, True), (True, False)])
def test_strict_is_fixed_once_the_shards_exist(was: bool, asked: bool) -> None:
    outcome = decide("demo", strict(value=asked), Observed(members=2, synchronous=True, strict=was))
    assert outcome.plan == Plan(2, True, strict=was)
    assert outcome.refusal is not None
    assert outcome.refusal.message.startswith(
        f"spec.replication.strict may not change from {str(was).lower()} to {str(asked).lower()}"
    )


def test_strict_members_grow_to_three_and_stay_strict() -> None:
    outcome = decide("demo", strict(3), Observed(members=2, synchronous=True, strict=True))
    assert (outcome.plan, outcome.refusal) == (Plan(3, True, strict=True), None)


def test_strict_is_recorded_on_the_statefulset_and_read_back() -> None:
    recorded = shape.record(STRICT)
    assert recorded[names.STRICT_ANNOTATION] == "true"
    assert Observed.from_annotations(False, [recorded]).plan == STRICT


def test_a_shard_that_is_not_strict_records_nothing_new() -> None:
    assert names.STRICT_ANNOTATION not in shape.record(TWO)


def test_an_unchanged_shape_is_not_refused() -> None:
    assert decide("demo", members(2), Observed(members=2, synchronous=True)) == shape.Outcome(TWO)


def test_the_shape_is_read_back_from_what_the_statefulsets_record() -> None:
    recorded = [shape.record(Plan(3, False))] * 2
    assert Observed.from_annotations(False, recorded) == Observed(members=3, synchronous=False)


def test_a_missing_or_bad_record_reads_as_no_members() -> None:
    bad = [{}, {names.MEMBERS_ANNOTATION: "two"}, {names.MEMBERS_ANNOTATION: "1"}]
    assert Observed.from_annotations(True, bad) == Observed(single_copy=True)


def test_statefulsets_that_disagree_read_as_the_larger_shape() -> None:
    recorded = [shape.record(Plan(2, True)), shape.record(Plan(3, True))]
    assert Observed.from_annotations(False, recorded).members == 3


# --- names --------------------------------------------------------------------------------------------------


def test_a_name_too_long_for_members_is_refused_and_todays_limit_stays() -> None:
    longest = "x" * names.MAX_REPLICATED_NAME_LENGTH
    assert decide(longest, members(2), Observed()).refusal is None
    outcome = decide(longest + "x", members(2), Observed())
    assert outcome.refusal is not None
    assert outcome.refusal.reason == "ReplicationNameTooLong"
    assert "spec.replication.members" in outcome.refusal.message
    assert decide(longest + "x", spec(), Observed()).refusal is None
    assert names.MAX_NAME_LENGTH == 49


# --- PGPASSWORD in the members' env -------------------------------------------------------------------------


SUPERUSER_PASSWORD = {"name": "PGPASSWORD", "valueFrom": {"secretKeyRef": {"name": "demo-db", "key": "password"}}}


def with_pgpassword(count: int) -> ShardDBSpec:
    return spec(replication={"members": count}, db={"env": [SUPERUSER_PASSWORD]})


def test_pgpassword_with_members_is_refused_naming_the_field_and_what_to_use() -> None:
    outcome = decide("demo", with_pgpassword(2), Observed())
    assert outcome.refusal is not None
    assert outcome.refusal.reason == "ReplicationPasswordRefused"
    assert outcome.refusal.message.startswith("spec.db.env[PGPASSWORD] is set")
    assert "POSTGRES_PASSWORD" in outcome.refusal.message


def test_a_new_sharddb_refused_for_pgpassword_gets_no_shards() -> None:
    assert decide("demo", with_pgpassword(2), Observed()).plan is None


def test_running_shards_refused_for_pgpassword_are_held_as_they_run() -> None:
    outcome = decide("demo", with_pgpassword(2), Observed(members=2, synchronous=True))
    assert (outcome.plan, outcome.hold) == (TWO, True)
    assert outcome.refusal is not None
    assert outcome.refusal.reason == shape.PASSWORD_REFUSED


def test_running_shards_refused_for_pgpassword_do_not_grow() -> None:
    outcome = decide("demo", with_pgpassword(3), Observed(members=2, synchronous=True))
    assert (outcome.plan, outcome.hold) == (TWO, True)


def test_a_refusal_of_the_shape_comes_before_pgpassword_and_still_holds_the_members() -> None:
    outcome = decide("demo", with_pgpassword(1), Observed(members=2, synchronous=True))
    assert outcome.refusal is not None
    assert outcome.refusal.reason == shape.CHANGE_REFUSED
    assert (outcome.plan, outcome.hold) == (TWO, True)


def test_pgpassword_with_one_member_is_not_refused() -> None:
    assert decide("demo", with_pgpassword(1), Observed()) == shape.Outcome(SINGLE_COPY)


def test_pgpassword_on_single_copies_asked_for_members_is_refused_as_a_change_and_held() -> None:
    outcome = decide("demo", with_pgpassword(2), Observed(single_copy=True))
    assert outcome.refusal is not None
    assert outcome.refusal.reason == shape.CHANGE_REFUSED
    assert (outcome.plan, outcome.hold) == (SINGLE_COPY, True)


def test_postgres_password_with_members_is_not_refused() -> None:
    env = [{"name": "POSTGRES_PASSWORD", "value": "x"}, *CREDENTIALS]
    assert decide("demo", spec(replication={"members": 2}, db={"env": env}), Observed()) == shape.Outcome(TWO)


# --- the credentials every member needs ------------------------------------------------------------------


def without(*names: str) -> list[Any]:
    return [var for var in CREDENTIALS if var["name"] not in names]


def test_members_with_every_credential_are_not_refused() -> None:
    assert decide("demo", spec(replication={"members": 2}), Observed()) == shape.Outcome(TWO)


@pytest.mark.parametrize("name", shape.CREDENTIALS)
def test_members_without_a_credential_are_refused_naming_its_field(name: str) -> None:
    outcome = decide("demo", spec(replication={"members": 2}, db={"env": without(name)}), Observed())
    assert outcome.refusal is not None
    assert outcome.refusal.reason == shape.CREDENTIALS_MISSING
    assert outcome.refusal.message.startswith(f"spec.db.env[{name}] is missing")


def test_every_missing_credential_is_named_at_once() -> None:
    outcome = decide("demo", spec(replication={"members": 2}, db={"env": []}), Observed())
    assert outcome.refusal is not None
    assert all(f"spec.db.env[{name}]" in outcome.refusal.message for name in shape.CREDENTIALS)


def test_a_new_sharddb_refused_for_credentials_gets_no_shards() -> None:
    assert decide("demo", spec(replication={"members": 2}, db={"env": []}), Observed()).plan is None


def test_running_shards_refused_for_credentials_are_held_as_they_run_and_do_not_grow() -> None:
    refused = spec(replication={"members": 3}, db={"env": without("PATRONI_RESTAPI_PASSWORD")})
    outcome = decide("demo", refused, Observed(members=2, synchronous=True))
    assert (outcome.plan, outcome.hold) == (TWO, True)


def test_one_member_needs_no_patroni_credential() -> None:
    assert decide("demo", spec(replication={"members": 1}, db={"env": []}), Observed()) == shape.Outcome(SINGLE_COPY)


def test_a_shape_refusal_comes_before_missing_credentials() -> None:
    outcome = decide("demo", spec(replication={"members": 1}, db={"env": []}), Observed(members=2, synchronous=True))
    assert outcome.refusal is not None
    assert outcome.refusal.reason == shape.CHANGE_REFUSED
