"""Hypothesis strategies for the application tests: user text that tries to forge the prompt's frames, and
every value a run document holds."""

from __future__ import annotations

import copy
import enum
import itertools
import json
import re
import types
import typing
from collections.abc import Callable
from datetime import UTC
from typing import Any, Final, Literal

import attrs
from hypothesis import strategies as st

from application import (
    STOP_REASONS,
    ActionItem,
    Decision,
    MeetingSummary,
    OutputMode,
    ToolCallRecord,
    ToolRun,
    WorkflowEdit,
)
from domain import (
    ChatMessage,
    ChatResponse,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
    Usage,
    Workflow,
    WorkflowStep,
)
from domain.messages import ROLES
from tests.domain.strategies import any_text, lone_surrogate_arguments, surrogates
from tests.strategies import json_objects, json_values, malformed_argument_strings, valid_argument_strings
from tests.support.json_places import places, value_at

# Every tag a pipeline frames with, open and closed, and the entities its escaping writes.
FRAME_TAGS = ("transcript", "instruction", "workflow")
_forgeries = st.sampled_from(
    [
        *(f"<{tag}>" for tag in FRAME_TAGS),
        *(f"</{tag}>" for tag in FRAME_TAGS),
        *(f"\n</{tag}>\n" for tag in FRAME_TAGS),
        *("&amp;", "&lt;", "&gt;", "&amp;lt;", "&#60;", "&", "<", ">", "\n", "<<", "</"),
    ]
)

# Any text at all, surrogates included, laced with tags and entities.
hostile_texts: st.SearchStrategy[str] = st.lists(st.one_of(_forgeries, any_text), max_size=8).map("".join)


# ---------------------------------------------------------------- what a run produces (run documents)
# Every value a run document holds, with odd text everywhere: lone surrogates, raw and escaped, in raw
# arguments and text. A high and a low surrogate side by side are one character to any JSON reader,
# so generated text never holds a pair split into two code points (its own test covers that).

_SPLIT_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
document_texts: st.SearchStrategy[str] = st.text(st.characters() | surrogates, max_size=20).filter(
    lambda text: _SPLIT_PAIR.search(text) is None
)
_ids = st.none() | st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=8)
_raw_arguments = st.one_of(
    document_texts, valid_argument_strings(), lone_surrogate_arguments(), malformed_argument_strings
)

# What an adapter keeps of the provider's output item: opaque JSON text, or nothing (a host's content).
_provider_items = st.none() | st.builds(json.dumps, json_objects)
function_calls = st.builds(
    FunctionCallContent.parse,
    call_id=document_texts,
    name=document_texts,
    raw_arguments=_raw_arguments,
    item_id=_ids,
    provider_item=_provider_items,
)
function_results = st.builds(FunctionResultContent, document_texts, json_values, st.booleans())
contents: st.SearchStrategy[Content] = st.one_of(
    st.builds(TextContent, document_texts, _provider_items),
    st.builds(
        ReasoningContent.from_parts,
        st.lists(document_texts, max_size=2),
        st.lists(document_texts, max_size=2),
        item_id=_ids,
        encrypted_content=st.none() | st.text(alphabet="ABCDEFabcdef0123456789+/=", max_size=30),
        provider_item=_provider_items,
    ),
    function_calls,
    function_results,
    st.builds(
        ProviderItemContent,
        type=document_texts,
        raw_json=st.builds(json.dumps, json_objects),
        item_id=_ids,
    ),
)
messages = st.builds(ChatMessage, st.sampled_from(ROLES), st.lists(contents, max_size=4))
conversations: st.SearchStrategy[tuple[ChatMessage, ...]] = st.lists(messages, max_size=4).map(tuple)
chat_responses = st.builds(
    ChatResponse,
    messages=conversations,
    response_id=_ids,
    model_id=_ids,
    created_at=st.none() | st.datetimes(timezones=st.none() | st.just(UTC)),
    status=st.sampled_from([None, "completed", "incomplete", "in_progress", "failed"]),
    finish_reason=st.sampled_from([None, "stop", "tool_calls", "length", "content_filter"]),
    usage=st.none()
    | st.builds(
        Usage,
        *(st.none() | st.integers(min_value=0) for _ in range(5)),
        cost_usd=st.none() | st.floats(min_value=0, allow_nan=False, allow_infinity=False),
    ),
)
_records = st.lists(st.builds(ToolCallRecord, function_calls, function_results, st.booleans()), max_size=3)
tool_runs = st.builds(
    ToolRun,
    messages=conversations,
    responses=st.lists(chat_responses, max_size=2).map(tuple),
    tool_calls=_records.map(tuple),
    iterations=st.integers(min_value=0, max_value=40),
    stop_reason=st.none() | st.sampled_from(STOP_REASONS),
    output_mode=st.none() | st.sampled_from(typing.get_args(OutputMode)),
)
# Where an item was said in a recording: seconds, or None for plain text.
_times = st.none() | st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
_names = st.lists(document_texts, max_size=2).map(tuple)
# Fields not named here (those other pipelines add) are drawn from their annotations, once resolved.
meeting_summaries = st.builds(
    attrs.resolve_types(MeetingSummary),
    text=document_texts,
    action_items=st.lists(
        st.builds(
            ActionItem, owner=document_texts, task=document_texts, start=_times, end=_times, speakers=_names
        ),
        max_size=3,
    ).map(tuple),
    decisions=st.lists(
        st.builds(Decision, text=document_texts, start=_times, end=_times, speakers=_names), max_size=3
    ).map(tuple),
    complete=st.booleans(),
    tool_calls=_records.map(tuple),
    run=tool_runs,
)
workflows = st.builds(
    Workflow,
    document_texts,
    st.lists(
        st.builds(WorkflowStep, st.text(min_size=1, max_size=6), document_texts, document_texts),
        max_size=4,
        unique_by=lambda step: step.id,
    ),
)
workflow_edits = st.builds(
    attrs.resolve_types(WorkflowEdit),
    workflow=workflows,
    text=document_texts,
    complete=st.booleans(),
    tool_calls=_records.map(tuple),
    run=tool_runs,
)


