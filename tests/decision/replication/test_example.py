"""``examples/sharddb-members.yaml`` through the wired hooks: its shards come up as Patroni's and it becomes Available.

The example's spec as the user writes it, under the name and namespace of the other samples here (Patroni's
marks in ``tests/support/replication.py`` are written for them), driven stage by stage as Metacontroller and
Patroni would: no stage refuses it, and the last is Available.
"""

from __future__ import annotations

from typing import Any

import yaml

from ...support.examples import EXAMPLES
from ...support.replication import answer, applied, healthy, parent, primary_slice, request, sync_record

Obj = dict[str, Any]
EXAMPLE = EXAMPLES / "sharddb-members.yaml"


def example_spec() -> Obj:
    (sharddb,) = [doc for doc in yaml.safe_load_all(EXAMPLE.read_text()) if doc and doc["kind"] == "ShardDB"]
    spec: Obj = sharddb["spec"]
    return spec


def condition(body: Obj, kind: str) -> Obj:
    found: Obj = next(c for c in body["status"]["conditions"] if c["type"] == kind)
    return found


def answers() -> list[Obj]:
    """The hooks' answers for the example: new, its shards led and in sync, seeded and registered, the cache running."""
    spec = example_spec()
    shards = spec["shards"]
    the_parent = parent(spec, members_count=spec["replication"]["members"])
    marks = healthy(shards) + [sync_record(shard) for shard in range(shards)]
    registered = marks + [primary_slice(shard) for shard in range(shards)]
    new = answer(request(the_parent))
    ready = answer(request(the_parent, applied(new["children"]), marks))
    seeded = answer(request(the_parent, applied(ready["children"]), registered))
    running = answer(request(the_parent, applied(seeded["children"]), registered))
    return [new, ready, seeded, running]


def test_the_example_with_members_is_never_refused_and_becomes_available() -> None:
    bodies = answers()
    reasons = [condition(body, "Degraded")["reason"] for body in bodies]
    assert not [reason for reason in reasons if reason.startswith("Replication")], reasons
    assert {"StatefulSet", "NetworkPolicy", "Role"} <= {child["kind"] for child in bodies[0]["children"]}
    assert condition(bodies[-1], "Available")["status"] == "True", bodies[-1]["status"]
    assert reasons[-1] == "AsExpected", bodies[-1]["status"]
    assert bodies[-1]["status"]["replication"]["members"] == 2
