"""The grounding rule: an action item or a decision is recorded only when the lines it cites show it."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final, Protocol

import attrs

from application.tools import ToolError

__all__ = [
    "MAX_PASSAGE",
    "UNGROUNDED",
    "Grounding",
    "SpokenLine",
    "UngroundedError",
    "content_words",
    "normalized",
    "particulars",
    "transcript_lines",
]

UNGROUNDED: Final = "ungrounded"
MAX_PASSAGE: Final = 15
"""The cited lines of one item lie within this many lines of each other: a passage, not a collage."""

# A speaker line: optional timestamp ("[00:01]", "(00:01:02)", "00:01"), then "Name: text".
SPEAKER_LINE: Final = re.compile(
    r"^\s*(?:[\[(]\s*\d{1,2}(?::\d{2}){1,2}\s*[\])]\s*|\d{1,2}(?::\d{2}){1,2}\s+)?"
    r"(?P<name>[^\W\d_][\w.'-]*(?: [\w.'-]+){0,3})\s*[:\uff1a]\s*(?P<text>\S.*)$"
)
_TOKEN: Final = re.compile(r"'?[^\W_]+")
_APOSTROPHES: Final = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u02bc": "'"})
# Scripts written without spaces between words: their runs are compared by character pairs.
_UNSPACED: Final = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f]")

# Function words, pronouns, auxiliaries and meeting filler: never what a task or a decision is about.
_STOPWORDS: Final = frozenset(
    """a about above after again all also am an and any are as at be been before being below between
    both but by can could did do does doing done down during each either else ever every few for from
    further get gets got had has have having he her here hers him his how i if in into is it its itself
    just let lets like ll make may me might mine more most must my need needs no nor not now of off on
    once one only or other our ours out over own please re really s same shall she should so some such
    t than that the their them then there these they this those through to too under until up upon us
    ve very was we were what when where which while who whom why will with would yes yet you your
    yours okay ok sure yeah yep thing things go going gonna want wants d m""".split()  # noqa: SIM905 - a word list reads best as prose
)
_QUESTION_END: Final = re.compile(r"\?\W*$")
# Words that, right after a person, bind them to what follows ("Tom will", "Ana to", "Dev can").
_BINDING: Final = frozenset(
    {
        "will",
        "'ll",
        "shall",
        "to",
        "can",
        "should",
        "must",
        "needs",
        "has",
        "takes",
        "owns",
        "agreed",
        "volunteered",
        "offered",
        "promised",
        "is",
        "are",
        "'s",
    }
)
_PROGRESSIVE: Final = frozenset({"going", "taking", "handling", "on", "owning", "doing"})
_NEGATIONS: Final = frozenset({"not", "'t", "never", "no"})
_ACCEPTANCES: Final = frozenset(
    {"yes", "yeah", "yep", "sure", "ok", "okay", "agreed", "deal", "absolutely", "definitely", "certainly"}
)
_THIRD_PERSON: Final = frozenset({"he", "she", "they"})
_UNSPACED_COMMITMENTS: Final = ("我会", "我来", "我负责", "好的", "没问题", "私が", "やります", "제가")
_DECISION_WORDS: Final = frozenset(
    {"decided", "agreed", "agree", "decision", "settled", "approved", "confirmed", "final", "consensus"}
)
_HEDGES: Final = frozenset({"maybe", "perhaps", "might", "should", "could", "whether"})
# Particulars an item must not change: a day, a month or a number said differently is another item.
_DATES: Final = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight january february
    march april may june july august september october november december""".split()  # noqa: SIM905 - a word list reads best as prose
)
_SUFFIXES: Final = ("ingly", "edly", "ing", "ied", "ies", "ed", "es", "ly", "s")


def transcript_lines(transcript: str) -> tuple[str, ...]:
    """The transcript's lines as the summary numbers them: 1-based, split as :meth:`str.splitlines`
    splits (``\\n``, ``\\r\\n``, ``\\r`` and the other line boundaries), so no line holds a break."""
    return tuple(transcript.splitlines())


