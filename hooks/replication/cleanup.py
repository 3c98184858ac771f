"""Patroni's state removed when a ShardDB with members is deleted: a Job, and the Role it alone runs with.

Patroni writes ``<scope>-leader``, ``-config``, ``-sync`` and ``-failover`` ConfigMaps with no owner,
so the garbage collector keeps them after the ShardDB is gone; a ShardDB re-created under the same
name would then find ``-config``'s initialize key and its members would wait for a leader instead
of bootstrapping. They are never children (Metacontroller would fight Patroni over them): the
finalize hook, once every member pod is gone, runs this Job, which deletes them by Patroni's own
labels, as ``patronictl remove`` does. Hibernation never runs it: a wake keeps Patroni's history.

The Job runs ``dbImage`` (with members, a Patroni image, so it has ``python3``) and a short script on
Python's standard library alone, against the API server with its pod's ServiceAccount token: no
kubectl, no client library. Its Role grants ``list`` and ``deletecollection`` on ConfigMaps and is
rendered, with its binding, only during that step of a deletion, so Patroni never holds it while it runs.
"""

from __future__ import annotations

from typing import Any

from .. import names, scripts
from ..spec import ShardDBSpec

Obj = dict[str, Any]

COMPONENT = names.CLEANUP
RBAC_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (("configmaps", ("deletecollection", "list")),)
BACKOFF_LIMIT = 6
DEADLINE_SECONDS = 600

# Deletes every ConfigMap the selector matches, then lists them until none is left. A 403 right
# after the Role is created is the authorizer catching up: it is retried, as any other failure.
SCRIPT = """\
import json, os, ssl, sys, time, urllib.error, urllib.parse, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(sa + "/token").read().strip()
namespace = open(sa + "/namespace").read().strip()
host = os.environ["KUBERNETES_SERVICE_HOST"]
host = "[" + host + "]" if ":" in host else host
query = urllib.parse.urlencode({"labelSelector": os.environ["SHARDDB_PATRONI_SELECTOR"]})
port = os.environ["KUBERNETES_SERVICE_PORT"]
url = "https://%s:%s/api/v1/namespaces/%s/configmaps?%s" % (host, port, namespace, query)
context = ssl.create_default_context(cafile=sa + "/ca.crt")
def call(method):
    request = urllib.request.Request(url, method=method, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        return json.load(response)
for attempt in range(30):
    try:
        call("DELETE")
        left = [item["metadata"]["name"] for item in call("GET").get("items") or []]
        if not left:
            print("Patroni's ConfigMaps removed")
            sys.exit(0)
        print("still there:", ", ".join(left))
    except (urllib.error.URLError, OSError, ValueError) as error:
        print("retrying:", error)
    time.sleep(2)
sys.exit(1)
"""


def selector(parent: str) -> str:
    """Patroni's labels on every ConfigMap it writes for this ShardDB's shards: its ``labels`` and the scope label."""
    labels = names.selector_labels(parent, names.DB)
    return ",".join([*(f"{key}={value}" for key, value in labels.items()), names.SCOPE_LABEL])


def _meta(parent: str) -> Obj:
    return {"name": names.cleanup_name(parent), "labels": names.labels(parent, COMPONENT)}


def role(parent: str) -> Obj:
    """Only what the Job calls: list and deletecollection on ConfigMaps, in the ShardDB's namespace."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(parent),
        "rules": [{"apiGroups": [""], "resources": [resource], "verbs": list(verbs)} for resource, verbs in RBAC_RULES],
    }


def role_binding(parent: str, namespace: str, spec: ShardDBSpec) -> Obj:
    """The Role, granted to the account the Job runs as: Patroni's (the user's, when the spec names one)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(parent),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.cleanup_name(parent)},
        "subjects": [{"kind": "ServiceAccount", "name": scripts.account(parent, spec), "namespace": namespace}],
    }


def job(parent: str, spec: ShardDBSpec) -> Obj:
    """One run of ``SCRIPT`` in ``dbImage``; never updated (Jobs are OnDelete), retried by its backoff."""
    env = [{"name": "SHARDDB_PATRONI_SELECTOR", "value": selector(parent)}]
    pod = scripts.script_pod(parent, spec, COMPONENT, SCRIPT, env)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(parent),
        "spec": {
            "activeDeadlineSeconds": DEADLINE_SECONDS,
            "backoffLimit": BACKOFF_LIMIT,
            "template": {"metadata": {"labels": names.labels(parent, COMPONENT)}, "spec": pod},
        },
    }


def children(parent: str, namespace: str, spec: ShardDBSpec) -> list[Obj]:
    """The cleanup's Role, binding and Job, in the order Metacontroller may create them."""
    return [role(parent), role_binding(parent, namespace, spec), job(parent, spec)]
