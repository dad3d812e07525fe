"""Structured final output: a type's strict JSON schema on the request, its answer read back into the type."""

from __future__ import annotations

import functools
import json
import re
import typing
from collections.abc import Iterator, Mapping
from typing import Any, Final, Generic, TypeAlias, TypeVar, Unpack

import attrs
import cattrs

from application.runs.run import OutputMode, ToolRun, ToolRunError
from application.tools.parameters import describe_errors, json_schema_for, strict_converter, supported_type
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatTransportError,
    ErrorContext,
    TextContent,
)

__all__ = [
    "OutputMode",
    "OutputRefusedError",
    "OutputSpec",
    "OutputValidationError",
    "RunOutput",
    "output_schema",
    "output_spec",
]

OutputT = TypeVar("OutputT")

# What the provider calls a message part that refuses to answer (the Responses API's ``refusal``).
_REFUSAL_PART: Final = "refusal"
_TEXT_PARTS: Final = frozenset({"output_text", _REFUSAL_PART})
_NAME_UNSAFE: Final = re.compile(r"[^a-zA-Z0-9_-]")
# A 400 whose message names one of these is the route refusing ``text.format`` itself.
_FORMAT_REFUSED: Final = ("text.format", "response_format", "json_schema")
_FENCE: Final = re.compile(r"\A```[a-zA-Z]*\n(.*)\n```\Z", re.DOTALL)
_WRAPPED: Final = "value"


class _NotJsonError(ValueError):
    """An answer that is no JSON text at all (as opposed to JSON of the wrong shape)."""


class OutputValidationError(ToolRunError):
    """The model's final answer did not fit the run's output type, after every retry it was given.

    ``raw_text`` is the last answer's text as it came; ``problems`` says, per line, what did not fit
    (``expected an integer @ $.count``), never quoting the answer; ``run`` is the run so far, the
    misfit answers included.
    """

    def __init__(
        self,
        message: str,
        *,
        raw_text: str = "",
        problems: tuple[str, ...] = (),
        run: ToolRun | None = None,
        **context: Unpack[ErrorContext],
    ) -> None:
        super().__init__(message, run=run, **context)
        self.raw_text = raw_text
        self.problems = problems


class OutputRefusedError(ToolRunError):
    """The model refused to give the typed answer (a ``refusal`` part); ``refusal`` is its text."""

    def __init__(
        self, message: str, *, refusal: str = "", run: ToolRun | None = None, **context: Unpack[ErrorContext]
    ) -> None:
        super().__init__(message, run=run, **context)
        self.refusal = refusal


def _wrapper(tp: object) -> type:
    """An attrs class with one field, ``value``, of ``tp``: the Responses API's schema must be an object."""
    return attrs.make_class("Output", {_WRAPPED: attrs.field(type=typing.cast(Any, tp))}, frozen=True)


def _schema_name(tp: object) -> str:
    name = getattr(tp, "__name__", None)
    text = _NAME_UNSAFE.sub("_", name if isinstance(name, str) and name else "output")
    return text[:64]


@attrs.frozen
class OutputSpec(Generic[OutputT]):
    """What a run's final answer must be: ``output_type``, its strict JSON schema and its name.

    An attrs class is its own schema's object; any other type (``list[Item]``, ``int``, a ``Literal``)
    is the ``value`` field of a wrapping object, since the Responses API takes only an object as the
    root of a schema, and the answer is unwrapped when read.
    """

    output_type: type[OutputT] | Any
    name: str
    schema: Mapping[str, object] = attrs.field(hash=False)
    wrapped: bool
    _as_class: type = attrs.field(hash=False, repr=False)
    _converter: cattrs.Converter = attrs.field(hash=False, repr=False, eq=False)

    @classmethod
    def of(cls, output_type: type[OutputT] | Any) -> OutputSpec[OutputT]:
        """The spec of ``output_type``; ``TypeError`` for a type no strict schema can describe."""
        wrapped = not (isinstance(output_type, type) and attrs.has(output_type))
        as_class = _wrapper(output_type) if wrapped else output_type
        if not supported_type(as_class):
            raise TypeError(
                f"output type {output_type!r} has no strict JSON schema: use attrs classes, str, int, float, "
                "bool, Literal and Enum values, X | None, list[X] and tuple[X, ...], and no class that holds "
                "itself"
            )
        return cls(
            output_type,
            _schema_name(output_type),
            json_schema_for(as_class),
            wrapped,
            as_class,
            strict_converter(),
        )

    @property
    def response_format(self) -> dict[str, object]:
        """The request's ``text.format``."""
        return {"type": "json_schema", "name": self.name, "schema": self.schema, "strict": True}

    def prompt(self) -> str:
        """The instructions' addition in prompted mode: the same schema, asked for in words."""
        schema = json.dumps(self.schema, separators=(",", ":"))
        return (
            "Answer with one JSON value and nothing else (no prose, no code fence) that matches this "
            f"JSON Schema exactly, every property present:\n{schema}"
        )

    def read(self, text: str) -> OutputT:
        """The answer's value; ``ValueError`` whose args are the problems, in words that quote nothing
        (a subclass of it when the text is not JSON at all)."""
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as error:
            raise _NotJsonError(f"the answer is not JSON ({error.msg} at character {error.pos})") from None
        except (ValueError, RecursionError):
            raise _NotJsonError("the answer is not JSON") from None
        try:
            value: object = self._converter.structure(data, self._as_class)
        except Exception as error:  # cattrs raises what the hooks raise, grouped
            raise ValueError(*describe_errors(error)) from None
        return typing.cast(OutputT, getattr(value, _WRAPPED) if self.wrapped else value)


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


