"""``hooks/replication/tls.py``: each member's own key and certificate, and TLS as the only way in.

Read from the rendered member template and its Patroni configuration; the Patroni tier and the installed
tier hold the same to real PostgreSQL and Patroni (the stream over TLS, a session without it refused).
"""

from __future__ import annotations

import shlex

from hooks.replication import tls

from ...support.replication import config, container, rendered, statefulset


def pod() -> dict[str, object]:
    template: dict[str, object] = statefulset(rendered())["spec"]["template"]["spec"]
    return template


def init() -> dict[str, object]:
    containers = pod()["initContainers"]
    assert isinstance(containers, list)
    return next(each for each in containers if each["name"] == tls.INIT_CONTAINER)


# --- the key and certificate -------------------------------------------------------------------------------


def test_each_member_makes_its_key_with_its_own_image_before_anything_starts() -> None:
    assert init()["image"] == container(rendered())["image"]


def test_the_init_container_runs_as_restricted_as_the_member() -> None:
    db = container(rendered())
    assert init()["securityContext"] == db["securityContext"]
    assert init().get("resources") == db.get("resources")


def test_the_key_lives_in_memory_and_dies_with_the_pod() -> None:
    volumes = pod()["volumes"]
    assert isinstance(volumes, list)
    assert {"name": tls.VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": tls.SIZE_LIMIT}} in volumes


def test_the_member_reads_the_key_and_only_the_init_container_writes_it() -> None:
    assert {"name": tls.VOLUME, "mountPath": tls.DIRECTORY, "readOnly": True} in container(rendered())["volumeMounts"]
    assert init()["volumeMounts"] == [{"name": tls.VOLUME, "mountPath": tls.DIRECTORY}]


def test_the_key_is_made_unreadable_by_others_and_the_certificate_names_the_member() -> None:
    command = init()["command"]
    assert isinstance(command, list)
    script = command[2]
    assert shlex.split(script)[:2] == ["umask", "077"]
    assert command[3:] == ["tls", str(tls.DAYS), f"$({tls.MEMBER_ENV})", tls.KEY, tls.CERTIFICATE]
    assert init()["env"] == [
        {"name": tls.MEMBER_ENV, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}
    ]


# --- TLS as the only way in --------------------------------------------------------------------------------


def test_postgresql_serves_tls_with_the_members_certificate() -> None:
    parameters = config(rendered())["postgresql"]["parameters"]
    assert (parameters["ssl"], parameters["ssl_cert_file"], parameters["ssl_key_file"]) == (
        "on",
        tls.CERTIFICATE,
        tls.KEY,
    )


def test_every_address_must_come_over_tls() -> None:
    rules = config(rendered())["postgresql"]["pg_hba"]
    assert all(rule.startswith(("local ", "hostssl ")) for rule in rules), rules


def test_members_ask_each_other_for_tls_and_scram_bound_to_it_yet_still_reach_a_member_made_before_tls() -> None:
    """A new standby streams from an old primary while a shard rolls to this release; the Patroni tier shows the
    stream on TLS once both ends serve it."""
    authentication = config(rendered())["postgresql"]["authentication"]
    for user in ("superuser", "replication"):
        assert (authentication[user]["sslmode"], authentication[user]["channel_binding"]) == ("prefer", "prefer")


def test_patronis_rest_api_serves_https_and_the_probes_ask_it_so() -> None:
    restapi = config(rendered())["restapi"]
    assert (restapi["certfile"], restapi["keyfile"]) == (tls.CERTIFICATE, tls.KEY)
    db = container(rendered())
    assert db["readinessProbe"]["httpGet"]["scheme"] == db["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"


def test_patronictl_in_a_member_calls_the_others_without_a_ca() -> None:
    assert config(rendered())["ctl"] == {"insecure": True}
