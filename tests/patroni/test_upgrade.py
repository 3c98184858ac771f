"""A shard made before TLS rolls to it as the rollout Job rolls it: the standby first, then the primary, with no
moment without a member that holds every commit.

The primary runs the configuration of the release before TLS (no certificate, ``host`` lines, no TLS
asked): this release's configuration with exactly those parts taken out. The standby of this release
streams from it without TLS (it asks for TLS, the old primary offers none); after a switchover to it,
the old primary comes back on this release and streams over TLS from the new one. On the recipe image
alone: the Debian-packaged image runs the same Patroni and PostgreSQL, and the roll is a repetition.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hooks.replication import config as patroni_config
from hooks.replication import tls

from .members import Member, Shard, start_member, wait_for

pytestmark = pytest.mark.parametrize("shard", ["recipe"], indirect=True)

Obj = dict[str, Any]


def before_tls(config: Obj) -> Obj:
    """This release's configuration less what TLS added: the configuration a member made before it runs."""
    old = copy.deepcopy(config)
    for key in tls.restapi():
        del old["restapi"][key]
    del old["ctl"]
    postgresql = old["postgresql"]
    for key in tls.server_parameters():
        del postgresql["parameters"][key]
    for user in postgresql["authentication"].values():
        for key in tls.client():
            del user[key]
    postgresql["pg_hba"] = [rule.replace("hostssl ", "host ", 1) for rule in postgresql["pg_hba"]]
    return old


@pytest.fixture(scope="module")
def old_primary(shard: Shard) -> Iterator[Member]:
    path: Path = shard.folder / "before-tls.yml"
    path.write_text(json.dumps(before_tls(json.loads((shard.folder / patroni_config.CONFIG_FILE).read_text()))))
    path.chmod(0o644)
    member = start_member(shard, 0, config=path)
    try:
        wait_for(f"{member.name} leads", lambda: shard.holder("leader") == member.name, [member])
        yield member
    finally:
        member.remove()


def test_a_standby_of_this_release_streams_from_a_primary_made_before_tls_then_takes_over_over_tls(
    shard: Shard, old_primary: Member
) -> None:
    standby = start_member(shard, 1)
    try:
        wait_for(f"{standby.name} streams", lambda: bool(old_primary.streams_to(standby.name)), [old_primary, standby])
        assert old_primary.streams_to(standby.name) == "f"  # the old primary serves no TLS
        wait_for(
            f"{shard.scope}-sync names {standby.name}",
            lambda: shard.holder("sync", "sync_standby") == standby.name,
            [old_primary, standby],
        )
        standby.patronictl("switchover", shard.scope, "--candidate", standby.name, "--force")
        wait_for(f"{standby.name} leads", lambda: shard.holder("leader") == standby.name, [old_primary, standby])
        # The rollout Job evicts it; its pod comes back on this release's template (here on an empty volume: it clones).
        old_primary.remove()
        gone = shard.kube.http.delete(f"/api/v1/namespaces/{shard.namespace}/pods/{old_primary.name}")
        assert gone.status_code == 200, gone.text
        rolled = start_member(shard, 0)
        try:
            wait_for(f"{rolled.name} streams", lambda: bool(standby.streams_to(rolled.name)), [standby, rolled])
            assert standby.streams_to(rolled.name) == "t"
        finally:
            rolled.remove()
    finally:
        standby.remove()
