"""The fast decoder (``hooks.wire``) observes exactly what the reference models (``hooks.contract``) do.

Whatever the fast path accepts must give the same snapshot; whatever it refuses
is handed to the reference models, so answers and 4xx messages never depend on
which decoder ran.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hooks import handler, wire
from hooks.contract import SyncRequest
from hooks.errors import HookError
from hooks.snapshot import Snapshot, observe
from hooks.spec import ShardDBSpec

from .world import World, sharddb


def _both(request: dict[str, Any]) -> tuple[Snapshot, Snapshot]:
    body = json.dumps(request).encode()
    fast = wire.sync_request(body)
    assert fast is not None
    reference = SyncRequest.model_validate_json(body)
    spec = ShardDBSpec.model_validate(reference.parent.spec)
    return observe(fast, spec), observe(reference, spec)


def _lifecycle_requests(shards: int) -> list[dict[str, Any]]:
    """Every request of a ShardDB's life: provisioning, seeding, registering, cache, deletion."""
    world = World(sharddb(shards=shards))
    requests = []
    for step in range(6):
        requests.append(world.request())
        world.apply(handler.sync(json.dumps(requests[-1]).encode(), finalize=False).body)
        world.run_statefulset(ready=shards - 1 if step == 1 else None)
        for job in world.jobs():
            if job["status"].get("succeeded") != 1:
                world.finish_job(int(job["metadata"]["name"].rsplit("-", 1)[1]))
        world.run_cache()
    world.delete()
    world.terminate_pods("cache")
    requests.append(world.request())
    world.remove_pods("cache")
    requests.append(world.request())
    return requests


@pytest.mark.parametrize("shards", [1, 3, 5])
def test_fast_decoder_observes_every_lifecycle_request_like_the_reference(shards: int) -> None:
    for request in _lifecycle_requests(shards):
        fast, reference = _both(request)
        assert fast == reference


def test_fast_decoder_reads_hook_v1_keys_and_missing_groups_alike() -> None:
    world = World(sharddb(), hook_version="v1")
    request = world.request()
    request["related"] = None
    fast, reference = _both(request)
    assert fast == reference


def test_lax_values_the_fast_decoder_refuses_are_read_by_the_reference() -> None:
    request = World(sharddb()).request()
    request["parent"]["metadata"]["generation"] = "4"  # a string number: lax for the reference models
    body = json.dumps(request).encode()
    assert wire.sync_request(body) is None
    outcome = handler.sync(body, finalize=False)
    assert outcome.body["status"]["conditions"][0]["observedGeneration"] == 4


def test_bad_requests_get_the_reference_models_message() -> None:
    request = World(sharddb()).request()
    request["parent"]["metadata"]["name"] = ""
    with pytest.raises(HookError) as caught:
        handler.sync(json.dumps(request).encode(), finalize=False)
    assert caught.value.status == 422
    assert caught.value.message.startswith("parent.metadata.name:")


def test_snake_case_keys_are_unknown_fields_for_both_decoders() -> None:
    world = World(sharddb())
    world.apply(handler.sync(json.dumps(world.request()).encode(), finalize=False).body)
    world.run_statefulset()
    request = world.request()
    for sts in request["children"]["StatefulSet.apps/v1"].values():
        sts["status"]["ready_replicas"] = sts["status"].pop("readyReplicas")
    fast, reference = _both(request)
    assert fast == reference
    assert fast.statefulset is not None
    assert fast.statefulset.ready == 0
