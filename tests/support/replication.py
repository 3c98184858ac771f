"""ShardDBs with members, the children the replication renderers make of them and Patroni's marks as the
hooks read them, as the decision tests and the cluster tier's round trip on the real API server use them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hooks import handler, names, pod_templates
from hooks.names import (
    FOLLOWER_LABEL_VALUE,
    LEADER_LABEL_VALUE,
    PRIMARY,
    ROLE_LABEL,
    STATUS_ANNOTATION,
    member_name,
    role_service_name,
    sync_config_map,
)
from hooks.replication import config as patroni_config
from hooks.replication import objects as patroni_objects
from hooks.replication import template as member_pods
from hooks.replication.marks import MemberPod
from hooks.replication.shape import CREDENTIALS as CREDENTIALS_NEEDED
from hooks.replication.shape import Plan
from hooks.spec import ShardDBSpec

Obj = dict[str, Any]

PATRONI_IMAGE = "registry.example.com/postgres-patroni:15-4.1.5"
# Every credential a member needs (``shape.CREDENTIALS``), each from the user's Secret, as a user writes them.
CREDENTIALS: list[Obj] = [
    {"name": name, "valueFrom": {"secretKeyRef": {"name": "demo-patroni", "key": name.lower()}}}
    for name in CREDENTIALS_NEEDED
]
BASE: Obj = {"shards": 2, "dbImage": PATRONI_IMAGE, "cache": {"image": "redis:7"}, "db": {"env": CREDENTIALS}}
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
    """A ShardDB's spec: two shards of the Patroni image, plus ``fields``."""
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
        patroni_objects.ShardSet(shard, member_pods.member_template("demo", shard, chosen, plan, base))
        for shard in range(shards)
    ]
    return patroni_objects.children("demo", "shop", chosen, plan, sets, claims())


def statefulset(objects: list[Obj], shard: int = 0) -> Obj:
    """A shard's StatefulSet among the rendered children."""
    return child(objects, "StatefulSet", f"demo-db-{shard}")


def container(objects: list[Obj], shard: int = 0) -> Obj:
    """The ``db`` container of a shard's member template."""
    found: list[Obj] = statefulset(objects, shard)["spec"]["template"]["spec"]["containers"]
    (db,) = [each for each in found if each["name"] == "db"]
    return db


def config(objects: list[Obj], shard: int = 0) -> Obj:
    """Patroni's configuration as a shard's member template carries it (the annotation its file is projected from)."""
    annotations = statefulset(objects, shard)["spec"]["template"]["metadata"]["annotations"]
    loaded: Obj = json.loads(annotations[patroni_config.CONFIG_ANNOTATION])
    return loaded


# --- a ShardDB with members through the wired hooks: what Metacontroller and Patroni show them ---------

NOW = "2026-05-05T05:05:05Z"
CREATED = "2026-05-05T05:00:00Z"
FIXED = datetime(2026, 5, 5, 5, 5, 5, tzinfo=UTC)


def parent(fields: Obj | None = None, *, members_count: int = 2, status: Obj | None = None) -> Obj:
    """A ShardDB with ``members_count`` members per shard, as Metacontroller sends it."""
    body: Obj = {**BASE, "replication": {"members": members_count}, **(fields or {})}
    out: Obj = {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND,
        "metadata": {"name": "demo", "namespace": "shop", "generation": 1, "creationTimestamp": CREATED},
        "spec": body,
    }
    if status is not None:
        out["status"] = status
    return out


def applied(children: list[Obj], *, ready: bool = True, seeded: bool = True) -> dict[str, dict[str, Obj]]:
    """The answer's children as Metacontroller next reports them: keyed ``Kind.apiVersion``, then name.

    Their controllers have caught up: each StatefulSet and the cache report every replica
    (ready ones if ``ready``), and a seed Job has succeeded if ``seeded``.
    """
    out: dict[str, dict[str, Obj]] = {}
    for child in children:
        obj = json.loads(json.dumps(child))
        obj["metadata"].update(namespace="shop", generation=1, creationTimestamp=CREATED)
        replicas = obj.get("spec", {}).get("replicas")
        if obj["kind"] == "StatefulSet":
            obj["status"] = {
                "replicas": replicas,
                "readyReplicas": replicas if ready else 0,
                "updatedReplicas": replicas,
                "observedGeneration": 1,
                "currentRevision": "r1",
                "updateRevision": "r1",
            }
        elif obj["kind"] == "Deployment":
            obj["status"] = {
                "replicas": replicas,
                "readyReplicas": replicas if ready else 0,
                "updatedReplicas": replicas,
                "observedGeneration": 1,
            }
        elif obj["kind"] == "Job" and seeded:
            obj["status"] = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
        out.setdefault(f"{obj['kind']}.{obj['apiVersion']}", {})[obj["metadata"]["name"]] = obj
    return out


