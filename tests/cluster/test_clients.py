"""``spec.replication.clients`` on a real API server: what a NetworkPolicy would refuse in a peer, the ShardDB refuses
when it is applied, naming the field; what it takes, the members' policy is stored with, as a fixed point."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.replication import objects as patroni_objects
from testbed.models.metacontroller import LAST_APPLIED, desired_as_sent, difference, needs_update, serialize

from ..support.kube import Kube, error_message
from ..support.samples import SPEC, sharddb

Obj = dict[str, Any]

PARENT_UID = "00000000-0000-0000-0000-000000000000"
POLICIES = "/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies"

PEERS: list[Obj] = [
    {"podSelector": {"matchLabels": {"app": "orders-api"}}},
    {"namespaceSelector": {"matchLabels": {"team": "billing"}}, "podSelector": {}},
    {"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}},
    {"ipBlock": {"cidr": "10.20.0.1/16", "except": ["10.20.9.0/24"]}},
    {"ipBlock": {"cidr": "fd00::/48", "except": ["fd00:0:0:1::/64"]}},
]


def with_clients(name: str, namespace: str, clients: list[Obj]) -> Obj:
    return sharddb(name, namespace, {**SPEC, "replication": {"members": 2, "clients": clients}})


def test_every_shape_of_peer_a_network_policy_takes_is_taken(kube: Kube, namespace: str) -> None:
    response = kube.create(with_clients("peers", namespace, PEERS))
    assert response.status_code == 201, error_message(response)
    assert response.json()["spec"]["replication"]["clients"] == PEERS


@pytest.mark.parametrize(
    ("peer", "words"),
    [
        ({"ipBlock": {"cidr": "10.20.0.0/33"}}, "each ipBlock.cidr must be a CIDR"),
        ({"ipBlock": {"cidr": "orders-api"}}, "each ipBlock.cidr must be a CIDR"),
        ({"ipBlock": {"cidr": "10.20.0.0/16", "except": ["10.21.0.0/24"]}}, "strictly within its ipBlock.cidr"),
        ({"ipBlock": {"cidr": "10.20.0.0/16", "except": ["10.20.0.0/16"]}}, "strictly within its ipBlock.cidr"),
        ({"ipBlock": {"cidr": "10.20.0.0/16", "except": ["fd00::/64"]}}, "strictly within its ipBlock.cidr"),
        ({"ipBlock": {"cidr": "10.20.0.0/16"}, "podSelector": {}}, "each peer is an ipBlock, or a podSelector"),
        ({}, "each peer is an ipBlock, or a podSelector"),
    ],
)
def test_a_peer_a_network_policy_would_refuse_is_refused_naming_the_field(
    kube: Kube, namespace: str, peer: Obj, words: str
) -> None:
    response = kube.create(with_clients("refused", namespace, [peer]))
    assert response.status_code == 422, response.text
    message = error_message(response)
    assert "spec.replication.clients" in message
    assert words in message


def test_the_members_policy_with_every_shape_of_peer_is_stored_as_a_fixed_point(kube: Kube, namespace: str) -> None:
    desired = patroni_objects.member_policy("demo", 0, 5432, PEERS)
    sent = desired_as_sent(desired, namespace, PARENT_UID)
    created = desired_as_sent(desired, namespace, PARENT_UID)
    created["metadata"].setdefault("annotations", {})[LAST_APPLIED] = serialize(sent)
    collection = POLICIES.format(namespace=namespace)
    response = kube.http.post(collection, json=created, params={"fieldValidation": "Strict"})
    assert response.status_code == 201, response.text
    stored = kube.http.get(f"{collection}/{desired['metadata']['name']}").json()
    assert not needs_update(stored, sent), difference(stored, sent)
