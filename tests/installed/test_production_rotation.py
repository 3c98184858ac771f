"""Rotating the token and the CA of the partitioned install by the commands of the TLS and token page.

Metacontroller reads the Secrets only when it builds a CompositeController's controller, and a
partitioned install runs a Metacontroller and a CompositeController per partition: a rotation that
reaches one of them leaves the others calling with what they read before. The page's blocks run here
as written; then a ShardDB of every partition must sync again, with no call refused by any hooks
replica and none failing its TLS handshake. First, what the page said before: an annotation on every
CompositeController, which leaves each partition's Metacontroller on the old token.
"""

from __future__ import annotations

import base64
import functools
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml

from ..support.examples import example
from ..support.sharddbs import wait_until
from .conftest import Report
from .installs import HOOKS_NAMESPACE, Install
from .steps import ROOT, Step, page_steps

NAMESPACE = "rotation"
PAGE = ROOT / "docs" / "installing" / "tls-and-token.md"
MINIMAL = ROOT / "examples" / "sharddb-minimal.yaml"
PARTITION_LABEL = "mygroup.example.com/partition"
CONTROLLERS = "app.kubernetes.io/name=sharddb-hooks,app.kubernetes.io/component=controller"
PARTITIONS = ("p0", "p1", "p2", "p3")  # the partitioned overlay's; p0's ShardDB unlabelled, as older ones are
# Run in a hooks pod: one replica's own metrics (through the Service each read would reach any replica), with
# the token it reads and over its loopback, so its certificate is not what is under test here.
METRICS = """
import os, ssl, urllib.request
token = open(os.environ["SHARDDB_AUTH_TOKEN_FILE"]).read().strip()
url = f"https://127.0.0.1:{os.environ['SHARDDB_PORT']}/metrics"
request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
print(urllib.request.urlopen(request, context=ssl._create_unverified_context()).read().decode())
"""
# Run in a hooks pod: the status its /sync answers for the token in argv[1] (an empty body: 401 if the token is
# refused, else the body's own 4xx).
PRESENT = """
import os, ssl, sys, urllib.error, urllib.request
url = f"https://127.0.0.1:{os.environ['SHARDDB_PORT']}/sync"
headers = {"Authorization": f"Bearer {sys.argv[1]}", "Content-Type": "application/json"}
request = urllib.request.Request(url, data=b"{}", headers=headers, method="POST")
try:
    print(urllib.request.urlopen(request, context=ssl._create_unverified_context()).status)
except urllib.error.HTTPError as error:
    print(error.code)
"""
UNAUTHORIZED = re.compile(r'^sharddb_hook_calls_total\{hook="[a-z]+",outcome="unauthorized"\} ([0-9.e+]+)$', re.M)


@pytest.fixture(scope="module")
def install(production: Install) -> Iterator[Install]:
    """The README's partitions step over the production install (a no-op after the partitioned module)."""
    production.step("partitions")
    production.kubectl("create", "namespace", NAMESPACE)
    yield production
    production.kubectl("delete", "namespace", NAMESPACE, "--wait", "--timeout=5m")


@pytest.fixture(scope="module")
def sharddbs(install: Install) -> tuple[str, ...]:
    """One minimal ShardDB per partition, named after it, every one Available."""
    for partition in PARTITIONS:
        documents = example(partition, NAMESPACE, MINIMAL)
        if partition != "p0":
            documents[-1]["metadata"]["labels"] = {PARTITION_LABEL: partition}
        install.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(documents))
    for name in PARTITIONS:
        wait_until(f"{name} Available", functools.partial(install.available, NAMESPACE, name), 300, every=1)
    return PARTITIONS


def in_hooks(install: Install, pod: str, script: str, *args: str) -> str:
    command = ("exec", "-n", HOOKS_NAMESPACE, pod, "-c", "hooks", "--", "python", "-c", script, *args)
    result = install.stack.kubectl(*command)
    assert result.returncode == 0, f"python in {pod} failed: {result.stderr.strip()}"
    return result.stdout