# The primary's WAL position in the samples: a byte count, as Patroni writes every position.
HEAD_LSN = 67109016


def patroni_status(
    address: str,
    role: str,
    *,
    state: str = "running",
    xlog_location: int | None = HEAD_LSN,
    replay_lsn: int | None = None,
    receive_lsn: int | None = None,
    replication_state: str | None = None,
    timeline: int | None = 1,
) -> str:
    """A member's ``status`` annotation byte for byte as Patroni 4.1 writes it (``Ha.touch_member``): its keys in
    that order, compact JSON; a position or state it has not read is left out, as Patroni leaves it."""
    data: Obj = {
        "conn_url": f"postgres://{address}:5432/postgres",
        "api_url": f"https://{address}:8008/patroni",
        "state": state,
        "role": role,
        "version": patroni_config.PATRONI_VERSION,
    }
    optional = {
        "xlog_location": xlog_location,
        "replay_lsn": replay_lsn,
        "receive_lsn": receive_lsn,
        "replication_state": replication_state,
        "timeline": timeline,
    }
    data.update((key, value) for key, value in optional.items() if value is not None)
    return json.dumps(data, separators=(",", ":"))


def member_pod(shard: int, member: int, role: str | None, *, streaming: bool = True, behind: int = 0) -> Obj:
    """A running member pod as Patroni marks it: its role label and its status annotation.

    A standby has received and replayed up to ``behind`` bytes short of the primary's position.
    """
    labels = {**member_pods.member_selector("demo", shard)}
    if role is not None:
        labels[ROLE_LABEL] = role
    address = f"10.0.{shard}.{10 + member}"
    if role == LEADER_LABEL_VALUE:
        status = patroni_status(address, "primary")
    else:
        position = HEAD_LSN - behind
        status = patroni_status(
            address,
            "replica",
            xlog_location=position,
            replay_lsn=position,
            receive_lsn=position,
            replication_state="streaming" if role == FOLLOWER_LABEL_VALUE and streaming else None,
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": member_name("demo", shard, member),
            "namespace": "shop",
            "labels": labels,
            "annotations": {STATUS_ANNOTATION: status},
            "creationTimestamp": CREATED,
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def sync_record(shard: int, leader: int = 0, standby: int = 1) -> Obj:
    """Patroni's ``<scope>-sync`` ConfigMap: which member leads and which is its synchronous standby."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": sync_config_map("demo", shard),
            "namespace": "shop",
            "annotations": {
                "leader": member_name("demo", shard, leader),
                "sync_standby": member_name("demo", shard, standby),
            },
        },
    }


def config_record(shard: int, history: str) -> Obj:
    """Patroni's ``<scope>-config`` ConfigMap, its ``history`` annotation as written."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"demo-db-{shard}-config", "namespace": "shop", "annotations": {"history": history}},
    }


# Shard 1 switched over to member 0 once, as Patroni 4.1 records it in ``history``.
SWITCHED = '[[1,50331808,"no recovery target specified","2026-05-05T05:01:02.345678+00:00","demo-db-1-0"]]'


def failed_over() -> Obj:
    """The running ShardDB's answer once shard 1 recorded a switchover: every status field written for members."""
    running = stages()["running"]
    marks = healthy() + [sync_record(s) for s in range(2)] + [primary_slice(s) for s in range(2)]
    return answer(request(parent(), applied(running["children"]), [*marks, config_record(1, SWITCHED)]))


def primary_slice(shard: int, member: int = 0, ready: bool = True) -> Obj:
    """The EndpointSlice of a shard's ``-primary`` Service, with its primary as an endpoint."""
    service = role_service_name("demo", shard, PRIMARY)
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": f"{service}-x1", "namespace": "shop", "labels": {names.SERVICE_NAME_LABEL: service}},
        "endpoints": [
            {"conditions": {"ready": ready}, "targetRef": {"kind": "Pod", "name": member_name("demo", shard, member)}}
        ],
    }


