"""Meeting transcripts as recorded (plain text, WebVTT, SRT, diarized JSON) read into speaker lines."""

from __future__ import annotations

import html
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Final, Literal, NamedTuple

import attrs

from application.meetings.grounding import SPEAKER_LINE

__all__ = [
    "FORMATS",
    "MERGE_GAP_SECONDS",
    "Transcript",
    "TranscriptError",
    "TranscriptFormat",
    "TranscriptLine",
    "clock",
    "detect_format",
]

TranscriptFormat = Literal["text", "vtt", "srt", "json"]
FORMATS: Final[tuple[TranscriptFormat, ...]] = ("text", "vtt", "srt", "json")
MERGE_GAP_SECONDS: Final = 2.0
"""Consecutive cues of one speaker at most this far apart (end to start) are one line."""

# "00:01:02.345", "01:02.345" (WebVTT's hours are optional), "00:01:02,345" (SRT).
_TIME: Final = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{1,2})(?:[.,](\d{1,3}))?")
_ARROW: Final = "-->"
_STAMP: Final = r"(?:(\d+):)?([0-5]?\d):([0-5]\d)[.,](\d{3})"
# A timing line as nearly every file writes it, read in one match; anything else takes the long way.
_TIMING: Final = re.compile(rf"\s*{_STAMP}\s*-->\s*{_STAMP}(?:\s.*)?")
# JSON as a transcript holds it: an object, or a list of objects ("[00:01] Ana: ..." is plain text).
_JSON_START: Final = re.compile(r"\{|\[\s*[{\]]")
# A caption's speaker: "<v Full Name>" (Teams; classes such as "<v.loud Name>" allowed), "[SPEAKER_00]: "
# (WhisperX) or "Name: " (Zoom).
_VOICE: Final = re.compile(r"<v(?:\.[^\s>]*)?[ \t]+(?P<name>[^>]*)>")
_BRACKETED: Final = re.compile(r"^\[(?P<name>[^\]\n]{1,60})\]:\s*(?P<text>.*)$")
# A markup tag ("<i>", "</v>", "<c.yellow>", "<00:01.000>"); a bare "<" or "< b >" is text.
_TAGS: Final = re.compile(r"</?[A-Za-z0-9][^<>\n]*>")
# Labels a diarization model gives speakers it cannot name: "SPEAKER_00", "spk_0", "Speaker 1", "A".
_LABEL: Final = re.compile(r"(?:speaker|spk)[ _-]?\d+|[A-Z]", re.IGNORECASE)
_SUFFIXES: Final[Mapping[str, TranscriptFormat]] = {
    ".vtt": "vtt",
    ".srt": "srt",
    ".json": "json",
    ".txt": "text",
    ".md": "text",
}


class TranscriptError(ValueError):
    """A transcript that does not parse: the message names the line of the file (``line``, 1-based) or
    the cue, segment or item (``cue``, 1-based, in file order; ``unit`` says which) where it broke, and
    what was there."""

    def __init__(
        self, message: str, *, line: int | None = None, cue: int | None = None, unit: str = "cue"
    ) -> None:
        where = [f"{unit} {cue}" if cue is not None else "", f"line {line}" if line is not None else ""]
        shown = " (".join(part for part in where if part) + (")" if None not in (cue, line) else "")
        super().__init__(f"{shown}: {message}" if shown else message)
        self.line = line
        self.cue = cue
        self.unit = unit


@attrs.frozen
class TranscriptLine:
    """One numbered line of a meeting: who spoke (``None`` when the file does not say), what they said,
    and when (seconds from the start of the recording; ``None`` for plain text)."""

    number: int
    speaker: str | None
    text: str
    start: float | None = None
    end: float | None = None


class _Cue(NamedTuple):
    """A timed piece of speech as the file has it, before cues of one speaker are joined."""

    position: int
    speaker: str | None
    text: str
    start: float
    end: float


