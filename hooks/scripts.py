"""The pod of a Job that runs a short script in ``dbImage`` as Patroni's account (the cleanup, the rollout, a backup).

With members, ``dbImage`` is a Patroni image, so it has ``python3``; the script speaks to the API server
with the pod's ServiceAccount token and Python's standard library alone. The pod runs where and as the
shard pods run (their security contexts, pull secrets, node selector and tolerations).
"""

from __future__ import annotations

import json
from typing import Any

from . import names
from .spec import DEFAULT_CONTAINER_SECURITY_CONTEXT, DEFAULT_DB_POD_SECURITY_CONTEXT, ShardDBSpec

Obj = dict[str, Any]


def _clone(value: Any) -> Any:
    return json.loads(json.dumps(value))


def account(parent: str, spec: ShardDBSpec) -> str:
    """The account the Jobs run as: Patroni's (the user's, when the spec names one)."""
    return spec.service_account_name or names.account_name(parent)


def script_pod(
    parent: str,
    spec: ShardDBSpec,
    name: str,
    script: str,
    env: list[Obj],
    *,
    interpreter: tuple[str, ...] = ("python3", "-c"),
) -> Obj:
    """A pod that runs ``script`` once (``restartPolicy: Never``; the Job's backoff retries it)."""
    db = spec.db
    container: Obj = {
        "name": name,
        "image": spec.db_image,
        "command": [*interpreter, script],
        "env": env,
        "securityContext": _clone(db.security_context or DEFAULT_CONTAINER_SECURITY_CONTEXT),
    }
    pod: Obj = {
        "restartPolicy": "Never",
        "serviceAccountName": account(parent, spec),
        "automountServiceAccountToken": True,
        "securityContext": _clone(db.pod_security_context or DEFAULT_DB_POD_SECURITY_CONTEXT),
    }
    if spec.image_pull_secrets:
        pod["imagePullSecrets"] = _clone(spec.image_pull_secrets)
    if db.node_selector:
        pod["nodeSelector"] = dict(db.node_selector)
    if db.tolerations:
        pod["tolerations"] = _clone(db.tolerations)
    pod["containers"] = [container]
    return pod
