"""Closed to others: Patroni's REST API on the members answers only the shard's own members, tried as an attacker
would from a pod of another namespace and from a pod of the ShardDB's namespace that is not a member; a member
itself is asked for the REST API's credentials; what crosses between members is TLS (the standby's stream, the
REST API), and a session without TLS is refused even with the password; and the members' account may patch its
own pods only. Once ``spec.replication.clients`` is declared, PostgreSQL's port takes only the pods it names (and the
ShardDB's own), and the writers, named there, write on.

Each unsafe call goes to the primary's pod address, where Patroni listens; PostgreSQL's port on the same
address is reached from the same pod, so a refused call is the policy's doing, not a broken pod network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ...support.sharddbs import wait_until
from ..installs import Install, Obj
from ..invariants import Report
from ..writers import LABEL as WRITER_LABEL
from .shard import NAME, NAMESPACE, members, primary_and_replica

pytestmark = pytest.mark.usefixtures("brought_up")

OUTSIDER = "members-outsider"
# Every call of Patroni's API that changes what runs, with a body that would do it.
UNSAFE_CALLS: tuple[tuple[str, str, Obj], ...] = (
    ("POST", "/switchover", {"leader": "PRIMARY"}),
    ("POST", "/failover", {"candidate": "STANDBY"}),
    ("POST", "/restart", {}),
    ("POST", "/reinitialize", {}),
    ("PATCH", "/config", {"pause": True}),
    ("POST", "/failsafe", {}),
)


# One try of a call: the request's first answer line, or "unreachable" when no connection opens in 3 s.
CALL = """call() {
  local request answer
  request=$(printf '%s %s HTTP/1.0\\r\\nContent-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n%s' \\
    "$1" "$2" "${#3}" "$3")
  if answer=$(timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/8008"; printf "%s" "$1" >&3; head -n1 <&3' \\
    "$ADDRESS" "$request" 2>/dev/null); then
    echo "$1 $2 answered $answer"
  else
    echo "$1 $2 unreachable"
  fi
}
"""


def attempts(address: str, primary: str, standby: str) -> str:
    """A bash script that makes every unsafe call at once and tries PostgreSQL's port: one line per try."""
    lines = [f"ADDRESS={address}", CALL]
    for method, path, body in UNSAFE_CALLS:
        text = json.dumps(body).replace("PRIMARY", primary).replace("STANDBY", standby)
        lines.append(f"call {method} {path} '{text}' &")
    lines.append(
        '( if timeout 3 bash -c \'exec 3<>"/dev/tcp/$0/5432"\' "$ADDRESS" 2>/dev/null; '
        "then echo 'postgresql reachable'; else echo 'postgresql unreachable'; fi ) &"
    )
    return "\n".join([*lines, "wait"])


def expected() -> list[str]:
    return sorted([f"{method} {path} unreachable" for method, path, _ in UNSAFE_CALLS] + ["postgresql reachable"])


@pytest.fixture(scope="module")
def outsider(install: Install) -> Iterator[str]:
    install.kubectl("create", "namespace", OUTSIDER)
    yield OUTSIDER
    install.kubectl("delete", "namespace", OUTSIDER, "--wait=false")


def primary_address(install: Install) -> tuple[str, str, str]:
    pods = members(install)
    primary, standby = primary_and_replica(pods)
    address = next(pod["status"]["podIP"] for pod in pods if pod["metadata"]["name"] == primary)
    return address, primary, standby


def tried_from(install: Install, namespace: str, name: str) -> list[str]:
    address, primary, standby = primary_address(install)
    phase, log = install.run_pod(name, namespace, attempts(address, primary, standby))
    assert phase == "Succeeded", log
    return sorted(line for line in log.splitlines() if line)


def test_every_unsafe_call_from_another_namespace_is_refused(install: Install, outsider: str) -> None:
    assert tried_from(install, outsider, "attacker") == expected()


def test_every_unsafe_call_from_a_pod_of_the_namespace_that_is_not_a_member_is_refused(install: Install) -> None:
    assert tried_from(install, NAMESPACE, "neighbour") == expected()


# A call of a member's REST API from inside another member, over HTTPS (no CA: a member's own certificate): its status.
CALL_FROM_A_MEMBER = """
import http.client, ssl, sys
address, method, path = sys.argv[1:4]
connection = http.client.HTTPSConnection(address, 8008, context=ssl._create_unverified_context(), timeout=5)
connection.request(method, path, body=sys.argv[4] if len(sys.argv) > 4 else None)
print(connection.getresponse().status)
"""


def call_from(install: Install, member: str, *request: str) -> str:
    return install.kubectl(
        "exec", "-n", NAMESPACE, member, "-c", "db", "--", "python3", "-c", CALL_FROM_A_MEMBER, *request
    )


def test_the_shards_members_still_reach_each_others_api(install: Install) -> None:
    address, _, standby = primary_address(install)
    assert call_from(install, standby, address, "GET", "/patroni").strip() == "200"


def test_an_unsafe_call_from_a_member_without_the_rest_apis_credentials_is_refused(install: Install) -> None:
    """Past the NetworkPolicy and the members' allowlist, Patroni still asks for its credentials."""
    address, _, standby = primary_address(install)
    assert call_from(install, standby, address, "POST", "/restart", "{}").strip() == "401"