def clock(seconds: float) -> str:
    """A time as the model and people read it: ``01:02`` under an hour, ``1:02:03`` from an hour on."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


@attrs.frozen
class Transcript:
    """A meeting's lines, numbered from 1, each with its speaker and (for captions and diarized JSON)
    its start and end in seconds.

    Build one with :meth:`parse`. ``format`` is what it was read as. :meth:`framed_lines` is what the
    summary pipeline numbers for the model.
    """

    lines: tuple[TranscriptLine, ...]
    format: TranscriptFormat = "text"
    _source: tuple[str, ...] | None = attrs.field(default=None, eq=False, repr=False, alias="source")
    """Plain text's own lines, framed exactly as written."""

    @classmethod
    def parse(
        cls,
        text: str,
        format: TranscriptFormat | None = None,
        speakers: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
    ) -> Transcript:
        """Read ``text`` as ``format`` (``text``, ``vtt``, ``srt``, ``json``), or as its content shows
        (``name``, a file name, breaks a tie: ``.vtt``, ``.srt``, ``.json``).

        ``speakers`` maps the file's speaker labels (``SPEAKER_00``, ``spk_0``) to people's names;
        labels it does not name stand as they are. Raises :class:`TranscriptError` naming the line or
        cue where the text broke: a timestamp that does not parse, an end before its start, a cue with
        no text, JSON that is not one of the known shapes.
        """
        text = text.removeprefix("\ufeff")
        chosen = format if format is not None else detect_format(text, name)
        if chosen not in FORMATS:
            raise TranscriptError(f"unknown transcript format {chosen!r}; one of {', '.join(FORMATS)}")
        names = dict(speakers or {})
        if chosen == "text":
            return _plain(text, names)
        reader: Callable[[str], list[_Cue]] = {"vtt": _vtt_cues, "srt": _srt_cues, "json": _json_cues}[chosen]
        return cls(_joined(reader(text), names), chosen)

    @property
    def participants(self) -> tuple[str, ...]:
        """The speakers, in order of first appearance."""
        return tuple(dict.fromkeys(line.speaker for line in self.lines if line.speaker is not None))

    @property
    def unnamed_speakers(self) -> tuple[str, ...]:
        """The speakers that are diarization labels (``SPEAKER_00``, ``spk_0``), not people's names."""
        return tuple(speaker for speaker in self.participants if _LABEL.fullmatch(speaker))

    def framed_lines(self) -> tuple[str, ...]:
        """Each line as the model reads it: ``[01:02] Name: text`` (a short time, never a cue id or a
        full timestamp); plain text as it was written."""
        if self._source is not None:
            return self._source
        return tuple(_framed(line) for line in self.lines)


def _framed(line: TranscriptLine) -> str:
    """One line for the model, on one line whatever breaks its speaker or text held."""
    stamp = f"[{clock(line.start)}] " if line.start is not None else ""
    said = " ".join(line.text.split())
    return (
        f"{stamp}{' '.join(line.speaker.split())}: {said}" if line.speaker is not None else f"{stamp}{said}"
    )


def detect_format(text: str, name: str | None = None) -> TranscriptFormat:
    """The format ``text`` is written in, from its content; the file ``name``'s suffix (``.vtt``,
    ``.srt``, ``.json``) decides only when the content does not (then its parser says what is wrong)."""
    head = text.lstrip("\ufeff \t\r\n")
    if head.startswith("WEBVTT"):
        return "vtt"
    if _JSON_START.match(head):
        return "json"
    rows = head.split("\n", 2)[:2]
    if _ARROW in rows[0] or (len(rows) == 2 and rows[0].strip().isdigit() and _ARROW in rows[1]):
        return "srt"
    hinted = _SUFFIXES.get(_suffix(name)) if name else None
    return hinted or "text"


