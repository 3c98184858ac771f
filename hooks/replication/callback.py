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
from .incluster import CLIENT

SCRIPT = (
    CLIENT
    + f"""
_, role, scope = sys.argv[1:4]
if role != "primary":
    sys.exit(0)
selector = "{names.SCOPE_LABEL}=" + scope + ",{names.ROLE_LABEL}={names.LEADER_LABEL_VALUE}"
for pod in call("GET", PODS + "?labelSelector=" + urllib.parse.quote(selector))["items"]:
    name = pod["metadata"]["name"]
    if name != ME:
        call("PATCH", PODS + "/" + name, {{"metadata": {{"labels": {{"{names.ROLE_LABEL}": None}}}}}})
        print("took the primary label off " + name)
"""
)


def callbacks() -> dict[str, str]:
    """Patroni's ``postgresql.callbacks``: the command it runs, with the action, the role and the scope appended."""
    return {"on_role_change": shlex.join(["python3", "-c", SCRIPT.strip()])}
