"""A second, independent source of input: Schemathesis, driven by the app's own OpenAPI schema.

The schema is the real contract (``hooks.service.openapi``), so positive cases are well-formed
Metacontroller requests that must be answered; negative cases break it somewhere and
are refused with a 4xx (a few stay acceptable: the hooks do not insist on a
Content-Type, as Metacontroller always sends JSON) — never a 5xx either way.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from hooks.service.app import create_app

pytestmark = [pytest.mark.http, pytest.mark.slow]

SCHEMA = schemathesis.openapi.from_dict(create_app().openapi())
EXAMPLES = 50
PATHS = ["/sync", "/finalize", "/customize"]


def statuses(server_url: str, path: str, mode: GenerationMode) -> list[int]:
    seen: list[int] = []

    @given(data=st.data())
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def call(data: st.DataObject) -> None:
        case = data.draw(SCHEMA[path]["POST"].as_strategy(generation_mode=mode))
        response = case.call(base_url=server_url, timeout=10)
        seen.append(response.status_code)
        assert response.status_code < 500, response.text

    call()
    return seen


@pytest.mark.parametrize("path", PATHS)
def test_every_request_the_schema_allows_is_answered(server_url: str, path: str) -> None:
    seen = statuses(server_url, path, GenerationMode.POSITIVE)
    assert len(seen) >= EXAMPLES // 2
    assert set(seen) == {200}


@pytest.mark.parametrize("path", PATHS)
def test_requests_that_break_the_schema_are_refused_not_crashed(server_url: str, path: str) -> None:
    seen = statuses(server_url, path, GenerationMode.NEGATIVE)
    assert len(seen) >= EXAMPLES // 2
    assert sum(400 <= status < 500 for status in seen) >= len(seen) // 2, seen
