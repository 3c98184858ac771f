"""Patroni's role-change callback in every member: a new primary takes the primary label off its shard's other members.

A primary whose node is powered off or cut off from the API server cannot take its own
``role: primary`` label off, and its pod stays Ready until the node controller marks the node (50 s
by default): until then the shard's ``-primary`` Service sends half of new connections to an address
that never answers, long after Patroni promoted the standby (about 25 s). Patroni runs
``on_role_change`` as soon as it promotes a member, with the API server reachable from that member;
the callback lists the pods of its scope still labelled primary and removes the label from every one
but its own, so ``-primary`` selects the new primary alone. Patroni puts a label back on a member that
is alive from its next loop, from what its PostgreSQL really is.

It decides nothing: Patroni chose the primary and fenced the old one (a primary that cannot renew
its lock demotes itself). The callback only keeps the Service's selector in step with that choice,
with what the members' Role already grants (list pods, patch the ShardDB's member pods). It runs in
the member image's Python, the standard library only, and fails without effect when the API server
is unreachable: the node controller's path remains.
"""

from __future__ import annotations

import shlex

from .. import names

# The service account's credentials, where the kubelet mounts them and Patroni's own client reads them.
ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# The member's pod name and namespace (downward API), in variables Patroni leaves in its environment.
MEMBER_ENV = "SHARDDB_MEMBER"
NAMESPACE_ENV = "SHARDDB_MEMBER_NAMESPACE"

SCRIPT = f"""
import json, os, ssl, sys, urllib.parse, urllib.request
_, role, scope = sys.argv[1:4]
if role != "primary":
    sys.exit(0)
host = os.environ["KUBERNETES_SERVICE_HOST"]
host = "[" + host + "]" if ":" in host else host
pods = "https://" + host + ":" + os.environ["KUBERNETES_SERVICE_PORT"] + "/api/v1/namespaces/"
pods += os.environ["{NAMESPACE_ENV}"] + "/pods"
context = ssl.create_default_context(cafile="{ACCOUNT_DIR}/ca.crt")
with open("{ACCOUNT_DIR}/token") as file:
    token = file.read().strip()
def call(method, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    kind = "application/merge-patch+json" if body is not None else "application/json"
    headers = {{"Authorization": "Bearer " + token, "Content-Type": kind}}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, context=context, timeout=5) as response:
        return json.load(response)
selector = "{names.SCOPE_LABEL}=" + scope + ",{names.ROLE_LABEL}={names.LEADER_LABEL_VALUE}"
for pod in call("GET", pods + "?labelSelector=" + urllib.parse.quote(selector))["items"]:
    name = pod["metadata"]["name"]
    if name != os.environ["{MEMBER_ENV}"]:
        call("PATCH", pods + "/" + name, {{"metadata": {{"labels": {{"{names.ROLE_LABEL}": None}}}}}})
        print("took the primary label off " + name)
"""


def callbacks() -> dict[str, str]:
    """Patroni's ``postgresql.callbacks``: the command it runs, with the action, the role and the scope appended."""
    return {"on_role_change": shlex.join(["python3", "-c", SCRIPT.strip()])}
