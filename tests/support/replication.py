"""ShardDBs with members and the children the replication renderers make of them, as the decision
tests and the cluster tier's round trip on the real API server both read them."""

from __future__ import annotations

from typing import Any

from hooks import names, patroni, pod_templates
from hooks.replication import Plan
from hooks.spec import ShardDBSpec

Obj = dict[str, Any]

PATRONI_IMAGE = "registry.example.com/postgres-patroni:15-4.1.5"
BASE: Obj = {"shards": 2, "dbImage": PATRONI_IMAGE, "cache": {"image": "redis:7"}}
TWO = Plan(members=2, synchronous=True)
OWNER: Obj = {
    "apiVersion": names.API_VERSION,
    "kind": names.KIND,
    "name": "demo",
    "uid": "00000000-0000-0000-0000-000000000000",
    "controller": True,
    "blockOwnerDeletion": True,
}


def spec(**fields: Any) -> ShardDBSpec:
    return ShardDBSpec.model_validate({**BASE, **fields})


def members(count: int, synchronous: bool = True) -> ShardDBSpec:
    return spec(replication={"members": count, "synchronous": synchronous})


def claims() -> list[Obj]:
    """Today's shard volume claim template, as the StatefulSet stores it."""
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": pod_templates.DATA_VOLUME, "labels": names.labels("demo", names.DB)},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "volumeMode": "Filesystem",
            },
            "status": {"phase": "Pending"},
        }
    ]


def rendered(the_spec: ShardDBSpec | None = None, plan: Plan = TWO, shards: int = 2) -> list[Obj]:
    chosen = the_spec or members(plan.members, plan.synchronous)
    base = pod_templates.db_template("demo", chosen)
    sets = [
        patroni.ShardSet(shard, patroni.member_template("demo", shard, chosen, plan, base)) for shard in range(shards)
    ]
    return patroni.children("demo", "shop", chosen, plan, sets, claims())
