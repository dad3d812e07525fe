"""Run documents: what a run produced, as versioned JSON that loads back equal in any process."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import hmac
import json
import types
import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final, TypeAlias

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from application.meetings.summary import MeetingSummary
from application.runs.held import StateError, held_answer
from application.runs.run import RunState, ToolRun
from application.tools.parameters import describe_type, strict_converter
from application.workflows.editor import WorkflowEdit
from domain import (
    ChatMessage,
    ChatResponse,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
)
from domain.arguments import ArgumentsParseError, escape_surrogates, parse_arguments, reject_constant
from domain.messages import ROLES

__all__ = ["DOCUMENT_KINDS", "FORMAT", "MAX_DOCUMENT_BYTES", "VERSION", "DocumentError", "dumps", "loads"]

FORMAT: Final = "meeting-agents"
VERSION: Final = 1
MAX_DOCUMENT_BYTES: Final = 50 * 1024 * 1024
"""What :func:`loads` reads at most by default: the command line's limit on a file it reads."""
SIGNATURE: Final = "signature"

MESSAGES: Final = "messages"
# The kinds of value a document holds, by the name it carries in "kind". A new kind is one line here:
# its class is structured by its own attrs fields, so it needs no converter code of its own.
DOCUMENT_KINDS: Final[dict[str, Any]] = {
    MESSAGES: tuple[ChatMessage, ...],
    "chat_response": ChatResponse,
    "tool_run": ToolRun,
    "meeting_summary": MeetingSummary,
    "workflow_edit": WorkflowEdit,
    "run_state": RunState,
}

# Each kind of content carries this key, naming which one it is.
_CONTENT_TAG: Final = "kind"
_CONTENT_KINDS: Final[Mapping[str, type]] = types.MappingProxyType(
    {
        "text": TextContent,
        "reasoning": ReasoningContent,
        "function_call": FunctionCallContent,
        "function_result": FunctionResultContent,
        "provider_item": ProviderItemContent,
    }
)
_ENVELOPE: Final = ("format", "version", "kind", "value")
# What FunctionCallContent derives from its raw arguments, and so is not stored.
_DERIVED: Final = ("arguments", "parse_error")


