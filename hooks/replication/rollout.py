"""A rollout of shards with members, standbys first: a Job that evicts each shard's outdated members in order.

Each shard's StatefulSet is ``OnDelete``: its controller makes a pod of the new template only when one is
gone. A RollingUpdate would replace the highest ordinal first, which is the primary as often as not, then
the member just promoted: two hand-overs per shard. This Job evicts, one shard at a time, every outdated
standby first (each comes back, on the new template, and streams again), and the primary last, once an
updated member is its synchronous standby: Patroni hands over to that standby as the primary stops, so a
rollout moves each shard's primary once. It never chooses a primary, promotes or fences: Patroni does.

It evicts rather than deletes, so each shard's budget holds: with a member down (or a drain under way),
it waits. It evicts nothing while any member of the shard is not Ready or no single member is labelled
primary. The Job runs ``dbImage`` (a Patroni image, with ``python3``) and a short script on Python's
standard library alone, with Patroni's ServiceAccount and a Role rendered only while a rollout runs: get
on its StatefulSets, get and evict on its member pods, each by name.

The Job's name ends in a hash of everything it runs and of the member templates it rolls to, so a new
change is a new Job (a Job's template cannot change) and a finished one is never mistaken for the next.
The hooks return it while any member runs an older template, and drop it (Metacontroller deletes it)
once every shard has rolled. A Job acts only for the templates it found when it started: its pod reads
every shard's update revision first and waits, evicting nothing, once a StatefulSet moves on to another,
so a dropped Job's pod that outlives its Job never does the newer Job's work beside it. It stops at
``SIGTERM`` (as a container's first process, Python would ignore it until the kill 30 s later), failed,
so an evicted pod is replaced, not counted as a finished rollout.

It runs ``dbImage`` itself, so it pulls the new image before any member stops: a rollout to an image the
nodes cannot pull evicts nothing (the Job's pod waits on the image, and the shards serve on untouched).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from .. import names, scripts
from ..spec import ShardDBSpec
from .shape import Plan

Obj = dict[str, Any]

COMPONENT = names.ROLLOUT
BACKOFF_LIMIT = 6
HASH_LENGTH = 7

# One shard at a time, in order. Each pass reads the StatefulSet (its update revision, once its
# controller has seen the latest spec) and every member pod by name, evicts at most one, and
# sleeps; a refused eviction (429: the budget) or any failure is read again on the next pass.
# Nothing is evicted unless exactly one member is labelled primary and is Ready. An outdated
# standby goes first, a not-Ready one before a Ready one (a standby on a template that never
# started is replaced by the next), once every other member is Ready; the primary goes last, once
# every member is Ready and (synchronous) an updated one is its synchronous standby.
# The choice, a function of what one pass read: which member to evict next, or why none. Kept
# apart from the I/O so the tests run this very text. ``pin``: the update revision a shard rolls to is
# the first one the Job read caught up (every shard's is read before any eviction); another one later
# means a newer change, whose own Job rolls it, so this one waits until the hooks drop it.
CHOOSE = """\
def ready(pod):
    conditions = (pod.get("status") or {}).get("conditions") or []
    return "deletionTimestamp" not in pod["metadata"] and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
def choose(pods, target, role_label, leader, synchronous, sync_named):
    label = lambda pod, key: pod["metadata"].get("labels", {}).get(key)
    name = lambda pod: pod["metadata"]["name"]
    primaries = [p for p in pods if label(p, role_label) == leader]
    if len(primaries) != 1 or not ready(primaries[0]):
        return None, "waiting: %d Ready members labelled %s" % (sum(map(ready, primaries)), leader)
    primary = primaries[0]
    outdated = [p for p in pods if label(p, "controller-revision-hash") != target]
    unready = [name(p) for p in pods if not ready(p)]
    standbys = [p for p in outdated if p is not primary]
    if standbys:
        victim = next((p for p in standbys if not ready(p)), standbys[0])
        others = [n for n in unready if n != name(victim)]
        if others:
            return None, "waiting: %s not Ready" % ", ".join(others)
        return victim, "a standby"
    if not outdated:
        return None, ("waiting: %s not Ready" % ", ".join(unready)) if unready else "done"
    if unready:
        return None, "waiting: %s not Ready" % ", ".join(unready)
    updated = {name(p) for p in pods if p not in outdated}
    if synchronous and not updated & set(sync_named.split(",")):
        return None, "waiting: no updated member is the synchronous standby yet (%s)" % (sync_named or "none")
    return primary, "the primary"
def pin(pinned, name, sts):
    status = sts.get("status") or {}
    if status.get("observedGeneration", 0) < sts["metadata"].get("generation", 0):
        return None, "waiting: its controller has not read the latest spec"
    target = pinned.setdefault(name, status.get("updateRevision", ""))
    if status.get("updateRevision", "") != target:
        return None, "waiting: the StatefulSet moved on to a newer template; the newer rollout Job rolls it"
    return target, ""
"""

SCRIPT = (
    """\
import json, os, signal, ssl, sys, time, urllib.error, urllib.request
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
namespace = open(sa + "/namespace").read().strip()
host = os.environ["KUBERNETES_SERVICE_HOST"]
host = "[" + host + "]" if ":" in host else host
base = "https://%s:%s" % (host, os.environ["KUBERNETES_SERVICE_PORT"])
context = ssl.create_default_context(cafile=sa + "/ca.crt")
role_label, leader = os.environ["SHARDDB_ROLE_LABEL"], os.environ["SHARDDB_LEADER"]
synchronous = os.environ["SHARDDB_SYNCHRONOUS"] == "true"
def call(method, path, body=None):
    token = open(sa + "/token").read().strip()
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, None
    except (urllib.error.URLError, OSError, ValueError) as error:
        return str(error), None
