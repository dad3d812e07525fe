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
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Final, Literal

import pydantic
from openai.types.responses import ResponseStreamEvent
from typing_extensions import TypeAliasType

from adapters.responses.sdk_seam import discriminator_of

__all__ = ["STREAM_EVENT", "tagged"]


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