class DocumentError(ValueError):
    """A text that is not a run document this package can load.

    ``path`` names the first bad field (``value.messages[2].contents[0].call_id``; ``""`` for the
    document as a whole) and the message says what was wrong with it, never quoting the value.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


class _InvalidValueError(ValueError):
    """A value the converter refuses, in words that quote nothing of it."""


# ---------------------------------------------------------------- the converter


def _json_value(value: object, _: object = None) -> object:
    """A JSON value read from a document: json.loads only ever makes JSON data, so it stands."""
    return value


def _plain(value: object) -> object:
    """A JSON value ready for json.dumps: read-only mappings become dicts, tuples lists.

    Built with a stack of its own, not by recursion: a tool's result can nest as deep as memory allows.
    """
    if not isinstance(value, Mapping | list | tuple):
        return value
    root: dict[object, Any] = {}
    # Each entry: a value still to convert, the dict or list its conversion goes into, and where.
    pending: list[tuple[object, Any, object]] = [(value, root, None)]
    while pending:
        current, into, key = pending.pop()
        converted: Any = current
        if isinstance(current, Mapping):
            converted = {}
            pending.extend((item, converted, name) for name, item in reversed(list(current.items())))
        elif isinstance(current, list | tuple):
            converted = [None] * len(current)
            pending.extend((item, converted, index) for index, item in enumerate(current))
        into[key] = converted
    return root[None]


# Unstructures what a field typed ``object`` holds (a run's typed ``output``) by its own class.
_BY_CLASS: Final = cattrs.Converter()


def _any_value(value: object) -> object:
    """A value of any class cattrs unstructures (an attrs instance, an enum, a tuple) as JSON data."""
    return _plain(_BY_CLASS.unstructure(value))


def _datetime(value: object, _: object) -> datetime:
    if not isinstance(value, str):
        raise _InvalidValueError("expected an ISO 8601 date and time (a string)")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise _InvalidValueError("expected an ISO 8601 date and time") from None


def _tagged_contents(converter: cattrs.Converter) -> tuple[Callable[[Any], Any], Callable[[Any, Any], Any]]:
    """Un/structure hooks for ``Content``: each content an object whose "kind" says which one."""
    tags = {cls: tag for tag, cls in _CONTENT_KINDS.items()}
    structure_hooks = {tag: (cls, converter.get_structure_hook(cls)) for tag, cls in _CONTENT_KINDS.items()}
    unstructure_hooks = {cls: converter.get_unstructure_hook(cls) for cls in _CONTENT_KINDS.values()}

    def unstructure(content: Content) -> dict[str, Any]:
        cls = type(content)
        return {_CONTENT_TAG: tags[cls], **unstructure_hooks[cls](content)}

    def structure(value: object, _: object) -> Content:
        if not isinstance(value, dict):
            raise _InvalidValueError("expected an object")
        tag = value.get(_CONTENT_TAG)
        found = structure_hooks.get(tag) if isinstance(tag, str) else None
        if found is None:
            problem = _InvalidValueError(
                "expected one of " + ", ".join(f'"{kind}"' for kind in _CONTENT_KINDS)
            )
            raise ClassValidationError("While structuring a content", [_at(problem, _CONTENT_TAG)], object)
        cls, hook = found
        rest = dict(value)
        del rest[_CONTENT_TAG]
        return typing.cast(Content, hook(rest, cls))

    return unstructure, structure


def _at(error: Exception, name: str) -> Exception:
    error.add_note(AttributeValidationNote(f"Structuring @ attribute {name}", name, object))
    return error


# A run holds each call three times (in its messages, its responses and its records), far apart in a long
# run: one load parses each raw string once, and the copies share what parsing gives, which is immutable
# (a read-only mapping, a frozen error). The cache lives for one load, so it holds only that document's.
_PARSED: Final[contextvars.ContextVar[dict[str, Any] | None]] = contextvars.ContextVar("parsed", default=None)


def _parse_arguments(raw: str) -> Any:
    cache = _PARSED.get()
    if cache is None:
        return parse_arguments(raw)
    parsed = cache.get(raw)
    if parsed is None:
        parsed = cache[raw] = parse_arguments(raw)
    return parsed


_CALL_KEYS: Final = frozenset({"call_id", "name", "raw_arguments", "item_id", "provider_item"})


def _function_calls(
    converter: cattrs.Converter,
) -> tuple[Callable[[FunctionCallContent], dict[str, Any]], Callable[[Any, Any], FunctionCallContent]]:
    """A call is stored without what parsing its raw arguments gives, and parsed again when loaded:
    the raw string is the call, so the document holds it once and it loads back byte for byte."""
    unstructure = make_dict_unstructure_fn(
        FunctionCallContent, converter, arguments=override(omit=True), parse_error=override(omit=True)
    )
    # When loading, the parse's outcome is handed in beside the stored fields, taken as it is.
    quick, detailed = (
        make_dict_structure_fn(
            FunctionCallContent,
            converter,
            _cattrs_forbid_extra_keys=True,
            _cattrs_detailed_validation=detail,
            arguments=override(struct_hook=_json_value),
            parse_error=override(struct_hook=_json_value),
        )
        for detail in (False, True)
    )

    def structure(value: object, _: object) -> FunctionCallContent:
        if value.__class__ is dict:
            try:
                made = _quick_call(typing.cast(dict[str, Any], value))
            except Exception:
                made = None  # the generated hooks below say what is wrong, and where
            if made is not None:
                return made
        if not isinstance(value, Mapping):
            raise _InvalidValueError("expected an object")
        stored = dict(value)
        for name in _DERIVED:
            if name in stored:
                extra = ForbiddenExtraKeysError("", FunctionCallContent, {name})
                raise ClassValidationError(
                    "While structuring FunctionCallContent", [extra], FunctionCallContent
                )
        raw = stored.get("raw_arguments")
        if isinstance(raw, str):
            parsed = _parse_arguments(raw)
            if isinstance(parsed, ArgumentsParseError):
                stored["parse_error"] = parsed
            else:
                stored["arguments"] = parsed
        try:
            return quick(stored, FunctionCallContent)
        except Exception:
            # As for every class (see application.tools.parameters): the detailed path says where it failed.
            return detailed(stored, FunctionCallContent)

    return unstructure, structure


def _quick_call(fields: dict[str, Any]) -> FunctionCallContent | None:
    """The call a well-formed stored call is, built directly; None for anything else (the generated
    hooks then structure it and name what is wrong)."""
    call_id, name, raw = fields.get("call_id"), fields.get("name"), fields.get("raw_arguments")
    item_id, item = fields.get("item_id"), fields.get("provider_item")
    if not (
        call_id.__class__ is str
        and name.__class__ is str
        and raw.__class__ is str
        and (item_id is None or item_id.__class__ is str)
        and (item is None or item.__class__ is str)
        and fields.keys() <= _CALL_KEYS
    ):
        return None
    parsed = _parse_arguments(raw)
    failed = isinstance(parsed, ArgumentsParseError)
    return FunctionCallContent(
        call_id=call_id,
        name=name,
        raw_arguments=raw,
        arguments=None if failed else parsed,
        parse_error=parsed if failed else None,
        item_id=item_id,
        provider_item=item,
    )


def _is_text_union(tp: object) -> bool:
    """A union of ``str``, string literals and None (``ChatOptions.tool_choice``)."""
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return False
    return all(arg in (str, type(None)) or _string_literals(arg) for arg in typing.get_args(tp))


def _string_literals(tp: object) -> tuple[str, ...]:
    """The values of a ``Literal`` of strings; empty for any other type."""
    if typing.get_origin(tp) is not typing.Literal:
        return ()
    values = typing.get_args(tp)
    return values if all(isinstance(v, str) for v in values) else ()


def _text_union(value: object, tp: object) -> object:
    members = typing.get_args(tp)
    if value is None and type(None) in members:
        return None
    if isinstance(value, str) and (str in members or any(value in _string_literals(a) for a in members)):
        return value
    raise _InvalidValueError(f"expected {describe_type(tp)}")


# The type every field annotated ``JsonValue`` resolves to (the alias is a string, so this is how it looks).
_JSON_VALUE: Final = attrs.fields(attrs.resolve_types(FunctionResultContent)).result.type


def _converter() -> cattrs.Converter:
    converter = strict_converter()
    converter.register_unstructure_hook(datetime, datetime.isoformat)
    converter.register_structure_hook(datetime, _datetime)
    converter.register_structure_hook_func(lambda tp: tp == _JSON_VALUE or tp is object, _json_value)
    converter.register_unstructure_hook_func(lambda tp: tp == _JSON_VALUE, _plain)
    converter.register_unstructure_hook_func(lambda tp: tp is object, _any_value)
    converter.register_structure_hook_func(_is_text_union, _text_union)
    unstructure_call, structure_call = _function_calls(converter)
    converter.register_unstructure_hook(FunctionCallContent, unstructure_call)
    converter.register_structure_hook(FunctionCallContent, structure_call)
    # Content's members are all known now: the union hooks look up each member's hook once.
    content_type = typing.get_args(attrs.fields(attrs.resolve_types(ChatMessage)).contents.type)[0]
    unstructure_content, structure_content = _tagged_contents(converter)
    converter.register_unstructure_hook_func(lambda tp: tp == content_type, unstructure_content)
    converter.register_structure_hook_func(lambda tp: tp == content_type, structure_content)
    generic_message = converter.get_structure_hook(ChatMessage)
    quick_message = _quick_messages(generic_message, structure_call)
    converter.register_structure_hook(ChatMessage, quick_message)
    generic_messages = converter.get_structure_hook(_MESSAGES)
    converter.register_structure_hook_func(
        lambda tp: tp == _MESSAGES, _messages_in_place(generic_messages, quick_message)
    )
    return converter


_MESSAGES: Final = tuple[ChatMessage, ...]


def _messages_in_place(
    generic: Callable[[Any, Any], Any], message: Callable[[Any, Any], ChatMessage]
) -> Callable[[Any, Any], tuple[ChatMessage, ...]]:
    """Structuring for a list of messages that puts each message in its parsed object's place as it goes,
    so the parsed objects are freed one by one and a long conversation is never held twice whole. The
    list is the one :func:`loads` parsed, used for nothing else. On a failure the generic hook goes over
    the list again (a message built already passes through as it is) and names the bad field."""

    def structure(value: object, tp: Any) -> tuple[ChatMessage, ...]:
        if value.__class__ is list:
            items = value
            try:
                for index, item in enumerate(items):
                    if item.__class__ is not ChatMessage:
                        items[index] = message(item, ChatMessage)
            except Exception:  # noqa: S110  # the generic hook below says what was wrong, and where
                pass
            else:
                return tuple(items)
        return typing.cast(tuple[ChatMessage, ...], generic(value, tp))

    return structure


_TEXT_KEYS: Final = frozenset({_CONTENT_TAG, "text", "provider_item"})
_RESULT_KEYS: Final = frozenset({_CONTENT_TAG, "call_id", "result", "is_error"})


def _quick_messages(
    generic: Callable[[Any, Any], Any], structure_call: Callable[[Any, Any], FunctionCallContent]
) -> Callable[[Any, Any], ChatMessage]:
    """Structuring for ``ChatMessage`` that builds the shapes a long run holds most of (text, calls,
    tool results) directly, and hands anything else, and anything wrong, to ``generic``, which names
    the bad field: most of what a long run's document holds then skips the generated hooks' layers."""

    def content(value: object) -> Content | None:
        if value.__class__ is not dict:
            return None
        fields = typing.cast(dict[str, Any], value)
        kind = fields.get(_CONTENT_TAG)
        if kind == "text":
            text, item = fields.get("text"), fields.get("provider_item")
            if (
                text.__class__ is str
                and (item is None or item.__class__ is str)
                and fields.keys() <= _TEXT_KEYS
            ):
                return TextContent(text, item)
        elif kind == "function_result":
            call_id, is_error = fields.get("call_id"), fields.get("is_error", False)
            if (
                call_id.__class__ is str
                and is_error.__class__ is bool
                and "result" in fields
                and fields.keys() <= _RESULT_KEYS
            ):
                return FunctionResultContent(call_id, fields["result"], is_error)
        elif kind == "function_call":
            rest = dict(fields)
            del rest[_CONTENT_TAG]
            try:
                return structure_call(rest, FunctionCallContent)
            except Exception:
                return None
        return None

    def structure(value: object, cls: Any) -> ChatMessage:
        if value.__class__ is ChatMessage:
            return value  # built already, in place of its parsed object
        fields = typing.cast(dict[str, Any], value)
        if value.__class__ is dict and len(fields) == 2:
            role, contents = fields.get("role"), fields.get("contents")
            if role.__class__ is str and role in ROLES and contents.__class__ is list:
                # Anything the quick path cannot build goes to the generic hook, which says what is wrong.
                with contextlib.suppress(Exception):
                    items = []
                    for item in contents:
                        made = content(item)
                        if made is None:
                            break
                        items.append(made)
                    else:
                        return ChatMessage(role, tuple(items))
        return typing.cast(ChatMessage, generic(value, cls))

    return structure


_CONVERTER: Final = _converter()


# ---------------------------------------------------------------- text


def _text(data: object) -> str:
    """Compact JSON in valid UTF-8: an unpaired surrogate is written as its ``\\uXXXX`` escape, which
    reads back as the very same code point."""
    return escape_surrogates(_json(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False))


def _json(data: object, **options: Any) -> str:
    """``json.dumps(data, **options)``, or :class:`DocumentError` for data nested deeper than it follows:
    ``json.loads`` could not read such a document back either, so none is written."""
    try:
        return json.dumps(data, **options)
    except RecursionError:
        raise DocumentError("value", "nested deeper than a document can be written and read back") from None


def _kind_of(value: object) -> str:
    if isinstance(value, list | tuple) and all(isinstance(item, ChatMessage) for item in value):
        return MESSAGES
    for kind, cls in DOCUMENT_KINDS.items():
        if isinstance(cls, type) and type(value) is cls:
            return kind
    raise TypeError(f"a {type(value).__name__} is not a value a run document holds")


Secret: TypeAlias = str | bytes
"""The key a document is signed with: text (read as UTF-8) or bytes, never empty."""


def _key(secret: Secret) -> bytes:
    key = secret.encode("utf-8", "surrogatepass") if isinstance(secret, str) else bytes(secret)
    if not key:
        raise ValueError("secret: empty; give a secret to sign with, or None for an unsigned document")
    return key


def _signature(document: Mapping[str, object], secret: Secret) -> str:
    """HMAC-SHA256 of the document's canonical form: its JSON without ``signature``, keys sorted, no
    spaces, every character past ASCII escaped (so the bytes depend only on the JSON values); hex."""
    unsigned = {key: item for key, item in document.items() if key != SIGNATURE}
    canonical = _json(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hmac.new(_key(secret), canonical.encode("ascii"), hashlib.sha256).hexdigest()


def dumps(value: object, *, secret: Secret | None = None) -> str:
    """The run document of ``value``: a sequence of :class:`ChatMessage`, a :class:`ChatResponse`,
    a :class:`ToolRun`, a :class:`MeetingSummary`, a :class:`WorkflowEdit` or a :class:`RunState`.

    The document is ``{"format": "meeting-agents", "version": 1, "kind": ..., "value": ...}``,
    compact JSON in UTF-8; :func:`loads` reads it back equal. With a ``secret`` it also carries
    ``"signature"``: the HMAC-SHA256 (hex) of its canonical form, the document without the
    signature as JSON with sorted keys, no spaces and ASCII escapes; :func:`loads` with the same
    secret checks it. Raises ``TypeError`` for any other value, and :class:`DocumentError` for a value
    nested deeper than JSON text is read back (a tool's result thousands of levels deep), which no
    document could hold.
    """
    kind = _kind_of(value)
    data = _CONVERTER.unstructure(tuple(value) if kind == MESSAGES else value, DOCUMENT_KINDS[kind])  # type: ignore[arg-type]  # a sequence of messages, checked by _kind_of
    document: dict[str, object] = {"format": FORMAT, "version": VERSION, "kind": kind, "value": data}
    if secret is not None:
        document[SIGNATURE] = _signature(document, secret)
    return _text(document)


# ---------------------------------------------------------------- loading


def _parsed(text: str | bytes | bytearray) -> object:
    if not isinstance(text, str | bytes | bytearray):
        raise DocumentError("", f"expected the document's text, not a {type(text).__name__}")
    try:
        return json.loads(text, parse_constant=reject_constant)
    except json.JSONDecodeError as error:
        raise DocumentError(
            "", f"not JSON ({error.msg} at line {error.lineno}, column {error.colno})"
        ) from None
    except UnicodeDecodeError:
        raise DocumentError("", "not UTF-8 text") from None
    except RecursionError:
        raise DocumentError("", "nested deeper than a document can be read") from None
    except ValueError:
        # NaN or Infinity, or an integer with more digits than Python will convert.
        raise DocumentError(
            "", "not JSON this package reads (NaN, Infinity or an integer too long)"
        ) from None


def _envelope(document: object, secret: Secret | None) -> tuple[str, Any]:
    if not isinstance(document, dict):
        raise DocumentError("", "expected a JSON object")
    for key in document:
        if key not in _ENVELOPE and key != SIGNATURE:
            raise DocumentError(
                str(key), "unexpected field; a document has format, version, kind, value and signature"
            )
    for key in _ENVELOPE:
        if key not in document:
            raise DocumentError(key, "required field is missing")
    if document["format"] != FORMAT:
        raise DocumentError("format", f'expected "{FORMAT}"')
    version = document["version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise DocumentError("version", "expected a positive integer")
    if version > VERSION:
        raise DocumentError("version", f"a newer version than this package reads ({VERSION})")
    kind = document["kind"]
    if not isinstance(kind, str) or kind not in DOCUMENT_KINDS:
        raise DocumentError("kind", "expected one of " + ", ".join(f'"{k}"' for k in DOCUMENT_KINDS))
    signature = document.get(SIGNATURE)
    if signature is not None and not isinstance(signature, str):
        raise DocumentError(SIGNATURE, "expected a string")
    if secret is not None:
        # Checked before the value is read at all: an unsigned or changed document is not structured.
        if signature is None:
            raise DocumentError(SIGNATURE, "missing; a secret is set, so only a signed document loads")
        if not hmac.compare_digest(
            signature.encode("utf-8", "surrogatepass"), _signature(document, secret).encode()
        ):
            raise DocumentError(
                SIGNATURE, "does not match: the document was changed or signed with another secret"
            )
    return kind, document["value"]


def _size_check(text: str | bytes | bytearray, max_bytes: int | None) -> None:
    """Refuse a text of more than ``max_bytes`` bytes (as UTF-8) before reading any of it."""
    if max_bytes is None:
        return
    if not isinstance(text, str | bytes | bytearray):
        return  # _parsed names the wrong type
    size = len(text)
    if isinstance(text, str) and size <= max_bytes and size * 4 > max_bytes and not text.isascii():
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise DocumentError("", f"larger than the {max_bytes:,} bytes a document may be (max_bytes)")


def _first_failure(error: BaseException, path: str) -> tuple[str, str]:
    """The path and the description of the first failure in a structuring error."""
    if isinstance(error, ClassValidationError | IterableValidationError):
        with_notes, without = error.group_exceptions()
        if with_notes:
            inner, note = with_notes[0]
            where = f"[{note.index}]" if isinstance(error, IterableValidationError) else f".{note.name}"  # type: ignore[union-attr]  # the note matches the group
            if isinstance(inner, ClassValidationError | IterableValidationError):
                return _first_failure(inner, path + where)
            return path + where, _describe(inner, note.type)
        if without:
            inner = without[0]
            if isinstance(inner, ForbiddenExtraKeysError):
                return f"{path}.{sorted(inner.extra_fields)[0]}", "unexpected field"
            if isinstance(inner, ClassValidationError | IterableValidationError):
                return _first_failure(inner, path)
            name = getattr(error, "cl", None)
            if isinstance(inner, _InvalidValueError):
                return path, str(inner)
            return path, f"not a valid {getattr(name, '__name__', 'value')}"
    return path, _describe(error, None)


def _describe(error: BaseException, tp: object) -> str:
    if isinstance(error, _InvalidValueError):
        return str(error)
    if isinstance(error, KeyError):
        return "required field is missing"
    if tp is not None and tp is not object:
        return f"expected {describe_type(tp)}"
    return f"expected {error}" if isinstance(error, TypeError) else "invalid value"


def loads(
    text: str | bytes | bytearray, *, secret: Secret | None = None, max_bytes: int | None = MAX_DOCUMENT_BYTES
) -> Any:
    """The value a document written by :func:`dumps` holds, equal to the one written.

    Raises :class:`DocumentError`, and nothing else, for anything that is not such a document:
    larger than ``max_bytes`` (UTF-8; refused before it is parsed; None for no limit), not JSON,
    another format, a newer version, an unknown kind, a field missing, extra or of the wrong type,
    or a paused run's state whose parts disagree with the answer it holds. With a ``secret``, a
    document without ``"signature"``, or whose signature is not that secret's over its canonical
    form (see :func:`dumps`), is refused too; without one, a signature is not checked.
    """
    if secret is not None:
        _key(secret)
    _size_check(text, max_bytes)
    kind, value = _envelope(_parsed(text), secret)
    parsing = _PARSED.set({})
    try:
        loaded = _CONVERTER.structure(value, DOCUMENT_KINDS[kind])
    except (ClassValidationError, IterableValidationError) as error:
        raise DocumentError(*_first_failure(error, "value")) from None
    except RecursionError:
        raise DocumentError("value", "nested deeper than a document can be read") from None
    except Exception as error:
        # A hook or a class's own checks failed some other way: loads promises DocumentError only.
        raise DocumentError(*_first_failure(error, "value")) from None
    finally:
        _PARSED.reset(parsing)
    _check_state(loaded)
    return loaded


def _check_state(value: object) -> None:
    """A paused run's state, wherever the value holds one, agrees with the answer it holds."""
    if isinstance(value, RunState):
        state, path = value, "value"
    elif isinstance(value, ToolRun) and value.state is not None:
        state, path = value.state, "value.state"
    elif isinstance(value, WorkflowEdit) and value.run.state is not None:
        state, path = value.run.state, "value.run.state"
    else:
        return
    try:
        held_answer(state)
    except StateError as error:
        raise DocumentError(f"{path}.{error.path}", error.problem) from None