def _suffix(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot >= 0 else ""


# ---------------------------------------------------------------- plain text


def _plain(text: str, names: Mapping[str, str]) -> Transcript:
    """Plain text, numbered as :meth:`str.splitlines` counts, each ``Name: text`` line its speaker's;
    a line whose speaker ``names`` renames is framed as ``Name: text`` under the new name."""
    source = text.splitlines()
    lines: list[TranscriptLine] = []
    for number, raw in enumerate(source, 1):
        match = SPEAKER_LINE.match(raw)
        if match is None:
            lines.append(TranscriptLine(number, None, raw.strip()))
            continue
        speaker = names.get(match["name"], match["name"])
        if speaker != match["name"]:
            source[number - 1] = f"{speaker}: {match['text']}"
        lines.append(TranscriptLine(number, speaker, match["text"]))
    return Transcript(tuple(lines), "text", source=tuple(source))


# ---------------------------------------------------------------- captions


def _seconds(stamp: str, *, line: int, cue: int) -> float:
    match = _TIME.fullmatch(stamp)
    if match is None or int(match[2]) > 59 or int(match[3]) > 59:
        raise TranscriptError(f"the timestamp {_shown(stamp)} does not parse", line=line, cue=cue)
    hours, minutes, seconds, fraction = match.groups()
    value = int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
    return value + (int(fraction.ljust(3, "0")) / 1000 if fraction else 0.0)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _timing(row: str, *, line: int, cue: int) -> tuple[float, float]:
    """The start and end of a timing line ``00:01.000 --> 00:02.000 [settings]``."""
    quick = _TIMING.fullmatch(row)
    if quick is not None:
        h1, m1, s1, f1, h2, m2, s2, f2 = quick.groups()
        start = int(h1 or 0) * 3600 + int(m1) * 60 + int(s1) + int(f1) / 1000
        end = int(h2 or 0) * 3600 + int(m2) * 60 + int(s2) + int(f2) / 1000
        if end >= start:
            return start, end
    left, _, right = row.partition(_ARROW)
    fields = right.split()
    start = _seconds(left.strip(), line=line, cue=cue)
    end = _seconds(fields[0] if fields else "", line=line, cue=cue)
    if end < start:
        raise TranscriptError(
            f"ends ({right.split()[0]}) before it starts ({left.strip()})", line=line, cue=cue
        )
    return start, end


def _blocks(text: str) -> Iterator[tuple[int, list[str]]]:
    """Runs of non-blank lines, each with the (1-based) number of its first line."""
    block: list[str] = []
    first = 0
    for number, row in enumerate(text.splitlines(), 1):
        if row.strip():
            if not block:
                first = number
            block.append(row)
        elif block:
            yield first, block
            block = []
    if block:
        yield first, block


def _speech(payload: Sequence[str], *, line: int, cue: int, entities: bool) -> tuple[str | None, str]:
    """The speaker and the words of a cue's text lines, tags (and, in WebVTT, entities) read."""
    joined = " ".join(payload)
    speaker: str | None = None
    if "<" in joined or "&" in joined:
        unescape: Callable[[str], str] = html.unescape if entities else str
        voice = _VOICE.search(joined)
        if voice is not None:
            speaker = " ".join(unescape(voice["name"]).split()) or None
        joined = unescape(_TAGS.sub(" ", joined))
    said = " ".join(joined.split())
    if speaker is None:
        bracketed = _BRACKETED.match(said)
        match = bracketed or SPEAKER_LINE.match(said)
        if match is not None:
            speaker, said = match["name"].strip(), match["text"].strip()
    if not said:
        raise TranscriptError("has no text", line=line, cue=cue)
    return speaker, said


def _caption_cues(blocks: Iterable[tuple[int, list[str]]], kind: str) -> list[_Cue]:
    cues: list[_Cue] = []
    for first, block in blocks:
        at = 0 if _ARROW in block[0] else 1
        index = len(cues) + 1
        if at >= len(block) or _ARROW not in block[at]:
            found = min(at, len(block) - 1)
            raise TranscriptError(
                f"a {kind} cue needs a timing line (start --> end), found {_shown(block[found])}",
                line=first + found,
                cue=index,
            )
        start, end = _timing(block[at], line=first + at, cue=index)
        if at + 1 >= len(block):
            raise TranscriptError("has no text", line=first + at, cue=index)
        speaker, said = _speech(block[at + 1 :], line=first + at + 1, cue=index, entities=kind == "WebVTT")
        cues.append(_Cue(index, speaker, said, start, end))
    return cues


def _vtt_cues(text: str) -> list[_Cue]:
    blocks = _blocks(text)
    header = next(blocks, None)
    if header is None or not header[1][0].startswith("WEBVTT"):
        raise TranscriptError("a WebVTT file starts with WEBVTT", line=1)
    first, rows = header
    timing = next((at for at, row in enumerate(rows) if _ARROW in row), None)
    # A cue may follow the header with no blank line between (a file written by hand or a tool).
    head = [] if timing is None else [(first + max(1, timing - 1), rows[max(1, timing - 1) :])]
    cues = (
        (start, block)
        for start, block in itertools.chain(head, blocks)
        if _ARROW in block[0] or not block[0].startswith(("NOTE", "STYLE", "REGION"))
    )
    return _caption_cues(cues, "WebVTT")


def _srt_cues(text: str) -> list[_Cue]:
    return _caption_cues(_blocks(text), "SRT")


# ---------------------------------------------------------------- diarized JSON


def _json_cues(text: str) -> list[_Cue]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"not JSON ({exc.msg}, column {exc.colno})", line=exc.lineno) from None
    except (ValueError, RecursionError):
        raise TranscriptError(
            "not JSON this reader can take (a number too long, or nested too deep)"
        ) from None
    if isinstance(document, dict) and isinstance(document.get("output"), dict):
        document = document["output"]  # a pyannoteAI job: its result is under "output"
    if isinstance(document, list):
        return _segments(document, "segment")
    if isinstance(document, dict):
        if isinstance(document.get("turnLevelTranscription"), list):
            return _segments(document["turnLevelTranscription"], "turn")
        if isinstance(document.get("segments"), list):
            return _segments(document["segments"], "segment")
        results = document.get("results")
        if isinstance(results, dict) and isinstance(results.get("speaker_labels"), dict):
            return _aws(results)
    raise TranscriptError(
        "JSON, but not a diarized transcript: expected segments (OpenAI diarized_json, WhisperX),"
        " turnLevelTranscription (pyannote) or results.speaker_labels (AWS Transcribe)"
    )


