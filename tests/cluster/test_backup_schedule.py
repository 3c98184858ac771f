"""``hooks/backup/schedule.py`` says of a schedule what the real API server says of a CronJob with it.

Each schedule below is sent as a CronJob by a server-side dry run (validated, never stored): the hooks' check
must refuse exactly those the API server refuses, so the hooks never write a CronJob the server refuses, and
never hold back one it takes.
"""

from __future__ import annotations

import pytest

from hooks.backup import schedule

from ..support.kube import Kube
from ..support.schedules import SCHEDULES


def server_refuses(kube: Kube, namespace: str, text: str) -> str | None:
    """The API server's message for a CronJob with ``text`` as its schedule; None when it takes it."""
    body = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {
            "schedule": text,
            "jobTemplate": {
                "spec": {
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
                }
            },
        },
    }
    url = f"/apis/batch/v1/namespaces/{namespace}/cronjobs"
    response = kube.http.post(url, json=body, params={"dryRun": "All"})
    if response.status_code == 201:
        return None
    assert response.status_code == 422, response.text
    return str(response.json()["message"])


@pytest.mark.parametrize("text", SCHEDULES)
def test_the_hooks_refuse_a_schedule_exactly_when_the_api_server_does(kube: Kube, namespace: str, text: str) -> None:
    said = server_refuses(kube, namespace, text)
    assert (schedule.problem(text) is None) == (said is None), (text, said, schedule.problem(text))


def test_both_taken_and_refused_schedules_are_tried() -> None:
    refused = [text for text in SCHEDULES if schedule.problem(text) is not None]
    assert 0 < len(refused) < len(SCHEDULES)