def refused(install: Install) -> dict[str, float]:
    """Each hooks replica's count of calls refused for their token (every hook), keyed by pod and restart count,
    so a replica that restarted (its count back to zero) shows as another key rather than as fewer refusals."""
    counts: dict[str, float] = {}
    for pod in install.hooks_pods():
        name = pod["metadata"]["name"]
        restarts = sum(status["restartCount"] for status in pod["status"].get("containerStatuses", []))
        found = UNAUTHORIZED.findall(in_hooks(install, name, METRICS))
        counts[f"{name} restarts={restarts}"] = sum(float(value) for value in found)
    return counts


def secret_token(install: Install) -> str:
    encoded = install.get("secret", "-n", HOOKS_NAMESPACE, "sharddb-hooks-token")["data"]["token"]
    return base64.b64decode(encoded).decode()


def change_every_sharddb(install: Install, names: tuple[str, ...], grace: int) -> None:
    """A spec change that shapes no child: only an answered sync moves ``status.observedGeneration`` to it."""
    patch = f'{{"spec": {{"podStartGraceSeconds": {grace}}}}}'
    for name in names:
        install.kubectl("-n", NAMESPACE, "patch", "sharddb", name, "--type=merge", "-p", patch)


def synced(install: Install, name: str) -> bool:
    """The ShardDB's status is from an answer to its current spec, and it is Available."""
    found = install.get("sharddb", "-n", NAMESPACE, name)
    status = found.get("status", {})
    current = status.get("observedGeneration") == found["metadata"]["generation"]
    return current and any(c["type"] == "Available" and c["status"] == "True" for c in status.get("conditions", []))


def wait_until_synced(install: Install, names: tuple[str, ...]) -> None:
    """Every ShardDB synced; else the failure quotes what Metacontroller said of the calls that failed."""
    try:
        for name in names:
            wait_until(f"{name} synced at its new generation", functools.partial(synced, install, name), 300, every=1)
    except AssertionError as error:
        said = sorted({e.get("message", "") for e in install.events(NAMESPACE, "SyncError")})
        raise AssertionError(f"{error}\nSyncError events in {NAMESPACE}: {said}") from None


def tls_failures(install: Install) -> list[str]:
    """Metacontroller's SyncError events in the namespace that a TLS handshake caused."""
    return [e.get("message", "") for e in install.events(NAMESPACE, "SyncError") if "x509" in e.get("message", "")]


def refused_with(install: Install, token: str) -> bool:
    """Whether every hooks replica refuses the token (so each has mounted another)."""
    pods = [pod["metadata"]["name"] for pod in install.hooks_pods()]
    return all(in_hooks(install, pod, PRESENT, token).strip() == "401" for pod in pods)


def test_an_annotation_alone_leaves_every_partitions_metacontroller_on_the_old_token(
    install: Install, sharddbs: tuple[str, ...]
) -> None:
    """The rotation this page gave before: a new token, then every ShardDB CompositeController annotated. Once
    the hooks have the new token, a change to each partition's ShardDB is refused with 401: Metacontroller rebuilds
    a controller, and reads its Secrets, only when the CompositeController's spec changes. (The next tests' rotation
    repairs it.)"""
    old = secret_token(install)
    token = secrets.token_hex(32)
    create = ("create", "secret", "generic", "sharddb-hooks-token", f"--from-literal=token={token}")
    manifest = install.kubectl("-n", HOOKS_NAMESPACE, *create, "--dry-run=client", "-o", "yaml")
    install.kubectl("apply", "-f", "-", stdin=manifest)
    install.kubectl("annotate", "compositecontroller", "-l", CONTROLLERS, f"rotated={time.time_ns()}", "--overwrite")
    on_the_new_token = functools.partial(refused_with, install, old)
    wait_until("every hooks replica refusing the old token", on_the_new_token, 300, every=2)
    change_every_sharddb(install, sharddbs, grace=140)

    def refused_names() -> set[str]:
        events = install.events(NAMESPACE, "SyncError")
        return {e["involvedObject"]["name"] for e in events if "invalid bearer token" in e.get("message", "")}

    try:
        wait_until("a 401 on the ShardDB of every partition", lambda: refused_names() >= set(sharddbs), 120, every=2)
    except AssertionError as error:
        seen = sorted(refused_names())
        said = f"refused with 401 only: {seen}; the others' Metacontroller read the new token"
        raise AssertionError(f"{error}\n{said}") from None


