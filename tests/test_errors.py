"""`first_error` turns pydantic's first problem into (field path, message)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from skillopt.errors import first_error


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    inner: Inner
    items: list[int] = []


def _error(**data) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        Outer(**data)
    return info.value


def test_the_path_is_dotted_and_list_indexes_are_parts():
    assert first_error(_error(inner={"n": "x"})) == (
        "inner.n",
        "Input should be a valid integer, unable to parse string as an integer",
    )
    assert first_error(_error(inner={"n": 1}, items=[1, "y"]))[0] == "items.1"


def test_pydantic_wording_is_kept_unless_reworded_by_type():
    exc = _error(inner={"n": 1}, typo=1)
    assert first_error(exc) == ("typo", "Extra inputs are not permitted")
    assert first_error(exc, {"extra_forbidden": "unknown field"}) == ("typo", "unknown field")
    assert first_error(_error(), {"missing": "required"}) == ("inner", "required")


def test_a_whole_object_error_has_an_empty_path():
    with pytest.raises(ValidationError) as info:
        Inner.model_validate(3)
    assert first_error(info.value)[0] == ""
