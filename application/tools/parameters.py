"""Strict cattrs structuring and strict-mode JSON Schema for attrs parameter classes."""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import ForbiddenExtraKeysError, IterableValidationError, IterableValidationNote
from cattrs.gen import make_dict_structure_fn
from cattrs.v import transform_error

__all__ = [
    "ParameterError",
    "describe_errors",
    "describe_type",
    "json_schema_for",
    "not_blank",
    "strict_converter",
    "supported_type",
]

_SCALARS: Final[Mapping[type, Mapping[str, object]]] = types.MappingProxyType(
    {
        str: {"type": "string"},
        int: {"type": "integer"},
        float: {"type": "number"},
        bool: {"type": "boolean"},
    }
)
_SCALAR_NAMES: Final[Mapping[type, str]] = types.MappingProxyType(
    {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}
)


class ParameterError(ValueError):
    """Raised by a parameter class's validators; its message is shown to the model as it is.

    Write messages that never quote the value received: they describe the rule that was broken.
    """


def not_blank(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    """An attrs validator for parameter strings that must say something."""
    if not value.strip():
        raise ParameterError("must not be empty")


class _WrongTypeError(TypeError):
    """A JSON value of the wrong type; carries no copy of the value."""


def _optional_inner(tp: object) -> object | None:
    """``X`` for ``X | None`` (or ``Optional[X]``), None for anything else."""
    if get_origin(tp) in (Union, types.UnionType):
        args = get_args(tp)
        rest = tuple(a for a in args if a is not type(None))
        if len(args) == 2 and len(rest) == 1:
            return typing.cast(object, rest[0])
    return None


def _sequence_item(tp: object) -> object | None:
    """``X`` for ``tuple[X, ...]`` and ``list[X]``, None for anything else."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return typing.cast(object, args[0])
    if origin is list and len(args) == 1:
        return typing.cast(object, args[0])
    return None


def _string_literal(tp: object) -> tuple[str, ...] | None:
    if get_origin(tp) is Literal:
        values = get_args(tp)
        if values and all(isinstance(v, str) for v in values):
            return typing.cast(tuple[str, ...], values)
    return None


def _json_type(value: object) -> str | None:
    """The JSON Schema type of a literal or enum value: a string, an integer or a boolean."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, str):
        return "string"
    return None


def _choices(tp: object) -> tuple[object, ...] | None:
    """The JSON values a ``Literal`` or an ``Enum`` allows (strings, integers, booleans), None for
    any other type or for one with a value of another kind."""
    if get_origin(tp) is Literal:
        values: tuple[object, ...] = get_args(tp)
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = tuple(member.value for member in tp)
    else:
        return None
    if values and all(_json_type(v) is not None for v in values):
        return values
    return None


def _choice_schema(values: tuple[object, ...]) -> dict[str, object]:
    kinds = list(dict.fromkeys(typing.cast(str, _json_type(v)) for v in values))
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": list(values)}


def supported_type(tp: object, _enclosing: frozenset[type] = frozenset()) -> bool:
    """True for the annotations a parameter class may use (and :func:`json_schema_for` can describe).

    A class that holds itself, directly or through another class, is not one: its schema would never
    end, and a value of it can nest without bound."""
    if isinstance(tp, type) and tp in _SCALARS:
        return True
    if _choices(tp) is not None:
        return True
    inner = _optional_inner(tp)
    if inner is None:
        inner = _sequence_item(tp)
    if inner is not None:
        return supported_type(inner, _enclosing)
    if isinstance(tp, type) and attrs.has(tp):
        if tp in _enclosing:
            return False
        enclosing = _enclosing | {tp}
        return all(supported_type(f.type, enclosing) for f in attrs.fields(attrs.resolve_types(tp)))
    return False


def describe_type(tp: object) -> str:
    """What a value of ``tp`` looks like, in words, for error messages."""
    if isinstance(tp, type) and tp in _SCALAR_NAMES:
        return _SCALAR_NAMES[tp]
    choices = _choices(tp)
    if choices is not None:
        return "one of " + ", ".join(json.dumps(v) for v in choices)
    inner = _optional_inner(tp)
    if inner is not None:
        return f"{describe_type(inner)} or null"
    item = _sequence_item(tp)
    if item is not None:
        return f"an array (each item {describe_type(item)})"
    return "an object"


def _nullable(schema: dict[str, object]) -> dict[str, object]:
    kind = schema.get("type")
    if isinstance(kind, list) and "enum" in schema:
        return {**schema, "type": [*kind, "null"], "enum": [*typing.cast(list[object], schema["enum"]), None]}
    if isinstance(kind, str) and kind != "object":
        nullable = {**schema, "type": [kind, "null"]}
        if "enum" in schema:
            nullable["enum"] = [*typing.cast(list[object], schema["enum"]), None]
        return nullable
    return {"anyOf": [schema, {"type": "null"}]}


def _schema(tp: object, enclosing: frozenset[type]) -> dict[str, object]:
    if isinstance(tp, type) and tp in _SCALARS:
        return dict(_SCALARS[tp])
    choices = _choices(tp)
    if choices is not None:
        return _choice_schema(choices)
    inner = _optional_inner(tp)
    if inner is not None:
        return _nullable(_schema(inner, enclosing))
    item = _sequence_item(tp)
    if item is not None:
        return {"type": "array", "items": _schema(item, enclosing)}
    if isinstance(tp, type) and attrs.has(tp):
        return _object_schema(tp, enclosing)
    raise TypeError(f"parameter type {tp!r} has no JSON Schema here")


def json_schema_for(cls: type) -> dict[str, object]:
    """The strict-mode JSON Schema of an attrs class.

    Every property is listed in ``required`` and ``additionalProperties`` is false, as OpenAI's
    strict mode demands; an optional field (``X | None``) is expressed as a nullable type. A field's
    ``metadata["description"]`` becomes the property's description. A class that holds itself,
    directly or through another class, raises ``TypeError``.
    """
    return _object_schema(cls, frozenset())


def _object_schema(cls: type, enclosing: frozenset[type]) -> dict[str, object]:
    if cls in enclosing:
        raise TypeError(f"{cls.__qualname__} holds itself: a schema of it would have no end")
    properties: dict[str, object] = {}
    for field in attrs.fields(attrs.resolve_types(cls)):
        prop = _schema(field.type, enclosing | {cls})
        description = field.metadata.get("description")
        if isinstance(description, str):
            prop = {**prop, "description": description}
        properties[field.alias or field.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _strict_scalar(expected: type) -> Callable[[object, type], object]:
    def structure(value: object, _: type) -> object:
        if value.__class__ is expected:
            return value
        # bool is an int in Python but not in JSON Schema; cattrs would also happily turn 5 into "5".
        if isinstance(value, bool) and expected is not bool:
            raise _WrongTypeError(_SCALAR_NAMES[expected])
        if expected is float and isinstance(value, int):
            return float(value)
        if not isinstance(value, expected):
            raise _WrongTypeError(_SCALAR_NAMES[expected])
        return value

    return structure


def _strict_sequence_factory(
    converter: cattrs.Converter,
) -> Callable[[Any], Callable[[object, type], object]]:
    def factory(tp: Any) -> Callable[[object, type], object]:
        item = _sequence_item(tp)
        as_tuple = get_origin(tp) is tuple
        # The item's hook, looked up at the first use (a class may hold a sequence of itself).
        hooks: list[Callable[[object, Any], object]] = []

        def structure(value: object, _: type) -> object:
            # Without this check cattrs would iterate a string or a mapping character by character.
            if not isinstance(value, list):
                raise _WrongTypeError("an array")
            if not hooks:
                hooks.append(converter.get_structure_hook(item))
            hook = hooks[0]
            items: list[object] = []
            errors: list[Exception] = []
            for index, element in enumerate(value):
                try:
                    items.append(hook(element, item))
                except Exception as exc:
                    exc.add_note(IterableValidationNote(f"Structuring {tp!r} @ index {index}", index, item))
                    errors.append(exc)
            if errors:
                raise IterableValidationError(f"While structuring {tp!r}", errors, tp)
            return tuple(items) if as_tuple else items

        return structure

    return factory


def _strict_choice(tp: Any) -> Callable[[object, type], object]:
    """A Literal's or an Enum's structuring that takes only its own values, of their own JSON type
    (``true`` is not ``1``); an Enum's value becomes its member."""
    values = typing.cast(tuple[object, ...], _choices(tp))
    results: tuple[object, ...] = tuple(tp) if isinstance(tp, type) and issubclass(tp, enum.Enum) else values

    def structure(value: object, _: type) -> object:
        for allowed, result in zip(values, results, strict=True):
            if value.__class__ is allowed.__class__ and value == allowed:
                return result
        raise _WrongTypeError(describe_type(tp))

    return structure


def _optional_factory(converter: cattrs.Converter) -> Callable[[Any], Callable[[object, type], object]]:
    def factory(tp: Any) -> Callable[[object, type], object]:
        inner = _optional_inner(tp)
        # As for sequences: the inner hook once, at the first value that is not null.
        hooks: list[Callable[[object, Any], object]] = []

        def structure(value: object, _: type) -> object:
            # None, or a value of the very scalar type asked for: nothing to check or convert.
            if value is None or value.__class__ is inner:
                return value
            if not hooks:
                hooks.append(converter.get_structure_hook(inner))
            return hooks[0](value, inner)

        return structure

    return factory


def _strict_object_factory(converter: cattrs.Converter) -> Callable[[Any], Callable[[object, type], object]]:
    def factory(cls: Any) -> Callable[[object, type], object]:
        quick = make_dict_structure_fn(
            cls, converter, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=False
        )
        detailed = make_dict_structure_fn(
            cls, converter, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True
        )

        def structure(value: object, _: type) -> object:
            if value.__class__ is not dict and not isinstance(value, Mapping):
                raise _WrongTypeError("an object")
            try:
                return quick(value, cls)
            except Exception:
                # The quick path only says that something failed; the detailed one says where.
                return detailed(value, cls)

        return structure

    return factory


def strict_converter() -> cattrs.Converter:
    """A converter that accepts only the JSON types a schema from :func:`json_schema_for` allows.

    No coercion (``"5"`` is not an integer, ``5`` is not a string, ``1`` is not ``true``), no
    unknown keys, no strings or objects where an array is expected.
    """
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for scalar in _SCALARS:
        converter.register_structure_hook(scalar, _strict_scalar(scalar))
    converter.register_structure_hook_factory(
        lambda tp: _sequence_item(tp) is not None, _strict_sequence_factory(converter)
    )
    converter.register_structure_hook_factory(
        lambda tp: _optional_inner(tp) is not None, _optional_factory(converter)
    )
    converter.register_structure_hook_factory(
        lambda tp: isinstance(tp, type) and attrs.has(tp), _strict_object_factory(converter)
    )
    # String literals keep cattrs's own hook, which already takes only their values.
    converter.register_structure_hook_factory(
        lambda tp: _choices(tp) is not None and _string_literal(tp) is None, _strict_choice
    )
    return converter


def _allowed_fields(cls: type) -> str:
    names = [f.alias or f.name for f in attrs.fields(cls)]
    return ", ".join(names) if names else "none"


def _format_exception(exc: BaseException, tp: type | None) -> str:
    # Only our own words are shown: cattrs's and Python's messages quote the offending value.
    if isinstance(exc, ParameterError):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field is missing"
    if isinstance(exc, ForbiddenExtraKeysError):
        return f"unexpected field; the allowed fields are: {_allowed_fields(exc.cl)}"
    if tp is not None:
        return f"expected {describe_type(tp)}"
    if isinstance(exc, _WrongTypeError):
        return f"expected {exc}"
    return "invalid value"


def describe_errors(exc: BaseException) -> tuple[str, ...]:
    """Safe ``description @ $.path`` lines for a structuring failure; values are never quoted."""
    return tuple(transform_error(exc, "$", _format_exception))