def healthy(shards: int = 2) -> list[Obj]:
    """Every shard led by member 0, with member 1 streaming as its synchronous standby."""
    return [
        pod
        for shard in range(shards)
        for pod in (member_pod(shard, 0, LEADER_LABEL_VALUE), member_pod(shard, 1, FOLLOWER_LABEL_VALUE))
    ]


def request(
    the_parent: Obj,
    children: dict[str, dict[str, Obj]] | None = None,
    related: list[Obj] = (),  # type: ignore[assignment]
    *,
    finalizing: bool = False,
) -> Obj:
    """A sync (or finalize) request: ``related`` objects grouped as Metacontroller groups them."""
    groups: dict[str, dict[str, Obj]] = {}
    for obj in related:
        groups.setdefault(f"{obj['kind']}.{obj['apiVersion']}", {})[obj["metadata"]["name"]] = obj
    return {"parent": the_parent, "children": children or {}, "related": groups, "finalizing": finalizing}


def answer(body: Obj, *, finalize: bool = False) -> Obj:
    """The hooks' answer, at a fixed clock reading."""
    reply: Obj = handler.sync(json.dumps(body).encode(), finalize=finalize, now=lambda: FIXED).body
    return reply


def kinds_named(children: list[Obj]) -> set[tuple[str, str]]:
    return {(child["kind"], child["metadata"]["name"]) for child in children}


def child(children: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [each for each in children if each["kind"] == kind and each["metadata"]["name"] == name]
    return found


def stages(shards: int = 2) -> dict[str, Obj]:
    """The answers of a ShardDB with two members per shard, stage by stage: new, shards ready, seeded and
    registered (the cache asked for), the cache running; and its teardown, cache first, then every member."""
    new = answer(request(parent()))
    ready = answer(
        request(parent(), applied(new["children"]), healthy(shards) + [sync_record(s) for s in range(shards)])
    )
    seeded_children = applied(ready["children"])
    marks = healthy(shards) + [sync_record(s) for s in range(shards)] + [primary_slice(s) for s in range(shards)]
    registered = answer(request(parent(), seeded_children, marks))
    running = answer(request(parent(), applied(registered["children"]), marks))
    stopping = answer(request(parent(), applied(running["children"]), marks, finalizing=True), finalize=True)
    drained = answer(request(parent(), applied(stopping["children"]), marks, finalizing=True), finalize=True)
    return {
        "new": new,
        "ready": ready,
        "registered": registered,
        "running": running,
        "stopping": stopping,
        "drained": drained,
    }


# --- Patroni's marks as the hooks read them (``hooks/replication/marks.py``) ---------------------------------


def primary(name: str = "demo-db-0-0", **fields: Any) -> MemberPod:
    """Shard 0's primary as read from its marks: labelled primary, Ready and running (``fields`` change it)."""
    values: Obj = {"role": "primary", "ready": True, "state": "running", **fields}
    return MemberPod(name, **values)


def standby(name: str = "demo-db-0-1", **fields: Any) -> MemberPod:
    """Shard 0's standby as read from its marks: labelled replica, Ready, running and streaming."""
    values: Obj = {"role": "replica", "ready": True, "state": "running", "replication_state": "streaming", **fields}
    return MemberPod(name, **values)


def marked(name: str, role: str | None, status: str) -> MemberPod:
    """A member pod read from Patroni's marks: its role label and its ``status`` annotation."""
    labels = {names.ROLE_LABEL: role} if role else {}
    pod: Obj = {"metadata": {"name": name, "labels": labels, "annotations": {"status": status}}}
    return MemberPod.from_pod(pod)


def following(behind_received: int, behind_replayed: int) -> str:
    """A streaming standby's annotation: it received and replayed up to so many bytes short of the primary."""
    received, replayed = HEAD_LSN - behind_received, HEAD_LSN - behind_replayed
    return patroni_status(
        "10.0.0.11",
        "replica",
        xlog_location=max(received, replayed),
        replay_lsn=replayed,
        receive_lsn=received,
        replication_state="streaming",
    )
