"""The audit log read as typed writes: who wrote what, and for a pod's deletion, which pod."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from testbed.real.audit import AuditLog, AuditLogCutError

Obj = dict[str, Any]


def event(verb: str, code: int, answer: Obj | None = None) -> Obj:
    found: Obj = {
        "kind": "Event",
        "stage": "ResponseComplete",
        "verb": verb,
        "user": {"username": "system:node:node-1"},
        "objectRef": {"resource": "pods", "namespace": "fleet", "name": "db-db-3", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": code},
        "stageTimestamp": "2026-12-01T23:51:46.123456Z",
    }
    if answer is not None:
        found["responseObject"] = answer
    return found


def written(tmp_path: Path, *events: Obj) -> AuditLog:
    path = tmp_path / "audit.log"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return AuditLog(path)


def test_a_pods_deletion_names_the_uid_of_the_pod_it_took(tmp_path: Path) -> None:
    pod = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "db-db-3", "uid": "uid-1"}}
    (write,) = written(tmp_path, event("delete", 200, pod)).since()
    assert (write.verb, write.name, write.uid) == ("delete", "db-db-3", "uid-1")


def test_a_write_answered_with_a_status_names_no_uid(tmp_path: Path) -> None:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "details": {"uid": "uid-1"}, "code": 404}
    (write,) = written(tmp_path, event("delete", 404, status)).since(ok=False)
    assert write.uid == ""


def test_a_write_logged_without_its_answer_names_no_uid(tmp_path: Path) -> None:
    (write,) = written(tmp_path, event("update", 200)).since()
    assert (write.verb, write.uid) == ("update", "")


def test_a_rotated_log_is_refused_not_read_in_part(tmp_path: Path) -> None:
    audit = written(tmp_path, event("update", 200))
    (tmp_path / "audit-2026-12-02T10-39-14.216.log").write_text(json.dumps(event("delete", 200)) + "\n")
    with pytest.raises(AuditLogCutError, match=re.escape("audit-2026-12-02T10-39-14.216.log")):
        audit.since()


def test_a_mark_past_the_end_of_the_log_is_refused(tmp_path: Path) -> None:
    audit = written(tmp_path, event("update", 200))
    with pytest.raises(AuditLogCutError, match="cut"):
        audit.since(audit.mark() + 1)


def test_a_write_says_when_it_came_in_as_well_as_when_it_was_answered(tmp_path: Path) -> None:
    logged = event("delete", 200) | {"requestReceivedTimestamp": "2026-12-01T23:51:45.900000Z"}
    (write,) = written(tmp_path, logged).since()
    assert (write.at - write.began).total_seconds() == 0.223456


def test_a_sharddb_status_write_says_what_the_status_became(tmp_path: Path) -> None:
    update = event("update", 200)
    update["objectRef"] = {"resource": "sharddbs", "subresource": "status", "namespace": "fleet", "name": "demo"}
    update["requestObject"] = {"kind": "ShardDB", "status": {"readyShards": 3, "cacheReady": True}}
    (write,) = written(tmp_path, update).since()
    assert write.status == '{"cacheReady":true,"readyShards":3}'
    assert str(write).endswith('update sharddbs/status fleet/demo -> 200: {"cacheReady":true,"readyShards":3}')


def test_a_write_logged_without_its_request_says_no_status(tmp_path: Path) -> None:
    (write,) = written(tmp_path, event("update", 200)).since()
    assert write.status == ""