def normalized(text: str) -> str:
    """``text`` compared as people read it: case-folded, accents dropped, apostrophes made plain."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_APOSTROPHES).casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _tokens(text: str) -> list[str]:
    """Words and contraction endings (``"i'll"`` -> ``i``, ``'ll``) of normalized text."""
    return _TOKEN.findall(normalized(text))


def _stem(word: str) -> str:
    """A light stem: "fixing", "fixed" and "fixes" meet at "fix"; "release" and "released" at "releas"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # "planned" -> "plann" -> "plan"
    return word


# An agreement or acceptance word is not what a line is about ("Agreed, let's do that").
_AGREEMENT_STEMS: Final = frozenset(_stem(word) for word in _DECISION_WORDS | _ACCEPTANCES)


def content_words(text: str, *, names: Iterable[str] = ()) -> frozenset[str]:
    """The stems of ``text``'s words that carry its meaning: no function words, no ``names``.

    A run of an unspaced script (Chinese, Japanese, Korean, Thai) counts by its character pairs.
    """
    left_out = _STOPWORDS | {word for name in names for word in _tokens(name)}
    words: set[str] = set()
    for token in _tokens(text):
        token = token.lstrip("'")
        if _UNSPACED.search(token):
            words.update(token[at : at + 2] for at in range(max(1, len(token) - 1)))
        elif token not in left_out and len(token) > 1 and not token.isdigit():
            words.add(_stem(token))
    return frozenset(words)


@attrs.frozen
class _Line:
    number: int
    speaker: str | None
    text: str
    tokens: tuple[str, ...]

    @property
    def question(self) -> bool:
        return bool(_QUESTION_END.search(self.text))


class SpokenLine(Protocol):
    """A transcript line whose speaker is already known (:class:`application.TranscriptLine`)."""

    @property
    def speaker(self) -> str | None: ...
    @property
    def text(self) -> str: ...


def _read_line(number: int, line: str | SpokenLine) -> _Line:
    if not isinstance(line, str):
        return _Line(number, line.speaker, line.text.strip(), tuple(_tokens(line.text)))
    match = SPEAKER_LINE.match(line)
    speaker, text = (match["name"], match["text"]) if match is not None else (None, line.strip())
    return _Line(number, speaker, text, tuple(_tokens(text)))


class UngroundedError(ToolError):
    """A record call whose cited lines do not show it: answered ``ungrounded``, nothing recorded."""

    def __init__(self, message: str) -> None:
        super().__init__(
            UNGROUNDED, message + " Nothing was recorded; cite the lines that show it, or drop it."
        )


def _shown(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "..."


def _span(numbers: Sequence[int]) -> str:
    return f"line {numbers[0]}" if len(numbers) == 1 else "lines " + ", ".join(map(str, numbers))


@attrs.frozen
class _Person:
    """Who an owner's name stands for: a participant (``label``) or someone who did not speak."""

    label: str | None
    words: tuple[str, ...]
    mentions: tuple[tuple[str, ...], ...]
    """The token sequences that name this person unambiguously in the meeting."""


class Grounding:
    """The transcript an item must be grounded in, and the rule that checks a call against it.

    ``lines`` are the transcript's lines (:func:`transcript_lines`, or imported lines whose speakers
    are known, :class:`SpokenLine`) numbered from ``first``: a chunk
    of a long meeting is checked with its own lines under their numbers in the whole file.
    ``participants`` are the meeting's speakers (of the whole file, for a chunk).
    """

    def __init__(
        self, lines: Sequence[str | SpokenLine], *, first: int = 1, participants: Sequence[str] = ()
    ) -> None:
        self._first = first
        self._lines = tuple(_read_line(first + at, line) for at, line in enumerate(lines))
        speakers = [line.speaker for line in self._lines if line.speaker is not None]
        self._participants = tuple(dict.fromkeys([*participants, *speakers]))
        self._participant_words = {label: tuple(_tokens(label)) for label in self._participants}

    @property
    def first(self) -> int:
        return self._first

    @property
    def last(self) -> int:
        return self._first + len(self._lines) - 1

    @property
    def participants(self) -> tuple[str, ...]:
        return self._participants

    def line(self, number: int) -> str:
        """The text of line ``number`` (speaker and all), as the transcript has it."""
        found = self._lines[number - self._first]
        return f"{found.speaker}: {found.text}" if found.speaker is not None else found.text

    # ------------------------------------------------------------ the rule

    def action_item(self, owner: str, task: str, lines: Sequence[int]) -> tuple[str, tuple[int, ...]]:
        """The owner as the meeting names them and the cited lines, sorted; raises :class:`UngroundedError`
        unless the lines show ``owner`` taking ``task`` on."""
        cited = self._cited(lines)
        person = self._person(owner)
        task_words = content_words(task, names=self._participants)
        if not task_words:
            raise UngroundedError("The task has no content word to check against the lines; describe it.")
        named = {line.number for line in cited if self._names(line, person)}
        speaks = {line.number for line in cited if self._speaks(line, person)}
        numbers = [line.number for line in cited]
        if not (named or speaks):
            raise UngroundedError(
                f"{_shown(owner)!r} neither speaks in nor is named by {_span(numbers)}."
                " Cite the line where the owner takes the task on (pronouns count only through cited lines"
                " that name the person)."
            )
        matched = {line.number for line in cited if task_words & content_words(line.text, names=())}
        if not matched or not _covered(task_words, cited):
            raise UngroundedError(f"Most words of the task do not appear in {_span(numbers)}.")
        unsaid = _unsaid(task, cited)
        if unsaid:
            raise UngroundedError(
                f"{_span(numbers)} {_verb(numbers, 'does', 'do')} not say {', '.join(unsaid)}."
            )
        binding = {line.number: self._binding(line, person, speaks, named) for line in cited}
        bound = {number for number, kind in binding.items() if kind is not None}
        if not bound:
            raise UngroundedError(
                f"{_span(numbers)} {_verb(numbers, 'names', 'name')} {_shown(owner)} but"
                f" {_verb(numbers, 'does', 'do')} not show them taking the task on: no"
                f" commitment by {_shown(owner)}, no assignment such as '{_shown(owner)} will ...' or"
                f" 'action: {_shown(owner)} to ...'."
            )
        # A line supports the item when it says the task, or binds the owner saying nothing else ("Sure,
        # I'll do it"), or names the owner a cited "he will ..." refers to.
        bare = {line.number for line in cited if _bare(line.text, names=self._participants)}
        referred = named if "pronoun" in binding.values() else set()
        idle = [n for n in numbers if n not in matched | (bound & bare) | referred]
        if idle:
            raise UngroundedError(
                f"{_span(idle)} {_verb(idle, 'shows', 'show')} nothing of this item; cite only lines that do."
            )
        return (person.label or owner.strip()), tuple(numbers)

    def decision(self, text: str, lines: Sequence[int]) -> tuple[int, ...]:
        """The cited lines, sorted; raises :class:`UngroundedError` unless they state or agree to ``text``."""
        cited = self._cited(lines)
        words = content_words(text, names=self._participants)
        if not words:
            raise UngroundedError("The decision has no content word to check against the lines; state it.")
        numbers = [line.number for line in cited]
        matched = {line.number for line in cited if words & content_words(line.text)}
        if not matched or not _covered(words, cited):
            raise UngroundedError(f"Most words of the decision do not appear in {_span(numbers)}.")
        unsaid = _unsaid(text, cited)
        if unsaid:
            raise UngroundedError(
                f"{_span(numbers)} {_verb(numbers, 'does', 'do')} not say {', '.join(unsaid)}: a decision"
                " changed later in the meeting cites the line that changed it."
            )
        # An agreement that says nothing else ("Agreed.", "Yes, let's do that") supports what it agrees to.
        marked = {line.number for line in cited if _agrees(line) and _bare(line.text)}
        settled = {line.number for line in cited if line.number in matched | marked and not _tentative(line)}
        if not settled:
            raise UngroundedError(
                f"{_span(numbers)} {_verb(numbers, 'does', 'do')} not show it was decided: a question or"
                " a 'maybe' is not a decision; cite the line where it was decided or agreed."
            )
        idle = [n for n in numbers if n not in matched | marked]
        if idle:
            raise UngroundedError(
                f"{_span(idle)} {_verb(idle, 'shows', 'show')} nothing of it; cite only lines that do."
            )
        return tuple(numbers)

    # ------------------------------------------------------------ parts of the rule

    def _cited(self, lines: Sequence[int]) -> list[_Line]:
        if not lines:
            raise UngroundedError(
                "No lines were cited. Give the numbers written before the transcript lines that show it."
            )
        numbers = sorted(set(lines))
        outside = [n for n in numbers if not self._first <= n <= self.last]
        if outside:
            raise UngroundedError(
                f"{_span(outside)} {'is' if len(outside) == 1 else 'are'} not in the transcript"
                f" (it has lines {self._first} to {self.last})."
            )
        if numbers[-1] - numbers[0] > MAX_PASSAGE:
            raise UngroundedError(
                f"The cited lines run from {numbers[0]} to {numbers[-1]}; cite the passage where it was"
                f" said, lines at most {MAX_PASSAGE} apart."
            )
        return [self._lines[n - self._first] for n in numbers]

    def _person(self, owner: str) -> _Person:
        words = tuple(_tokens(owner))
        if not words:
            raise UngroundedError("The owner has no name to look for in the transcript.")
        fits = [
            label
            for label, theirs in self._participant_words.items()
            if set(words) <= set(theirs) or set(theirs) <= set(words)
        ]
        if len(fits) > 1:
            raise UngroundedError(
                f"{_shown(owner)!r} fits more than one participant ({', '.join(fits)});"
                " write the owner's full name."
            )
        if not fits:
            return _Person(None, words, (words,))
        label = fits[0]
        theirs = self._participant_words[label]
        others = {word for other, w in self._participant_words.items() if other != label for word in w}
        mentions = [theirs, *((word,) for word in theirs if word not in others)]
        return _Person(label, theirs, tuple(dict.fromkeys(mentions)))

    def _speaks(self, line: _Line, person: _Person) -> bool:
        if line.speaker is None:
            return False
        if person.label is not None:
            return line.speaker == person.label
        return set(person.words) <= set(_tokens(line.speaker))

    def _names(self, line: _Line, person: _Person) -> bool:
        return any(True for _ in self._mentions(line, person))

    def _mentions(self, line: _Line, person: _Person) -> Iterable[int]:
        """Where each mention of ``person`` in the line ends (the index of the token after it)."""
        tokens = line.tokens
        for mention in person.mentions:
            if any(_UNSPACED.search(word) for word in mention):
                # A name in an unspaced script is read inside a run of that script.
                if any("".join(mention) in token for token in tokens):
                    yield next(at + 1 for at, token in enumerate(tokens) if "".join(mention) in token)
                continue
            size = len(mention)
            for at in range(len(tokens) - size + 1):
                if tokens[at : at + size] == mention:
                    yield at + size

    def _binding(self, line: _Line, person: _Person, speaks: set[int], named: set[int]) -> str | None:
        """How this cited line shows the person taking something on (``own``, ``named``, ``pronoun``),
        or None."""
        if line.question:
            return None
        tokens = line.tokens
        if line.number in speaks and _commits(tokens, line.text):
            return "own"
        for end in self._mentions(line, person):
            if _binding_at(tokens, end) or "action" in tokens[max(0, end - 4) : end]:
                return "named"
        # "He will ...": a pronoun binds whoever the cited lines name, and only them.
        if named and any(
            _binding_at(tokens, at + 1) for at, word in enumerate(tokens) if word in _THIRD_PERSON
        ):
            return "pronoun"
        return None


def _verb(numbers: Sequence[int], one: str, more: str) -> str:
    return one if len(numbers) == 1 else more


def particulars(text: str) -> frozenset[str]:
    """The days, months and numbers of ``text``: what makes two otherwise alike items different."""
    return frozenset(token for token in _tokens(text) if token.isdigit() or token in _DATES)


def _unsaid(text: str, cited: Sequence[_Line]) -> list[str]:
    """The days, months and numbers of ``text`` that no cited line says."""
    said = {token for line in cited for token in line.tokens}
    return sorted(particulars(text) - said)


def _covered(words: frozenset[str], cited: Sequence[_Line]) -> bool:
    """At least half of an item's content words appear in its cited lines (one of one, one of two)."""
    said = frozenset().union(*(content_words(line.text) for line in cited))
    return 2 * len(words & said) >= len(words)


def _bare(text: str, *, names: Iterable[str] = ()) -> bool:
    """Whether a line says nothing but a commitment or an agreement ("Sure, I can do that", "Agreed")."""
    return not content_words(text, names=names) - _AGREEMENT_STEMS


def _tentative(line: _Line) -> bool:
    """A question or a hedge ("maybe", "should we", "whether"): talk about a decision, not one."""
    return line.question or bool(_HEDGES & set(line.tokens))


def _agrees(line: _Line) -> bool:
    """Whether a line says a decision was taken or agrees to one: "we decided", "agreed", "let's"."""
    tokens = line.tokens
    if _DECISION_WORDS & set(tokens) or (tokens and tokens[0] in _ACCEPTANCES):
        return True
    pairs = set(itertools.pairwise(tokens))
    return bool(pairs & {("let", "'s"), ("we", "'ll"), ("we", "will"), ("going", "with"), ("go", "with")})


def _negated(tokens: Sequence[str], at: int) -> bool:
    return any(token in _NEGATIONS for token in tokens[at : at + 2])


def _binding_at(tokens: Sequence[str], at: int) -> bool:
    """Whether the words from ``at`` bind the person just before them: "will fix", "to send", "is on it"."""
    if at >= len(tokens) or tokens[at] not in _BINDING:
        return False
    if tokens[at] in {"is", "are", "'s"}:
        return at + 1 < len(tokens) and tokens[at + 1] in _PROGRESSIVE
    return not _negated(tokens, at + 1)


def _commits(tokens: Sequence[str], text: str) -> bool:
    """A speaker's own commitment or acceptance: "I'll ...", "I can ...", "let me ...", "Sure.", "on it"."""
    if tokens and tokens[0] in _ACCEPTANCES:
        return True
    for at, word in enumerate(tokens):
        if word == "i" and at + 1 < len(tokens):
            following = tokens[at + 1]
            if following in {"'ll", "will", "shall", "can", "could"} and not _negated(tokens, at + 2):
                return True
            if following in {"am", "'m"} and at + 2 < len(tokens) and tokens[at + 2] in _PROGRESSIVE:
                return True
        if word == "let" and tokens[at + 1 : at + 2] == ("me",):
            return True
        if word == "on" and tokens[at + 1 : at + 2] == ("it",):
            return True
        if word == "happy" and tokens[at + 1 : at + 2] == ("to",):
            return True
    return any(marker in text for marker in _UNSPACED_COMMITMENTS)