@dataclass(frozen=True)
class TokenRotation:
    old: str
    new: str
    refused_before: dict[str, float]
    refused_after: dict[str, float]
    # What each hooks replica answered each token with, once the rotation's first block had run.
    answers_before_drop: dict[str, tuple[str, str]]
    seconds: float


def answers(install: Install, *tokens: str) -> dict[str, tuple[str, ...]]:
    """Each hooks replica's status for a call with each token (401: refused)."""
    return {
        pod["metadata"]["name"]: tuple(in_hooks(install, pod["metadata"]["name"], PRESENT, t).strip() for t in tokens)
        for pod in install.hooks_pods()
    }


@pytest.fixture(scope="module")
def token_rotated(install: Install, sharddbs: tuple[str, ...]) -> TokenRotation:
    """The page's token rotation, run as written, once every partition has a ShardDB, from a consistent install
    (the reload first, so every Metacontroller sends the Secret's token again after the annotation test); the hooks'
    refusals just before it and just after both its blocks."""
    assert all(install.available(NAMESPACE, name) for name in sharddbs), "a rotation starts from Available"
    install.run(Step("reload", "tools/kubectl-sharddb-reload\n"))
    old = secret_token(install)
    before = refused(install)
    began = time.monotonic()
    steps = page_steps(PAGE)
    install.run(steps["rotate-token"])
    new = secret_token(install)
    change_every_sharddb(install, sharddbs, grace=150)
    wait_until_synced(install, sharddbs)
    both = {pod: (first, second) for pod, (first, second) in answers(install, old, new).items()}
    install.run(steps["rotate-token-drop"])
    seconds = time.monotonic() - began
    return TokenRotation(old, new, before, refused(install), both, seconds)


def test_no_hooks_replica_refuses_a_call_from_the_token_rotations_first_command_to_its_last(
    token_rotated: TokenRotation, report: Report
) -> None:
    during = sum(token_rotated.refused_after.values()) - sum(token_rotated.refused_before.values())
    report(f"token rotation {token_rotated.seconds:.1f} s, its ShardDBs synced; calls refused meanwhile {during:.0f}")
    assert token_rotated.refused_after == token_rotated.refused_before


def test_after_the_token_rotation_every_partition_syncs_and_no_hooks_replica_refuses_a_call(
    install: Install, sharddbs: tuple[str, ...], token_rotated: TokenRotation
) -> None:
    change_every_sharddb(install, sharddbs, grace=160)
    wait_until_synced(install, sharddbs)
    assert refused(install) == token_rotated.refused_after


def test_while_the_previous_token_is_kept_every_hooks_replica_accepts_both(token_rotated: TokenRotation) -> None:
    assert len(token_rotated.answers_before_drop) == 3
    assert all("401" not in each for each in token_rotated.answers_before_drop.values()), token_rotated


@pytest.mark.usefixtures("sharddbs")
def test_once_the_previous_token_is_dropped_every_hooks_replica_refuses_it_and_takes_the_new(
    install: Install, token_rotated: TokenRotation
) -> None:
    assert token_rotated.new != token_rotated.old
    dropped = functools.partial(refused_with, install, token_rotated.old)
    wait_until("every hooks replica refusing the dropped token", dropped, 300, every=2)
    now = answers(install, token_rotated.new)
    assert len(now) == 3
    assert all(fresh != "401" for (fresh,) in now.values()), now


@pytest.fixture(scope="module")
def ca_rotated(install: Install, sharddbs: tuple[str, ...]) -> float:
    """The page's three steps to a new CA, run as written, in order, once every partition has a ShardDB; how
    long they took."""
    assert all(install.available(NAMESPACE, name) for name in sharddbs), "a rotation starts from Available"
    steps = page_steps(PAGE)
    began = time.monotonic()
    for name in ("rotate-ca-trust", "rotate-ca-serve", "rotate-ca-drop"):
        install.run(steps[name])
    return time.monotonic() - began


def test_after_the_ca_rotation_every_partition_syncs_and_no_call_failed_its_handshake(
    install: Install, sharddbs: tuple[str, ...], ca_rotated: float, report: Report
) -> None:
    report(f"CA rotation, three steps, {ca_rotated:.1f} s")
    change_every_sharddb(install, sharddbs, grace=180)
    wait_until_synced(install, sharddbs)
    assert tls_failures(install) == []