# ---------------------------------------------------------------- recorded meetings

# Speakers as meeting platforms and diarization services write them.
_SPEAKERS = ("Priya Raman", "Tom", "Anne-Marie O'Neil", "SPEAKER_00", "spk_1", "Zoë Ólafsdóttir")
_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,.?!&'", min_size=1, max_size=30).filter(
    lambda text: any(char.isalpha() for char in text)
)


@attrs.frozen
class Cue:
    """A cue drawn for a caption file: who, what, and when (seconds)."""

    speaker: str
    text: str
    start: float
    end: float


@st.composite
def cue_lists(draw: st.DrawFn) -> list[Cue]:
    """Cues in time order, one speaker's often close enough to join (at most 2 s apart) and often not."""
    cues: list[Cue] = []
    at = draw(st.integers(min_value=0, max_value=4000)) / 1000
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        at += draw(st.sampled_from([0, 500, 1500, 2000, 2001, 2500, 7000, 3_600_000])) / 1000
        length = draw(st.integers(min_value=0, max_value=9000)) / 1000
        cues.append(Cue(draw(st.sampled_from(_SPEAKERS)), draw(_words).strip() or "x", at, at + length))
        at += length
    return cues


def _stamp(seconds: float, mark: str = ".") -> str:
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d}{mark}{rest % 1000:03d}"


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def teams_vtt(cues: list[Cue]) -> str:
    """As Microsoft Teams writes it: a BOM, CRLF, GUID cue ids and ``<v Full Name>`` voice tags."""
    rows = ["\ufeffWEBVTT", ""]
    for number, cue in enumerate(cues):
        rows += [
            f"0b4e5c1a-2f3d-4e6b-8a9c-1d2e3f4a5b6c/{number}-0",
            f"{_stamp(cue.start)} --> {_stamp(cue.end)}",
        ]
        rows += [f"<v {cue.speaker}>{_escaped(cue.text)}</v>", ""]
    return "\r\n".join(rows)


def _numbered_cues(cues: list[Cue], mark: str, text: Callable[[str], str]) -> list[str]:
    """Each cue as its number from 1, its times (``mark`` before the milliseconds), ``Name: text``
    and a blank line."""
    rows: list[str] = []
    for number, cue in enumerate(cues, 1):
        rows += [
            str(number),
            f"{_stamp(cue.start, mark)} --> {_stamp(cue.end, mark)}",
            f"{cue.speaker}: {text(cue.text)}",
            "",
        ]
    return rows


def zoom_vtt(cues: list[Cue]) -> str:
    """As Zoom writes it: integer cue ids and ``Name: text``."""
    return "\n".join(["WEBVTT", "", *_numbered_cues(cues, ".", _escaped)])


def srt(cues: list[Cue]) -> str:
    return "\n".join(_numbered_cues(cues, ",", str))


def diarized_json(cues: list[Cue]) -> str:
    """OpenAI ``diarized_json`` (and WhisperX, and pyannote's turns, which share its segment shape)."""
    segments = [
        {
            "type": "transcript.text.segment",
            "id": f"seg_{n}",
            "start": c.start,
            "end": c.end,
            "text": c.text,
            "speaker": c.speaker,
        }
        for n, c in enumerate(cues)
    ]
    return json.dumps({"task": "transcribe", "text": " ".join(c.text for c in cues), "segments": segments})