def _number(value: object, what: str, cue: int, unit: str) -> float:
    """A time in seconds from a JSON number or a numeric string (AWS writes ``"4.87"``)."""
    if isinstance(value, bool):
        value = None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            value = None
    if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise TranscriptError(f"{what} is not a time in seconds ({_shown(str(value))})", cue=cue, unit=unit)
    return float(value)


def _label(value: object) -> str | None:
    if isinstance(value, str):
        return " ".join(value.split()) or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _timed(entry: Mapping[str, object], keys: tuple[str, str], cue: int, unit: str) -> tuple[float, float]:
    start = _number(entry.get(keys[0]), keys[0], cue, unit)
    end = _number(entry.get(keys[1]), keys[1], cue, unit)
    if end < start:
        raise TranscriptError(f"ends ({end:g} s) before it starts ({start:g} s)", cue=cue, unit=unit)
    return start, end


def _segments(entries: Sequence[object], kind: str) -> list[_Cue]:
    """Segments ``{start, end, text, speaker}``: OpenAI ``diarized_json``, WhisperX, pyannote turns."""
    cues: list[_Cue] = []
    for index, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise TranscriptError(f"is a JSON {type(entry).__name__}, not an object", cue=index, unit=kind)
        start, end = _timed(entry, ("start", "end"), index, kind)
        said = entry.get("text")
        if not isinstance(said, str) or not said.strip():
            raise TranscriptError("has no text", cue=index, unit=kind)
        cues.append(_Cue(index, _label(entry.get("speaker")), " ".join(said.split()), start, end))
    return cues