def test_the_rest_api_answers_no_plain_http(install: Install) -> None:
    """A plain request meets the TLS handshake: no HTTP status line ever comes back."""
    address, _, standby = primary_address(install)
    request = "printf 'GET /patroni HTTP/1.0\\r\\n\\r\\n' >&3"
    script = f"exec 3<>/dev/tcp/{address}/8008; {request}; timeout 5 head -c 64 <&3 | grep -c HTTP/ || true"
    answer = install.kubectl("exec", "-n", NAMESPACE, standby, "-c", "db", "--", "bash", "-c", script)
    assert answer.strip() == "0", answer


def test_the_standby_streams_over_tls(install: Install) -> None:
    _, primary, standby = primary_address(install)
    query = "SELECT r.application_name || ' ' || s.ssl FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid)"
    answer = install.kubectl(
        "exec", "-n", NAMESPACE, primary, "-c", "db", "--", "psql", "-U", "postgres", "-XqAtc", query
    )
    assert answer.split() == [standby, "true"], answer


def test_a_session_without_tls_is_refused_even_with_the_password(install: Install) -> None:
    address, _, standby = primary_address(install)
    target = f"host={address} user=postgres dbname=postgres"
    script = f'PGPASSWORD="$PATRONI_SUPERUSER_PASSWORD" psql "{target} sslmode=$0" -XqAtc "SELECT 1" 2>&1 || true'

    def tried(sslmode: str) -> str:
        return install.kubectl("exec", "-n", NAMESPACE, standby, "-c", "db", "--", "bash", "-c", script, sslmode)

    assert "no encryption" in tried("disable")
    assert tried("require").strip() == "1"  # the refusal is TLS's, not the password's


def can_i(install: Install, verb: str, target: str, namespace: str) -> str:
    account = f"system:serviceaccount:{NAMESPACE}:{NAME}-patroni"
    result = install.stack.kubectl("auth", "can-i", verb, target, "-n", namespace, f"--as={account}")
    return result.stdout.strip()


def test_the_members_account_may_patch_its_own_member_pods(install: Install) -> None:
    assert can_i(install, "patch", f"pods/{NAME}-db-0-0", NAMESPACE) == "yes"


@pytest.mark.parametrize("target", ["pods/other-db-0-0", "configmaps/other-db-0-leader", "pods/write-through-primary"])
def test_the_members_account_is_refused_a_patch_of_another_sharddbs_objects(install: Install, target: str) -> None:
    assert can_i(install, "patch", target, NAMESPACE) == "no"


# Declared clients: the writers (so they write on) and pods labelled as the one allowed prober is.
ALLOWED = {"sharddb-test/client": "allowed"}
CLIENTS: list[Obj] = [
    {"podSelector": {"matchExpressions": [{"key": WRITER_LABEL, "operator": "Exists"}]}},
    {"podSelector": {"matchLabels": ALLOWED}},
]


def database_sources(install: Install) -> list[Obj] | None:
    """The ``from`` of the members' policy's rule for PostgreSQL's port; None: every source."""
    policy = install.get("networkpolicy", "-n", NAMESPACE, f"{NAME}-db-0")
    (rule,) = [rule for rule in policy["spec"]["ingress"] if rule["ports"][0]["port"] == 5432]
    sources: list[Obj] | None = rule.get("from")
    return sources


def declare(install: Install, clients: list[Obj] | None) -> None:
    patch = json.dumps({"spec": {"replication": {"clients": clients}}})
    install.kubectl("-n", NAMESPACE, "patch", "sharddb", NAME, "--type=merge", "-p", patch)

    def taken() -> bool:
        sources = database_sources(install)
        # The shard's members, the seed Job and the cache come first, then the clients declared.
        return sources is None if clients is None else (sources or [])[3:] == clients

    wait_until(f"the members' policy to take clients {clients}", taken, timeout=60.0)


@pytest.fixture(scope="module")
def declared(install: Install) -> Iterator[None]:
    """The clients declared for the module, and undeclared after it, even when the policy never took them: the
    folder's later steps run their pollers from pods these clients leave out."""
    try:
        declare(install, CLIENTS)
        yield
    finally:
        declare(install, None)


# How long a new pod tries PostgreSQL's port, as a client that retries its first connection does. A pod's address
# joins the policies that name it only when the node's policy agent next syncs after the pod got it (kube-router:
# a full sync on the pod's update, measured refusing a declared client's first try, 1 s after its sandbox); until
# then the members' policy refuses it like any undeclared source.
TRY_SECONDS = 15


def postgresql_from(install: Install, name: str, labels: dict[str, str] | None = None) -> str:
    """From a new pod: "postgresql reachable after N tries", or "postgresql unreachable" after ``TRY_SECONDS``."""
    address, _, _ = primary_address(install)
    script = (
        f"end=$((SECONDS + {TRY_SECONDS})); tries=0; while [ $SECONDS -lt $end ]; do tries=$((tries + 1)); "
        f"if timeout 3 bash -c 'exec 3<>\"/dev/tcp/$0/5432\"' {address} 2>/dev/null; "
        'then echo "postgresql reachable after $tries tries"; exit 0; fi; sleep 0.5; done; '
        "echo 'postgresql unreachable'"
    )
    phase, log = install.run_pod(name, NAMESPACE, script, labels=labels)
    assert phase == "Succeeded", log
    return log.strip()


@pytest.mark.usefixtures("declared")
def test_a_pod_the_declared_clients_leave_out_cannot_reach_postgresql(install: Install) -> None:
    assert postgresql_from(install, "undeclared") == "postgresql unreachable"


@pytest.mark.usefixtures("declared")
def test_a_pod_the_declared_clients_name_reaches_postgresql(install: Install, report: Report) -> None:
    said = postgresql_from(install, "declared", ALLOWED)
    report(f"a declared client's new pod: {said}")
    assert said.startswith("postgresql reachable after "), said