CAPTION_WRITERS = (teams_vtt, zoom_vtt, srt, diarized_json)

# A field of a diarized segment: its own kind of value most often, any JSON value sometimes.
_segment_fields = {
    "start": st.floats(min_value=-1, max_value=1e5) | st.integers(-5, 10**6) | json_values,
    "end": st.floats(min_value=-1, max_value=1e5) | st.text(max_size=6) | json_values,
    "text": st.text(max_size=20) | json_values,
    "speaker": st.sampled_from(["SPEAKER_00", "A", "spk_1", " "]) | st.integers() | json_values,
}
_segments = st.lists(st.fixed_dictionaries({}, optional=_segment_fields) | json_values, max_size=6)


@st.composite
def diarized_documents(draw: st.DrawFn) -> str:
    """JSON in the shape of each diarization service's output, its fields of any type."""
    segments = draw(_segments)
    shape = draw(st.sampled_from(["segments", "turns", "job", "aws", "list"]))
    if shape == "aws":
        items = draw(
            st.lists(json_objects | st.just({"type": "punctuation", "alternatives": [{"content": ","}]}))
        )
        speaker_segments = [
            {"start_time": str(s.get("start")), "end_time": s.get("end"), "speaker_label": s.get("speaker")}
            for s in segments
            if isinstance(s, dict)
        ]
        document: object = {"results": {"speaker_labels": {"segments": speaker_segments}, "items": items}}
    else:
        document = {
            "segments": {"segments": segments},
            "turns": {"turnLevelTranscription": segments},
            "job": {"status": "succeeded", "output": {"turnLevelTranscription": segments}},
            "list": segments,
        }[shape]
    return json.dumps(document)


@st.composite
def spoilt_captions(draw: st.DrawFn) -> str:
    """A caption file with a few of its characters replaced, cut or repeated: what a parser must refuse
    with a typed error, or read."""
    text = draw(st.sampled_from(CAPTION_WRITERS))(draw(cue_lists()))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        junk = draw(st.sampled_from(["", "-->", ":", "\n\n", "\n", "9", "x", "<v ", "{", "]", "WEBVTT", ","]))
        cut = draw(st.integers(min_value=0, max_value=5))
        text = text[:at] + junk + text[at + cut :]
    return text


# ---------------------------------------------------------------- typed final answers (runs/output.py)
# Types a run may ask its final answer in, built at random: scalars, literals and enums at the leaves;
# optionals, lists, tuples and attrs classes (made on the fly) around them; and a strategy for the
# values of each type.


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


_LEAF_TYPES: tuple[object, ...] = (
    str,
    int,
    float,
    bool,
    Literal["a", "b"],
    Literal[1, 2, 3],
    Literal[True],
    Colour,
    Priority,
)
_shape_names = itertools.count()


def _attrs_class(field_types: list[object]) -> type:
    fields = {f"f{index}": attrs.field(type=typing.cast(Any, tp)) for index, tp in enumerate(field_types)}
    return attrs.make_class(f"Shape{next(_shape_names)}", fields, frozen=True)