def _content(item: object, position: int) -> str:
    """An AWS item's word (or punctuation mark): ``alternatives[0].content``."""
    alternatives = item.get("alternatives") if isinstance(item, dict) else None
    best = alternatives[0] if isinstance(alternatives, list) and alternatives else None
    content = best.get("content") if isinstance(best, dict) else None
    if not isinstance(content, str):
        raise TranscriptError("has no alternatives[0].content", cue=position, unit="item")
    return content


def _aws(results: Mapping[str, object]) -> list[_Cue]:
    """AWS Transcribe: ``speaker_labels.segments`` say who spoke when; ``items`` hold the words, each
    given to the segment it starts in (punctuation to the word before it)."""
    labels = results["speaker_labels"]
    assert isinstance(labels, dict)  # checked by the caller
    segments = labels.get("segments")
    items = results.get("items", [])
    if not isinstance(segments, list) or not isinstance(items, list):
        raise TranscriptError("AWS Transcribe JSON: speaker_labels.segments and items are lists")
    spans: list[tuple[float, float, str | None]] = []
    for index, segment in enumerate(segments, 1):
        if not isinstance(segment, dict):
            raise TranscriptError("is not a JSON object", cue=index, unit="speaker segment")
        start, end = _timed(segment, ("start_time", "end_time"), index, "speaker segment")
        spans.append((start, end, _label(segment.get("speaker_label"))))
    order = sorted(range(len(spans)), key=lambda at: spans[at][0])
    words: list[list[str]] = [[] for _ in spans]
    at = 0
    spoken: list[str] | None = None
    for position, item in enumerate(items, 1):
        content = _content(item, position)
        if isinstance(item, dict) and item.get("type") == "punctuation":
            if spoken:
                spoken[-1] += content
            continue
        start = _number(item.get("start_time"), "start_time", position, "item")
        while at + 1 < len(order) and spans[order[at + 1]][0] <= start:
            at += 1
        if order:
            spoken = words[order[at]]
            spoken.append(content)
    cues: list[_Cue] = []
    for index, ((start, end, speaker), said) in enumerate(zip(spans, words, strict=True), 1):
        if not said:
            raise TranscriptError("has no words in items", cue=index, unit="speaker segment")
        cues.append(_Cue(index, speaker, " ".join(said), start, end))
    return cues


# ---------------------------------------------------------------- lines


def _within_merge_gap(end: float, start: float) -> bool:
    """Whether a cue starting at ``start`` is at most :data:`MERGE_GAP_SECONDS` after ``end``, to the
    millisecond captions are timed in: two stamps written 2.000 s apart are, whatever the float
    subtraction of their seconds leaves in the last bits."""
    return round((start - end) * 1000) <= round(MERGE_GAP_SECONDS * 1000)


def _joined(cues: list[_Cue], names: Mapping[str, str]) -> tuple[TranscriptLine, ...]:
    """Cues in time order as numbered lines, consecutive cues of one speaker at most
    :data:`MERGE_GAP_SECONDS` apart joined into one line."""
    if not cues:
        raise TranscriptError("the transcript has no cues")
    cues.sort(key=lambda cue: cue.start)  # stable: cues that start together keep the file's order
    runs: list[tuple[str | None, list[str], float, float]] = []
    for cue in cues:
        speaker = names.get(cue.speaker, cue.speaker) if cue.speaker is not None else None
        if (
            runs
            and speaker is not None
            and runs[-1][0] == speaker
            and _within_merge_gap(runs[-1][3], cue.start)
        ):
            said, start, end = runs[-1][1], runs[-1][2], runs[-1][3]
            said.append(cue.text)
            runs[-1] = (speaker, said, start, max(end, cue.end))
        else:
            runs.append((speaker, [cue.text], cue.start, cue.end))
    return tuple(
        TranscriptLine(number, speaker, " ".join(said), start, end)
        for number, (speaker, said, start, end) in enumerate(runs, 1)
    )
