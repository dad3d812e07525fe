"""Strict structuring at the edges: what the schema cannot say is refused, and messages stay safe."""

from __future__ import annotations

from typing import Literal

import attrs
import pytest
from cattrs.errors import ClassValidationError

from application.tools.parameters import describe_errors, strict_converter, supported_type
from tests.strategies import MARKER


@attrs.frozen
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    "annotation",
    [int | str, Literal[1.5], dict[str, int], set[str], tuple[int, int], object, int | str | None],
    ids=["union", "float-literal", "dict", "set", "fixed-tuple", "object", "wide-optional"],
)
def test_types_without_a_strict_schema_are_not_supported(annotation: object) -> None:
    assert not supported_type(annotation)


@pytest.mark.parametrize(
    "annotation",
    [
        str,
        int,
        float,
        bool,
        Literal["a"],
        Literal[1, 2],
        Literal[True],
        str | None,
        tuple[Point, ...],
        list[int | None],
        Point | None,
    ],
)
def test_json_shaped_types_are_supported(annotation: object) -> None:
    assert supported_type(annotation)


def test_a_top_level_value_that_is_not_an_object_is_named_as_such() -> None:
    with pytest.raises(TypeError) as caught:
        strict_converter().structure([MARKER], Point)
    assert describe_errors(caught.value) == ("expected an object @ $",)


def test_an_unforeseen_exception_is_described_without_its_text() -> None:
    assert describe_errors(RuntimeError(MARKER)) == ("invalid value @ $",)


def test_integers_stay_integers_and_floats_accept_them() -> None:
    converter = strict_converter()
    assert converter.structure(3, float) == 3.0
    assert isinstance(converter.structure(3, float), float)
    assert converter.structure([1, 2], tuple[int, ...]) == (1, 2)
    assert converter.structure([1, None], list[int | None]) == [1, None]


@attrs.frozen
class Choice:
    level: Literal[1, 2]
    flag: Literal[True]


def test_a_literal_takes_only_its_values_of_their_own_json_type() -> None:
    converter = strict_converter()
    assert converter.structure({"level": 2, "flag": True}, Choice) == Choice(2, True)
    # JSON's true is not 1, and 1 is not true, though Python finds them equal.
    for wrong in ({"level": True, "flag": True}, {"level": 1, "flag": 1}, {"level": 3, "flag": True}):
        with pytest.raises(ClassValidationError) as caught:
            converter.structure(wrong, Choice)
        assert len(describe_errors(caught.value)) == 1
