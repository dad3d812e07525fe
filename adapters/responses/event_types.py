"""The type the SDK builds a stream's events as: its own union, told which field names each event's class.

The SDK builds every event of a stream with ``construct_type(value=data, type_=ResponseStreamEvent)``.
``ResponseStreamEvent`` is ``Annotated[Union[<59 event classes>], PropertyInfo(discriminator="type")]``:
``PropertyInfo`` is the SDK's own mark, which pydantic does not read, so pydantic validates an event
against the union's classes one after another until one fits, which is most of what the SDK's
iteration of a stream of small events costs.

:data:`STREAM_EVENT` is the same union with pydantic's own discriminator beside the SDK's mark, as a
type alias (``construct_type`` strips an ``Annotated`` before it validates, an alias it validates
whole). Pydantic then validates the one class the event's ``type`` names. Nothing else changes, since
no other class could have fitted: each class holds its own required literal ``type`` (checked here,
class by class, or the SDK's union is used as it is). An event that fits no class is built the SDK's
own way: it reads its own mark and constructs the class the ``type`` names, or its first class for a
``type`` it does not know. A test types every recorded and many spoilt events both ways and finds them equal.

:func:`typed` builds an event straight from its JSON text with the same union (pydantic parses and
validates in one pass, without the dict ``json.loads`` would build first), every union of models
inside an event (an output item, a content part, an annotation) told the same way which field names
its class: what the SDK's own first step, validating the parsed data against the alias, returns for
it, since there too no other class could have fitted. Whatever that pass refuses is left to the SDK's
own way, which parses and builds it as it always does.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Final, Literal, cast

import pydantic
import pydantic_core
from openai.types.responses import ResponseStreamEvent
from typing_extensions import TypeAliasType

from adapters.responses.sdk_seam import discriminator_of

__all__ = ["STREAM_EVENT", "tagged", "typed"]


def _tags(variant: object, name: str) -> tuple[object, ...] | None:
    """The literal values ``variant``'s field ``name`` may hold, or None when it is not a pydantic
    model whose field is a required literal under its own name: pydantic could not select it by that
    field, or (a default) the union as shipped would take an event that leaves the field out."""
    if not (isinstance(variant, type) and issubclass(variant, pydantic.BaseModel)):
        return None
    field = variant.model_fields.get(name)
    if (
        field is None
        or not field.is_required()
        or field.alias not in (None, name)
        or typing.get_origin(field.annotation) is not Literal
    ):
        return None
    return typing.get_args(field.annotation)


def tagged(event_type: Any) -> Any:
    """``event_type``, an SDK union marked with its discriminator, as an alias that also carries
    pydantic's; ``event_type`` itself when it is not such a union, or when pydantic could not tell
    its classes apart by that field as the union does (one is not a model, has no required literal
    there, or shares a value)."""
    if typing.get_origin(event_type) is not Annotated:
        return event_type
    union, *metadata = typing.get_args(event_type)
    name = discriminator_of(metadata)
    if name is None or typing.get_origin(union) not in (typing.Union, types.UnionType):
        return event_type
    seen: set[object] = set()
    for variant in typing.get_args(union):
        tags = _tags(variant, name)
        if not tags or seen.intersection(tags):
            return event_type
        seen.update(tags)
    by_tag = Annotated[(union, *metadata, pydantic.Field(discriminator=name))]  # type: ignore[valid-type]
    return TypeAliasType("EventByTag", by_tag)


STREAM_EVENT: Final[Any] = tagged(ResponseStreamEvent)


def _model_tags(choice: Any, definitions: dict[str, Any], name: str) -> tuple[object, ...] | None:
    """The literal values a union choice's field ``name`` must hold, when the choice is a model whose
    field is a required literal under its own name (as :func:`_tags`, read off the core schema)."""
    if choice.get("type") == "definition-ref":
        choice = definitions.get(choice.get("schema_ref"), {})
    if choice.get("type") != "model" or choice.get("schema", {}).get("type") != "model-fields":
        return None
    field = choice["schema"]["fields"].get(name)
    if field is None or field.get("validation_alias") is not None or field.get("serialization_alias"):
        return None
    literal = field.get("schema", {})
    if literal.get("type") != "literal":
        return None
    return tuple(literal["expected"])


def _by_tag(schema: Any, definitions: dict[str, Any], name: str) -> Any:
    """``schema`` with every union of models pydantic can tell apart by field ``name`` validated by it."""
    if isinstance(schema, list):
        return [_by_tag(value, definitions, name) for value in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: _by_tag(value, definitions, name) for key, value in schema.items()}
    if schema.get("type") != "union" or schema.get("mode", "smart") != "smart":
        return schema
    choices: dict[object, Any] = {}
    for choice in schema["choices"]:
        if isinstance(choice, tuple | list):
            return schema
        tags = _model_tags(choice, definitions, name)
        if not tags or choices.keys() & set(tags):
            return schema
        choices.update(dict.fromkeys(tags, choice))
    tagged_union = {"type": "tagged-union", "choices": choices, "discriminator": name}
    return tagged_union | {key: schema[key] for key in ("ref", "metadata", "serialization") if key in schema}


def _validator(event_type: Any) -> pydantic_core.SchemaValidator:
    """Pydantic's validator of ``event_type`` with every union of models below it told the field that
    names the class too (the one the SDK's mark names), as :data:`STREAM_EVENT` tells the top one."""
    schema = pydantic.TypeAdapter(event_type).core_schema
    name = discriminator_of(typing.get_args(ResponseStreamEvent)[1:]) or "type"
    definitions = {
        definition["ref"]: definition for definition in schema.get("definitions", ()) if "ref" in definition
    }
    return pydantic_core.SchemaValidator(cast(Any, _by_tag(schema, definitions, name)))


# Built on the first event typed, not on import: a run sends its first request before any event comes.
_by_tag_validator: pydantic_core.SchemaValidator | None = None
_REFUSED: Final = (ValueError, RecursionError)


def typed(data: str) -> pydantic.BaseModel | None:
    """The event ``data`` (one event's JSON text) holds, as the SDK's class its ``type`` names, validated
    whole; None when pydantic refuses it (not JSON it reads as ``json.loads`` does, not an object, no
    class fits), or when it carries an ``error`` beside its fields, on which the SDK's stream reader
    raises: the SDK's own way then reads it."""
    global _by_tag_validator
    if _by_tag_validator is None:
        _by_tag_validator = _validator(STREAM_EVENT)
    try:
        event = _by_tag_validator.validate_json(data)
    except _REFUSED:
        return None
    extra = event.__pydantic_extra__
    if extra and "error" in extra:
        return None
    return cast(pydantic.BaseModel, event)
