"""The dev overlay as users install it: one hooks replica over plain HTTP, called by Metacontroller's pod."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.stack import Stack

from ..support.sharddbs import wait_until
from .installs import Install, assert_cache_gone_before_shards

NAME = "demo"


@pytest.fixture(scope="module")
def install(
    stack: Stack, metacontroller_manifests: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Install]:
    installed = Install(stack, "dev", tmp_path_factory.mktemp("dev"), metacontroller_manifests)
    installed.install()
    yield installed
    installed.uninstall()


def test_the_dev_hooks_run_one_replica_of_the_dev_image(install: Install) -> None:
    pods = install.hooks_pods()
    assert [pod["spec"]["containers"][0]["image"] for pod in pods] == ["ghcr.io/example/sharddb-hooks:dev"]


def test_a_sharddb_from_examples_comes_up_and_is_deleted_in_order(install: Install) -> None:
    install.step("example")
    assert install.events("default", "SyncError") == []
    mark = install.stack.audit.mark()
    install.step("delete")
    wait_until("the shard pods gone", lambda: not install.pods("default", f"app.kubernetes.io/instance={NAME}"), 300)
    assert_cache_gone_before_shards(install, mark, "default", NAME)