"""
    + CHOOSE
    + """\
pinned = {}
def target(name):
    code, sts = call("GET", "/apis/apps/v1/namespaces/%s/statefulsets/%s" % (namespace, name))
    if code != 200:
        return None, None, "waiting: StatefulSet %s: %s" % (name, code)
    revision, why = pin(pinned, name, sts)
    return sts, revision, why
def step(name):
    sts, revision, why = target(name)
    if revision is None:
        return why
    pods = []
    for member in range(sts["spec"].get("replicas", 1)):
        code, pod = call("GET", "/api/v1/namespaces/%s/pods/%s-%d" % (namespace, name, member))
        if code != 200 or "deletionTimestamp" in pod["metadata"]:
            return "waiting: %s-%d is not there yet" % (name, member)
        pods.append(pod)
    code, record = call("GET", "/api/v1/namespaces/%s/configmaps/%s-sync" % (namespace, name))
    named = ((record or {}).get("metadata", {}).get("annotations") or {}).get("sync_standby") or ""
    victim, why = choose(pods, revision, role_label, leader, synchronous, named)
    if victim is None:
        return why
    who = victim["metadata"]["name"]
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": who, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": victim["metadata"]["uid"]}}}
    code, _ = call("POST", "/api/v1/namespaces/%s/pods/%s/eviction" % (namespace, who), body)
    if code in (200, 201):
        return "evicted %s (%s)" % (who, why)
    return "waiting: the eviction of %s answered %s" % (who, code)
shard_sets = os.environ["SHARDDB_SHARD_SETS"].split()
said = ""
while len(pinned) < len(shard_sets):
    waits = [(name, target(name)[2]) for name in shard_sets if name not in pinned]
    now = "; ".join("%s: %s" % each for each in waits if each[1])
    if now and now != said:
        print("%s %s" % (time.strftime("%H:%M:%S"), now), flush=True)
    said = now
    if len(pinned) < len(shard_sets):
        time.sleep(2)
for name in shard_sets:
    said = ""
    while said != "done":
        now = step(name)
        if now != said:
            print("%s %s: %s" % (time.strftime("%H:%M:%S"), name, now), flush=True)
        said = now
        if said != "done":
            time.sleep(2)
print("every shard runs its latest template", flush=True)
"""
)


def _meta(name: str, parent: str) -> Obj:
    return {"name": name, "labels": names.labels(parent, COMPONENT)}


def role(parent: str, shards: int, plan: Plan) -> Obj:
    """Get on the shards' StatefulSets; get and evict on their member pods; each by name."""
    sets = [names.shard_name(parent, shard) for shard in range(shards)]
    pods = [names.member_name(parent, shard, member) for shard in range(shards) for member in range(plan.members)]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(names.rollout_role_name(parent), parent),
        "rules": [
            {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["get"], "resourceNames": sets},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": pods},
            {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"], "resourceNames": pods},
        ],
    }


# What the Role grants, for the partitions' ClusterRole (which must hold it: escalation prevention).
RBAC_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("apps", "statefulsets", ("get",)),
    ("", "pods", ("get",)),
    ("", "pods/eviction", ("create",)),
)


def role_binding(parent: str, namespace: str, spec: ShardDBSpec) -> Obj:
    """The Role, granted to the account the Job runs as: Patroni's (the user's, when the spec names one)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(names.rollout_role_name(parent), parent),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.rollout_role_name(parent)},
        "subjects": [{"kind": "ServiceAccount", "name": scripts.account(parent, spec), "namespace": namespace}],
    }


def _job_spec(parent: str, spec: ShardDBSpec, shards: int, plan: Plan) -> Obj:
    env = [
        {"name": "SHARDDB_SHARD_SETS", "value": " ".join(names.shard_name(parent, shard) for shard in range(shards))},
        {"name": "SHARDDB_ROLE_LABEL", "value": names.ROLE_LABEL},
        {"name": "SHARDDB_LEADER", "value": names.LEADER_LABEL_VALUE},
        {"name": "SHARDDB_SYNCHRONOUS", "value": "true" if plan.synchronous else "false"},
    ]
    pod = scripts.script_pod(parent, spec, COMPONENT, SCRIPT, env)
    # No deadline: a rollout that waits (a member down, a budget spent) waits, and evicts nothing meanwhile.
    return {
        "backoffLimit": BACKOFF_LIMIT,
        "template": {"metadata": {"labels": names.labels(parent, COMPONENT)}, "spec": pod},
    }


def digest(job_spec: Obj, templates: Sequence[Obj]) -> str:
    """A short hash of the Job's spec and of the member templates it rolls to."""
    text = json.dumps({"job": job_spec, "templates": list(templates)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_LENGTH]


def job(parent: str, spec: ShardDBSpec, shards: int, plan: Plan, templates: Sequence[Obj]) -> Obj:
    """The rollout Job for the member templates ``templates`` (one per shard, as answered)."""
    job_spec = _job_spec(parent, spec, shards, plan)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(names.rollout_job_name(parent, digest(job_spec, templates)), parent),
        "spec": job_spec,
    }


def children(
    parent: str, namespace: str, spec: ShardDBSpec, shards: int, plan: Plan, templates: Sequence[Obj]
) -> list[Obj]:
    """The rollout's Role, binding and Job, in the order Metacontroller may create them."""
    binding = role_binding(parent, namespace, spec)
    return [role(parent, shards, plan), binding, job(parent, spec, shards, plan, templates)]
