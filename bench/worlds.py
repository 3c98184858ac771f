"""Realistic sync requests: an Available ShardDB of N shards, as Metacontroller sends it.

The shared ``World`` keeps pods small; a kubelet-managed StatefulSet pod read from
the API server carries much more (owner references, managed fields of two
managers, projected token volumes, five conditions). Request size drives parse
cost, so the benchmark pads pods to that real shape here.
"""

from __future__ import annotations

import json
from typing import Any

from hooks import handler
from testbed.models.world import CREATED, World, sharddb

Obj = dict[str, Any]

_KUBELET_STATUS_FIELDS: Obj = {
    "f:status": {
        "f:conditions": {
            f'k:{{"type":"{kind}"}}': {
                ".": {},
                "f:lastProbeTime": {},
                "f:lastTransitionTime": {},
                "f:status": {},
                "f:type": {},
            }
            for kind in ("ContainersReady", "Initialized", "PodReadyToStartContainers", "PodScheduled", "Ready")
        },
        "f:containerStatuses": {},
        "f:hostIP": {},
        "f:hostIPs": {},
        "f:phase": {},
        "f:podIP": {},
        "f:podIPs": {".": {}, 'k:{"ip":"10.1.0.1"}': {".": {}, "f:ip": {}}},
        "f:startTime": {},
    }
}


def _controller_spec_fields(component: str) -> Obj:
    container = {
        ".": {},
        "f:image": {},
        "f:imagePullPolicy": {},
        "f:lifecycle": {".": {}, "f:preStop": {".": {}, "f:exec": {".": {}, "f:command": {}}}},
        "f:name": {},
        "f:ports": {".": {}},
        "f:readinessProbe": {".": {}, "f:failureThreshold": {}, "f:periodSeconds": {}, "f:tcpSocket": {}},
        "f:resources": {},
        "f:terminationMessagePath": {},
        "f:terminationMessagePolicy": {},
        "f:env": {".": {}, 'k:{"name":"SHARDDB_NAME"}': {".": {}, "f:name": {}, "f:value": {}}},
    }
    return {
        "f:metadata": {
            "f:generateName": {},
            "f:labels": {".": {}, "f:app.kubernetes.io/component": {}, "f:app.kubernetes.io/instance": {}},
            "f:ownerReferences": {".": {}, 'k:{"uid":"0"}': {}},
        },
        "f:spec": {
            "f:containers": {f'k:{{"name":"{component}"}}': container},
            "f:dnsPolicy": {},
            "f:enableServiceLinks": {},
            "f:restartPolicy": {},
            "f:schedulerName": {},
            "f:securityContext": {".": {}, "f:seccompProfile": {".": {}, "f:type": {}}},
            "f:terminationGracePeriodSeconds": {},
        },
    }


class ApiServerWorld(World):
    """A ``World`` whose pods carry the fields a real API server returns for them."""

    def _pod(self, name: str, component: str, ready: bool, image: str) -> Obj:
        pod = super()._pod(name, component, ready, image)
        meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
        owner_kind, owner = ("StatefulSet", f"{self.name}-db") if component == "db" else ("ReplicaSet", name[:-2])
        meta["generateName"] = owner + "-"
        meta["labels"].update(
            {"controller-revision-hash": f"{owner}-5d4f8c7b9", "statefulset.kubernetes.io/pod-name": name}
            if component == "db"
            else {"pod-template-hash": "7c9f6b8d5"}
        )
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner_kind,
                "name": owner,
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        meta["managedFields"] = [
            {
                "manager": "kube-controller-manager",
                "operation": "Update",
                "apiVersion": "v1",
                "time": CREATED,
                "fieldsType": "FieldsV1",
                "fieldsV1": _controller_spec_fields(component),
            },
            {
                "manager": "kubelet",
                "operation": "Update",
                "apiVersion": "v1",
                "time": CREATED,
                "fieldsType": "FieldsV1",
                "fieldsV1": _KUBELET_STATUS_FIELDS,
                "subresource": "status",
            },
        ]
        container = spec["containers"][0]
        container.update(
            env=[{"name": "SHARDDB_NAME", "value": self.name}, {"name": "SHARDDB_SERVICE", "value": f"{self.name}-db"}],
            readinessProbe={
                "tcpSocket": {"port": component},
                "timeoutSeconds": 1,
                "periodSeconds": 5,
                "successThreshold": 1,
                "failureThreshold": 3,
            },
            lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "pg_ctl stop -m smart || true"]}}},
        )
        container["volumeMounts"].insert(0, {"name": "data", "mountPath": "/var/lib/postgresql/data"})
        spec.update(
            enableServiceLinks=True,
            preemptionPolicy="PreemptLowerPriority",
            priority=0,
            securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
            serviceAccount="default",
            volumes=[
                {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}},
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                },
            ],
        )
        spec["tolerations"].append(
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            }
        )
        if component == "db":
            spec.update(hostname=name, subdomain=f"{self.name}-db")
        for condition in status["conditions"]:
            condition["lastProbeTime"] = None
        status["conditions"][:0] = [
            {
                "type": "PodReadyToStartContainers",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": CREATED,
            },
            {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": CREATED},
        ]
        status.update(hostIPs=[{"ip": "10.0.0.1"}])
        status["containerStatuses"][0].update(
            lastState={},
            volumeMounts=[
                {"name": "data", "mountPath": "/var/lib/postgresql/data"},
                {
                    "name": "kube-api-access",
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    "readOnly": True,
                    "recursiveReadOnly": "Disabled",
                },
            ],
        )
        return pod


def available_world(shards: int, name: str = "demo") -> World:
    """Drive a ShardDB through the real hook until it is Available, like the cluster would."""
    world = ApiServerWorld(sharddb(name=name, shards=shards))
    for _ in range(12):
        world.apply(handler.sync(json.dumps(world.request()).encode(), finalize=False).body)
        if world.parent["status"]["phase"] == "Available":
            return world
        world.run_statefulset()
        for job in world.jobs():
            if "Complete" not in json.dumps(job.get("status", {})):
                world.finish_job(int(job["metadata"]["name"].rsplit("-", 1)[1]))
        world.run_cache()
    raise RuntimeError(f"a {shards}-shard ShardDB did not become Available: {world.parent.get('status')}")


def sync_request(shards: int) -> bytes:
    """The sync request body for an Available ShardDB, serialized as Metacontroller does (sorted keys)."""
    return json.dumps(available_world(shards).request(), sort_keys=True, separators=(",", ":")).encode()
