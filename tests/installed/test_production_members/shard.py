"""The ShardDB with members as a user applies it (``examples/sharddb-members.yaml``), and what Patroni says."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from ...support.examples import EXAMPLES, members_example
from ..installs import Install, Obj

NAMESPACE = "members"
NAME = "ha"
SHARD = f"{NAME}-db-0"
PRIMARY_SERVICE = f"{SHARD}-primary"
SECRET = f"{NAME}-db"
ROLE_LABEL = "mygroup.example.com/role"
MEMBERS = f"app.kubernetes.io/instance={NAME},app.kubernetes.io/component=db"
EXAMPLE = EXAMPLES / "sharddb-members.yaml"
# What each runbook's first block asks a person to set, set to this ShardDB (``steps.runbook``).
RUNBOOK_SETTINGS = {"NS": NAMESPACE, "NAME": NAME, "SHARD": "0"}


def sharddb() -> list[Obj]:
    """``examples/sharddb-members.yaml`` as a user applies it: in this tier's namespace, on the test images, with
    this tier's credentials in its Secret."""
    return members_example(EXAMPLE, NAME, NAMESPACE)


@dataclass(frozen=True)
class BroughtUp:
    """The ShardDB once Available: its member pods, its status, its primary Service's endpoints."""

    pods: list[Obj]
    status: Obj
    primary_endpoints: list[str]
    write: tuple[str, str]  # the phase and log of a pod that wrote through the primary Service
    seconds: float


def members(install: Install) -> list[Obj]:
    return install.active_pods(NAMESPACE, MEMBERS)


def role_of(pod: Obj) -> str:
    return str(pod["metadata"].get("labels", {}).get(ROLE_LABEL, ""))


def patroni_status(pod: Obj) -> Obj:
    """What Patroni wrote of its member in the pod's ``status`` annotation (state, replication_state, ...)."""
    try:
        found: Obj = json.loads(pod["metadata"].get("annotations", {}).get("status", "{}"))
    except json.JSONDecodeError:
        return {}
    return found


def endpoints_of(install: Install, service: str) -> list[str]:
    """The pods the Service's EndpointSlices name as ready endpoints (``ready`` unset counts as ready)."""
    slices = install.get("endpointslices", "-n", NAMESPACE, "-l", f"kubernetes.io/service-name={service}")["items"]
    return sorted(
        endpoint.get("targetRef", {}).get("name", "")
        for each in slices
        for endpoint in each.get("endpoints") or []
        if endpoint.get("conditions", {}).get("ready", True)
    )


def primary_and_replica(pods: list[Obj]) -> tuple[str, str]:
    roles = {role_of(pod): pod["metadata"]["name"] for pod in pods}
    return roles.get("primary", ""), roles.get("replica", "")


def streaming_standby(pod: Obj) -> bool:
    status = patroni_status(pod)
    return (
        role_of(pod) == "replica"
        and status.get("state") == "running"
        and status.get("replication_state") == "streaming"
    )


def running_primary(pod: Obj) -> bool:
    return role_of(pod) == "primary" and patroni_status(pod).get("state") == "running"


def leader_changes(install: Install) -> int:
    """How many times the shard's primary changed, by Patroni's own history (on its ``-config`` ConfigMap)."""
    found = install.get("configmap", "-n", NAMESPACE, f"{SHARD}-config")
    history = json.loads(found["metadata"].get("annotations", {}).get("history") or "[]")
    return len(history)


# The HTTP client's own words on a failed call to the API server: noise between Patroni's statements
# (the URL it names, ``.../ha-db-0-leader``, would match a word below).
CLIENT_NOISE = ("Retrying (Retry(", "Request to server ")


def patroni_said(install: Install, pod: str, since: float) -> list[tuple[float, str, int]]:
    """What ``pod``'s Patroni logged of roles from ``since`` on: (seconds from it, the line, times in a row)."""
    log = install.kubectl("logs", "-n", NAMESPACE, pod, "-c", "db", "--timestamps", check=False)
    words = ("leader", "promot", "demot", "shut", "lock", "following", "failsafe", "dcs")
    picked: list[tuple[float, str, int]] = []
    for line in log.splitlines():
        stamp, _, text = line.partition(" ")
        try:
            at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        if text.startswith((" ", "\t", "Traceback")):
            continue  # a traceback's lines: its last line says what failed
        said = text.strip().split(": ", 1)[-1]  # without Patroni's own timestamp and level
        if said.startswith(CLIENT_NOISE):
            continue
        if at >= since - 1 and any(word in said.lower() for word in words):
            if picked and picked[-1][1] == said:
                picked[-1] = (picked[-1][0], said, picked[-1][2] + 1)  # a line Patroni repeats every loop
            else:
                picked.append((at - since, said, 1))
    return picked


def patroni_says(install: Install, pod: str, since: float) -> str:
    """``patroni_said``'s first ten lines, each timed from ``since``: its side of a hand-over, for a report."""
    picked = patroni_said(install, pod, since)
    return " | ".join(f"{at:+.1f} {said[:110]}{f' (x{n})' if n > 1 else ''}" for at, said, n in picked[:10])


def delete_pod(install: Install, pod: Obj) -> str:
    install.kubectl("delete", "pod", "-n", NAMESPACE, pod["metadata"]["name"], "--wait=false")
    return ""
