"""The msgspec wording ``errors.from_msgspec`` translates, pinned, and what it becomes.

``errors`` reads msgspec's English error messages to name the field first. If a
msgspec upgrade rewords them, the pins below fail and say so, instead of 4xx
answers silently losing the field they name.
"""

from __future__ import annotations

import msgspec
import pytest

from hooks import errors
from hooks.service.refusals import http_status

REWORDED = "msgspec reworded its errors: update the patterns in hooks/errors.py (from_msgspec)"


class Inner(msgspec.Struct):
    name: str


class Outer(msgspec.Struct):
    inner: Inner


def msgspec_says(body: bytes) -> msgspec.ValidationError:
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.json.decode(body, type=Outer)
    return caught.value


def test_msgspec_puts_the_path_after_the_problem() -> None:
    assert str(msgspec_says(b'{"inner": {"name": 1}}')) == "Expected `str`, got `int` - at `$.inner.name`", REWORDED


def test_msgspec_names_a_missing_field_and_where_its_object_is() -> None:
    message = str(msgspec_says(b'{"inner": {}}'))
    assert message == "Object missing required field `name` - at `$.inner`", REWORDED


def test_msgspec_gives_no_path_for_a_field_missing_at_the_root() -> None:
    assert str(msgspec_says(b"{}")) == "Object missing required field `inner`", REWORDED


def test_msgspec_gives_no_path_for_a_root_of_the_wrong_type() -> None:
    assert str(msgspec_says(b"[]")) == "Expected `object`, got `array`", REWORDED


def test_msgspec_calls_a_mapping_what_we_call_it_in_hand_made_checks() -> None:
    assert str(msgspec_says(b"[]")).startswith(errors.EXPECTED_OBJECT), REWORDED


def test_a_wrong_type_names_the_field_first() -> None:
    refused = errors.from_msgspec(msgspec_says(b'{"inner": {"name": 1}}'))
    assert (http_status(refused), refused.message) == (422, "inner.name: Expected `str`, got `int`")


def test_a_missing_field_is_named_with_its_parents_and_reads_like_pydantic() -> None:
    refused = errors.from_msgspec(msgspec_says(b'{"inner": {}}'))
    assert (http_status(refused), refused.message) == (422, "inner.name: Field required")


def test_a_field_missing_at_the_root_is_named_alone() -> None:
    assert errors.from_msgspec(msgspec_says(b"{}")).message == "inner: Field required"


def test_a_problem_with_the_whole_request_is_named_body() -> None:
    assert errors.from_msgspec(msgspec_says(b"[]")).message == "body: Expected `object`, got `array`"
