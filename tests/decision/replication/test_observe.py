"""What the hooks observe of a shard with members in discovery: its primary is registered once it is a ready
endpoint of the shard's ``-primary`` Service, so clients and the cache reach it."""

from __future__ import annotations

from hooks.replication.marks import Endpoint
from hooks.replication.observe import registered


def test_a_primary_is_registered_once_it_is_a_ready_endpoint_of_its_primary_service() -> None:
    assert registered("demo-db-0-0", [Endpoint("demo-db-0-0")])
    assert not registered("demo-db-0-0", [Endpoint("demo-db-0-0", ready=False)])
    assert not registered("demo-db-0-0", [Endpoint("demo-db-0-1", ready=True)])
    assert not registered(None, [Endpoint(None)])
