"""Once a child is stored, asking again for it makes Metacontroller write nothing.

Each round creates and updates children for real, the way Metacontroller does
(``testbed/models/metacontroller.py``); a second round over the same observed world must
then send no update at all, in every phase of a life from creation to
finalization, and for values a user spells differently from the API server.
"""

from __future__ import annotations

from typing import Any

import pytest

from hooks.names import SEEDED_SHARDS_ANNOTATION
from testbed.models.metacontroller import LAST_APPLIED

from ..support.kube import Kube
from ..support.samples import SPEC
from .loop import Loop

Obj = dict[str, Any]


def _idle_round_sends_nothing(loop: Loop) -> None:
    """Ask again with nothing changed: any update now would be sent on every resync."""
    before = len(loop.updates)
    phase = loop.round()["status"]["phase"]
    assert loop.updates[before:] == [], f"no-op updates in phase {phase}"


def _walk_to(loop: Loop, phase: str, max_rounds: int = 12) -> list[str]:
    """Rounds until ``phase``, with an idle round after each one; the phases passed through."""
    seen = []
    for _ in range(max_rounds):
        answer = loop.round()
        seen.append(answer["status"]["phase"])
        _idle_round_sends_nothing(loop)
        if seen[-1] == phase:
            return seen
        loop.settle()
    raise AssertionError(f"phase {phase} not reached: {seen}")


@pytest.fixture
def loop(kube: Kube, namespace: str) -> Loop:
    return Loop(kube, namespace)


def _fields(update: tuple[str, str, list[str]]) -> list[str]:
    """The fields an update changed, the last-applied annotation aside."""
    return [line.split(":", 1)[0] for line in update[2] if LAST_APPLIED not in line]


def test_bring_up_updates_only_to_remember_the_seed(loop: Loop) -> None:
    """Creates and status writes, plus one deliberate write: the seed memory on the StatefulSet."""
    loop.create(SPEC)
    seen = _walk_to(loop, "Available")
    assert {"Provisioning", "Seeding", "Available"} <= set(seen)
    assert [(kind, name) for kind, name, _ in loop.updates] == [("StatefulSet", "demo-db")]
    assert _fields(loop.updates[0]) == [f".metadata.annotations.{SEEDED_SHARDS_ANNOTATION}"]


def test_stored_templates_read_as_rolled_out(loop: Loop) -> None:
    """What the API server stored contains every field the hooks render: no rollout is left to report."""
    loop.create(SPEC)
    _walk_to(loop, "Available")
    progressing = next(c for c in loop.answers[-1]["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "Complete")


def test_scale_up_updates_the_statefulset_once_then_nothing(loop: Loop) -> None:
    loop.create(SPEC)
    _walk_to(loop, "Available")
    before = len(loop.updates)
    loop.edit({"shards": 5})
    loop.round()
    assert [_fields(update) for update in loop.updates[before:]] == [[".spec.replicas"]]
    _idle_round_sends_nothing(loop)
    loop.settle()
    _walk_to(loop, "Available")


def test_teardown_updates_only_to_scale_to_zero(loop: Loop) -> None:
    loop.create(SPEC)
    _walk_to(loop, "Available")
    before = len(loop.updates)
    loop.delete()
    assert loop.round()["status"]["phase"] == "DrainingCache"
    _idle_round_sends_nothing(loop)
    loop.world.run_cache()
    loop.world.remove_pods("cache")
    assert loop.round()["status"]["phase"] == "DrainingShards"
    _idle_round_sends_nothing(loop)
    teardown = [(update[0], _fields(update)) for update in loop.updates[before:]]
    assert teardown == [("Deployment", [".spec.replicas"]), ("StatefulSet", [".spec.replicas"])]
    loop.world.run_statefulset()
    loop.world.remove_pods("db")
    assert loop.round()["finalized"] is True


def test_values_in_other_spellings_send_no_update(loop: Loop) -> None:
    spec = {**SPEC, "storage": {"size": "1024Mi"}, "drainGracePeriodSeconds": 60.0}
    loop.create(spec)
    _walk_to(loop, "Available")
    assert [_fields(update) for update in loop.updates] == [[f".metadata.annotations.{SEEDED_SHARDS_ANNOTATION}"]]
    assert loop.parent_stored["status"]["conditions"][2]["status"] == "False"  # Degraded: storage is as asked


def _pod_fields(component: str) -> Obj:
    """Every pod field, set as a user would (values a real pod accepts), quantities in odd spellings."""
    return {
        "resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"}, "limits": {"cpu": "1000m", "memory": "1.5Gi"}},
        "env": [
            {"name": "TZ", "value": "UTC"},
            {"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "demo-db", "key": "password"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "envFrom": [{"secretRef": {"name": "demo-extra"}, "prefix": "EXTRA_"}],
        "podMetadata": {"labels": {"team": "payments"}, "annotations": {"prometheus.io/scrape": "true"}},
        "nodeSelector": {"disktype": "ssd"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "topology.kubernetes.io/zone",
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/component": component}},
                        },
                    }
                ]
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app.kubernetes.io/component": component}},
            }
        ],
        "priorityClassName": "high",
        "podSecurityContext": {"runAsNonRoot": True, "runAsUser": 999, "fsGroup": 999},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }


EVERY_FIELD_IN_USE: Obj = {
    **SPEC,
    "imagePullSecrets": [{"name": "regcred"}],
    "serviceAccountName": "sharddb-demo",
    "db": {"port": 5433, "dataPath": "/var/lib/postgresql/data", **_pod_fields("db")},
    "cache": {"image": "redis:7", "replicas": 2, "port": 6380, **_pod_fields("cache")},
    "storage": {"size": "0.5Gi"},
}


def test_sharddb_using_every_pod_field_sends_no_update(loop: Loop) -> None:
    loop.create(EVERY_FIELD_IN_USE)
    _walk_to(loop, "Available")
    assert [_fields(update) for update in loop.updates] == [[f".metadata.annotations.{SEEDED_SHARDS_ANNOTATION}"]]
    progressing = next(c for c in loop.answers[-1]["status"]["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "Complete")


def test_every_pod_field_lands_in_the_stored_pods(loop: Loop) -> None:
    loop.create(EVERY_FIELD_IN_USE)
    _walk_to(loop, "Available")
    for kind, name in (("StatefulSet", "demo-db"), ("Deployment", "demo-cache")):
        pod = loop.kube.get(kind, name, loop.namespace)["spec"]["template"]
        container = pod["spec"]["containers"][0]
        assert container["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
        assert container["resources"]["limits"] == {"cpu": "1", "memory": "1536Mi"}
        assert container["envFrom"] == [{"secretRef": {"name": "demo-extra"}, "prefix": "EXTRA_"}]
        assert {"TZ", "POSTGRES_PASSWORD", "POD_IP"} <= {var["name"] for var in container["env"]}
        assert pod["metadata"]["labels"]["team"] == "payments"
        assert pod["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
        for field in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints", "priorityClassName"):
            assert field in pod["spec"], field
        assert pod["spec"]["serviceAccountName"] == "sharddb-demo"
        assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
        assert pod["spec"]["securityContext"]["fsGroup"] == 999
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