@functools.lru_cache(maxsize=256)
def output_spec(output_type: object) -> OutputSpec[Any]:
    """:meth:`OutputSpec.of`, made once per type: a run asking for a type a run asked for before
    derives nothing again."""
    return OutputSpec.of(output_type)


def output_schema(output_type: object) -> dict[str, object]:
    """The strict JSON schema a run with ``output_type`` sends (see :class:`OutputSpec`)."""
    return dict(output_spec(output_type).schema)


def _provider_parts(provider_item: str | None) -> list[str] | None:
    """The kinds of the text-bearing parts of the provider's message item, in order; None when unknown."""
    if provider_item is None:
        return None
    try:
        item: object = json.loads(provider_item)
    except (ValueError, RecursionError):
        return None
    parts = item.get("content") if isinstance(item, dict) else None
    if not isinstance(parts, list):
        return None
    kinds = [part.get("type") for part in parts if isinstance(part, dict)]
    return [kind for kind in kinds if isinstance(kind, str) and kind in _TEXT_PARTS]


def _text_parts(response: ChatResponse) -> Iterator[tuple[str, str]]:
    """Each text part of the answer with its kind (``output_text`` or ``refusal``), as the provider's
    item names it; a text whose item says nothing of its parts is ``output_text``."""
    for message in response.messages:
        if message.role != "assistant":
            continue
        texts = [content for content in message.contents if isinstance(content, TextContent)]
        start = 0
        while start < len(texts):
            end = start
            while end < len(texts) and texts[end].provider_item == texts[start].provider_item:
                end += 1
            group = texts[start:end]
            kinds = _provider_parts(group[0].provider_item)
            if kinds is None or len(kinds) != len(group):
                kinds = ["output_text"] * len(group)
            for content, kind in zip(group, kinds, strict=True):
                yield kind, content.text
            start = end


@attrs.frozen
class Fitted(Generic[OutputT]):
    value: OutputT


@attrs.frozen
class Misfit:
    text: str
    problems: tuple[str, ...]
    not_json: bool = False


@attrs.frozen
class Refused:
    refusal: str


Verdict: TypeAlias = Fitted[Any] | Misfit | Refused


def _unfenced(text: str) -> str:
    match = _FENCE.match(text.strip())
    return match.group(1) if match else text


@attrs.define
class RunOutput:
    """One run's structured output: how it is asked for, how many misfits it may still answer, and
    the value once the final answer fits.

    ``retries`` is how many more turns a misfit answer gets (``agent.max_output_retries``). ``mode``
    starts as ``json_schema`` and becomes ``prompted`` once, when the route refuses ``text.format``.
    """

    spec: OutputSpec[Any]
    retries: int
    mode: OutputMode = "json_schema"

    def request(self, options: ChatOptions) -> ChatOptions:
        """``options`` asking for the typed answer, the way the run's mode does."""
        if self.mode == "json_schema":
            return attrs.evolve(options, response_format=self.spec.response_format)
        prompt = self.spec.prompt()
        instructions = f"{options.instructions}\n\n{prompt}" if options.instructions else prompt
        return attrs.evolve(options, instructions=instructions, response_format=None)

    def judge(self, response: ChatResponse) -> Verdict:
        """Whether the final answer fits the type, misfits it, or refuses."""
        parts = list(_text_parts(response))
        refusals = [text for kind, text in parts if kind == _REFUSAL_PART]
        if refusals:
            return Refused("".join(refusals))
        text = "".join(text for _, text in parts)
        read = _unfenced(text) if self.mode == "prompted" else text
        try:
            return Fitted(self.spec.read(read))
        except _NotJsonError as error:
            return Misfit(text, (str(error),), not_json=True)
        except ValueError as error:
            return Misfit(text, tuple(str(problem) for problem in error.args))

    def retry(self, misfit: Misfit) -> ChatMessage | None:
        """The user turn that tells the model what did not fit, or None when no retry is left.

        An answer that is not JSON at all under ``json_schema`` means the route dropped ``text.format``
        without a word (a strict schema yields JSON or a refusal): the retry, and the rest of the run,
        ask in prompted mode.
        """
        if self.retries <= 0:
            return None
        self.retries -= 1
        if self.mode == "json_schema" and misfit.not_json:
            self.mode = "prompted"
        problems = "\n".join(f"- {problem}" for problem in misfit.problems)
        return ChatMessage.user(
            "Your answer does not match the required JSON schema:\n"
            f"{problems}\nAnswer again with only the JSON value, matching the schema exactly."
        )

    def fall_back(self, error: ChatError) -> bool:
        """Whether ``error`` is the route refusing ``text.format`` (a 400 naming it): the run then asks
        in prompted mode, once, and sends the request again."""
        if (
            self.mode != "json_schema"
            or not isinstance(error, ChatTransportError)
            or error.status_code != 400
        ):
            return False
        if not any(name in error.message for name in _FORMAT_REFUSED):
            return False
        self.mode = "prompted"
        return True