def _wrapped(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(
        children.map(lambda tp: tp | None),  # type: ignore[operator]  # a type, or a typing form
        children.map(lambda tp: list[tp]),  # type: ignore[valid-type]  # built at run time
        children.map(lambda tp: tuple[tp, ...]),  # type: ignore[valid-type]  # built at run time
        st.lists(children, max_size=4).map(_attrs_class),
    )


output_types: st.SearchStrategy[object] = st.recursive(st.sampled_from(_LEAF_TYPES), _wrapped, max_leaves=8)
"""A type a final answer may be asked in (the root an attrs class or anything else)."""

output_classes: st.SearchStrategy[type] = st.lists(output_types, max_size=5).map(_attrs_class)
"""An attrs class of such fields: the usual root of a typed answer."""


def values_of(tp: object) -> st.SearchStrategy[Any]:
    """Every value of ``tp`` (one of :data:`output_types`) that JSON can carry."""
    simple: dict[object, st.SearchStrategy[Any]] = {
        str: st.text(max_size=8),
        int: st.integers(),
        float: st.floats(allow_nan=False, allow_infinity=False),
        bool: st.booleans(),
    }
    if tp in simple:
        return simple[tp]
    if typing.get_origin(tp) is Literal:
        return st.sampled_from(typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        inner = next(arg for arg in typing.get_args(tp) if arg is not type(None))
        return st.none() | values_of(inner)
    if typing.get_origin(tp) is list:
        return st.lists(values_of(typing.get_args(tp)[0]), max_size=3)
    if typing.get_origin(tp) is tuple:
        return st.lists(values_of(typing.get_args(tp)[0]), max_size=3).map(tuple)
    if not (isinstance(tp, type) and attrs.has(tp)):
        raise TypeError(f"not one of output_types: {tp!r}")
    return st.builds(tp, **{field.name: values_of(field.type) for field in attrs.fields(tp)})


# ---------------------------------------------------------------- what a line says, and items made from it

COMMIT_VERBS = ("review", "draft", "book", "migrate", "archive", "renew")
COMMIT_ADJECTIVES = ("security", "hiring", "offsite", "staging", "legacy", "payroll")
COMMIT_NOUNS = ("audit", "plan", "venue", "database", "exporter", "vendor")
UNSAID_WORDS = ("invoice", "roadmap", "contract", "laptop")
"""Words no generated line says."""
DUE_SPELLINGS: dict[str, tuple[str, ...]] = {
    "Friday": ("Friday", "Fri", "friday", "by Friday"),
    "end of week": ("end of week", "EOW", "end of the week"),
    "tomorrow": ("tomorrow", "tmrw", "Tomorrow"),
    "Monday": ("Monday", "Mon"),
}
"""Each due date a line may say, and ways to write the same date."""


@attrs.frozen
class Commitment:
    """A line where ``owner`` takes on "<verb> the <adjective> <noun>", by ``due`` when it is not None."""

    owner: str
    words: tuple[str, str, str]
    due: str | None

    @property
    def line(self) -> str:
        verb, adjective, noun = self.words
        return f"{self.owner}: I'll {verb} the {adjective} {noun}" + (f" by {self.due}." if self.due else ".")


@st.composite
def commitments(draw: st.DrawFn) -> Commitment:
    words = (
        draw(st.sampled_from(COMMIT_VERBS)),
        draw(st.sampled_from(COMMIT_ADJECTIVES)),
        draw(st.sampled_from(COMMIT_NOUNS)),
    )
    return Commitment(
        draw(st.sampled_from(["Ana", "Ben", "Chen"])),
        words,
        draw(st.none() | st.sampled_from(list(DUE_SPELLINGS))),
    )


# ---------------------------------------------------------------- mutated documents

# What a mutation puts in place of a value: every JSON type, edge numbers, and nesting kept modest.
_ODD_VALUES: Final[tuple[Any, ...]] = (
    None,
    True,
    False,
    0,
    -1,
    2**63,
    -(10**30),
    1.5,
    -0.5,
    "",
    "x",
    "call_1",
    "remove_step",
    "{}",
    '{"amount": 5000}',
    [],
    [None],
    {},
    {"kind": "text", "text": "hi"},
    [[[[[[[[[[]]]]]]]]]],
)


@st.composite
def mutated_documents(draw: st.DrawFn, documents: typing.Sequence[dict[str, Any]]) -> str:
    """One of ``documents`` changed in one to three places under its ``value``: a value replaced (by one of
    another type, or by a value from elsewhere in the document), a field or item removed, an item
    duplicated or moved, a field added. Places under ``pending``, ``responses`` and ``held`` are picked
    as often as all the others together: they are what says which calls run."""
    document = copy.deepcopy(draw(st.sampled_from(list(documents))))
    for _ in range(draw(st.integers(1, 3))):
        inside = places(document["value"], ("value",))[1:]
        vital = [p for p in inside if p[1] in ("pending", "responses", "held")]
        among_vital = bool(vital) and draw(st.booleans())
        place = draw(st.sampled_from(vital if among_vital else inside))
        parent, last = value_at(document, place[:-1]), place[-1]
        how = draw(st.sampled_from(["replace", "replace", "borrow", "remove", "duplicate", "move", "extra"]))
        if how == "replace":
            parent[last] = copy.deepcopy(draw(st.sampled_from(_ODD_VALUES)))
        elif how == "borrow":
            parent[last] = copy.deepcopy(value_at(document, draw(st.sampled_from(inside))))
        elif how == "remove":
            del parent[last]
        elif how in ("duplicate", "move") and isinstance(parent, list):
            assert isinstance(last, int)  # a list's places are its indexes
            item = parent[last]
            if how == "move":
                del parent[last]
            parent.insert(draw(st.integers(0, len(parent))), copy.deepcopy(item))
        elif isinstance(parent[last], dict):
            parent[last][draw(st.sampled_from(["surplus", "kind", "call_id", "name"]))] = draw(
                st.sampled_from(_ODD_VALUES[:14])
            )
    return json.dumps(document)
