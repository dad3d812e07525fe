"""The grounding rule: an action item or a decision is recorded only when the lines it cites show it."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final, Protocol

import attrs

from application.tools.registry import ToolError

__all__ = [
    "MAX_PASSAGE",
    "PARTS",
    "UNGROUNDED",
    "Grounding",
    "SpokenLine",
    "UngroundedError",
    "content_words",
    "due_marks",
    "normalized",
    "particulars",
    "quote_found",
    "transcript_lines",
]

UNGROUNDED: Final = "ungrounded"
PARTS: Final = (
    *("lines", "owner", "commitment", "object", "detail", "order", "polarity"),
    *("due", "quote", "settled", "idle"),
)
"""What a refusal names as the part of the call that failed, first in its message (``"due: ..."``)."""
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
_QUESTION_END: Final = re.compile(r"[?\uff1f]\W*$")
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
        # German, French and Spanish: "Ben wird ...", "Ben soll ...", "Ben va ...", "Ben doit ...".
        "wird",
        "soll",
        "ubernimmt",
        "kummert",
        "va",
        "doit",
    }
)
_PROGRESSIVE: Final = frozenset({"going", "taking", "handling", "on", "owning", "doing"})
_NEGATIONS: Final = frozenset({"not", "'t", "never", "no"})
# Negation in the languages the rule reads, for the polarity of items and lines (not for owners: a
# French "ne" or a German "nicht" after a name already keeps the binding words from following it).
_POLAR_NEGATIONS: Final = _NEGATIONS | frozenset(
    {
        "cannot",
        "nicht",
        "kein",
        "keine",
        "keinen",
        "keiner",
        "nie",
        "niemals",
        "pas",
        "jamais",
        "ne",
        "n",
        "nunca",
    }
)
_UNSPACED_NEGATIONS: Final = (
    "ません",
    "しない",
    "ないで",
    "ではない",
    "じゃない",
    "不要",
    "不会",
    "没有",
    "않",
)
_ACCEPTANCES: Final = frozenset(
    {"yes", "yeah", "yep", "sure", "ok", "okay", "agreed", "deal", "absolutely", "definitely", "certainly"}
    | {"ja", "klar", "gerne", "oui", "entendu", "si", "claro", "はい"}
)
_THIRD_PERSON: Final = frozenset({"he", "she", "they"})
_UNSPACED_COMMITMENTS: Final = (
    "我会", "我来", "我负责", "好的", "没问题", "私が", "やります", "対応します", "担当します", "제가",
)  # fmt: skip
# A speaker's own commitment in German, French and Spanish: "ich werde", "je vais", "me encargo".
_FIRST_PERSON_PAIRS: Final = frozenset(
    {
        ("ich", "werde"), ("ich", "kann"), ("ich", "mache"), ("ich", "kummere"), ("ich", "ubernehme"),
        ("mache", "ich"), ("ubernehme", "ich"), ("je", "vais"), ("je", "peux"), ("je", "ferai"),
        ("je", "m"), ("me", "encargo"), ("yo", "me"), ("lo", "hago"),
    }
)  # fmt: skip
_DECISION_WORDS: Final = frozenset(
    {"decided", "agreed", "agree", "decision", "settled", "approved", "confirmed", "final", "consensus"}
    | {
        "beschlossen",
        "entschieden",
        "entscheidung",
        "einverstanden",
        "vereinbart",
        "decide",
        "convenu",
        "acuerdo",
        "decidido",
    }
)
# Someone named in an unspaced script is bound by the line that gives them the task ("アナさんが担当します").
_UNSPACED_ASSIGNMENTS: Final = ("担当", "お願いします", "负责", "맡")
_UNSPACED_AGREEMENTS: Final = ("賛成", "決定", "決めました", "了解", "同意", "そうしましょう", "决定", "同意")
_HEDGES: Final = frozenset(
    {"maybe", "perhaps", "might", "should", "could", "whether", "vielleicht", "eventuell", "quizas"}
)
_UNSPACED_HEDGES: Final = ("かもしれ", "たぶん", "多分", "也许", "可能")
# Words a task may add that say nothing of its own ("handle the ...", "follow up on ..."): the
# paraphrase allowance of the wording rule; every other content word must be said by a cited line.
_LIGHT_WORDS: Final = frozenset({"task", "item", "handle", "ensure", "follow", "work", "action", "care"})
# A clause ends at punctuation or at a "but": negation is read in the clause that says the item.
_CLAUSE_END: Final = re.compile(
    r"[,;:.!?()\u3001\u3002\uff0c\uff1b\uff1a\uff01\uff1f]+"
    r"|\s(?:but|so|and|because|then|aber|und|weil|dann|mais|et|donc|puis|pero|y)\s",
    re.IGNORECASE,
)
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
    return frozenset(stem for _, stem in _content_tokens(text, names=names))


def _content_tokens(text: str, *, names: Iterable[str] = ()) -> list[tuple[str, str]]:
    """:func:`content_words` in the order ``text`` says them, each as (the word as written, its stem)."""
    left_out = _STOPWORDS | {word for name in names for word in _tokens(name)}
    found: list[tuple[str, str]] = []
    for token in _tokens(text):
        token = token.lstrip("'")
        if _UNSPACED.search(token):
            found.extend((token, token[at : at + 2]) for at in range(max(1, len(token) - 1)))
        elif token not in left_out and len(token) > 1 and not token.isdigit():
            found.append((token, _stem(token)))
    return found


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
    """A record call whose cited lines do not show it: answered ``ungrounded``, nothing recorded.

    ``part`` (one of :data:`PARTS`) names what failed, and the message starts with it (``"due: ..."``),
    so the model knows whether to cite other lines or word the item again.
    """

    def __init__(self, part: str, message: str) -> None:
        super().__init__(
            UNGROUNDED, f"{part}: {message} Nothing was recorded; cite the lines that show it, or drop it."
        )
        self.part = part


def _shown(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "..."


def _listed(words: Sequence[str]) -> str:
    """At most five of the call's own words, each cut short: what a refusal may echo of the arguments."""
    shown = ", ".join(repr(_shown(word)) for word in words[:5])
    return shown + (", ..." if len(words) > 5 else "")


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

    ``cross_language`` says the items are written in another language than the lines: each call then
    carries a ``quote`` of the cited lines, and what a lexical check can compare across languages is
    checked (the owner, the quote, the due date in the quote, numbers and negation); the wording of
    the item itself is not (see :meth:`action_item`).
    """

    def __init__(
        self,
        lines: Sequence[str | SpokenLine],
        *,
        first: int = 1,
        participants: Sequence[str] = (),
        cross_language: bool = False,
    ) -> None:
        self._first = first
        self._lines = tuple(_read_line(first + at, line) for at, line in enumerate(lines))
        speakers = [line.speaker for line in self._lines if line.speaker is not None]
        self._participants = tuple(dict.fromkeys([*participants, *speakers]))
        self._participant_words = {label: tuple(_tokens(label)) for label in self._participants}
        self.cross_language = cross_language

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

    def action_item(
        self,
        owner: str,
        task: str,
        lines: Sequence[int],
        *,
        due: str | None = None,
        quote: str | None = None,
    ) -> tuple[str, tuple[int, ...]]:
        """The owner as the meeting names them and the cited lines, sorted; raises :class:`UngroundedError`
        unless the lines show ``owner`` taking ``task`` on, as the task says it.

        In one language the task is read against the lines: every content word said there (up to
        inflection, :data:`_LIGHT_WORDS` aside), in their order, with their polarity, and no day,
        month or number they do not say; ``due``, when given, is said there too (:func:`due_marks`).
        Across languages the ``quote`` stands where the task's words would: found in the lines, it
        must say something, the due date must be in it, and the task keeps its numbers and polarity.
        """
        cited = self._cited(lines)
        person = self._person(owner)
        numbers = [line.number for line in cited]
        found = self._quoted(quote, cited)
        task_words = self._words("task", task, found, remedy="describe it")
        named = {line.number for line in cited if self._names(line, person)}
        speaks = {line.number for line in cited if self._speaks(line, person)}
        if not (named or speaks):
            raise UngroundedError(
                "owner",
                f"{_shown(owner)!r} neither speaks in nor is named by {_span(numbers)}."
                " Cite the line where the owner takes the task on (pronouns count only through cited lines"
                " that name the person).",
            )
        matched = {line.number for line in cited if task_words & content_words(line.text, names=())}
        if not matched:
            raise UngroundedError("object", f"Most words of the task do not appear in {_span(numbers)}.")
        binding = {line.number: self._binding(line, person, speaks, named) for line in cited}
        bound = {number for number, kind in binding.items() if kind is not None}
        if not bound:
            raise UngroundedError(
                "commitment",
                f"{_span(numbers)} {_verb(numbers, 'names', 'name')} {_shown(owner)} but"
                f" {_verb(numbers, 'does', 'do')} not show them taking the task on: no"
                f" commitment by {_shown(owner)}, no assignment such as '{_shown(owner)} will ...' or"
                f" 'action: {_shown(owner)} to ...'.",
            )
        self._said("task", task, found, cited)
        if due is not None:
            quoted = self.cross_language and found is not None
            said = found if quoted and found is not None else " ".join(line.text for line in cited)
            _due_said(due, said, numbers, quoted=quoted)
        # A line supports the item when it says the task, or binds the owner saying nothing else ("Sure,
        # I'll do it"), or names the owner a cited "he will ..." refers to.
        bare = {line.number for line in cited if _bare(line.text, names=self._participants)}
        referred = named if "pronoun" in binding.values() else set()
        idle = [n for n in numbers if n not in matched | (bound & bare) | referred]
        if idle:
            raise UngroundedError(
                "idle",
                f"{_span(idle)} {_verb(idle, 'shows', 'show')} nothing of this item;"
                " cite only lines that do.",
            )
        return (person.label or owner.strip()), tuple(numbers)

    def decision(self, text: str, lines: Sequence[int], *, quote: str | None = None) -> tuple[int, ...]:
        """The cited lines, sorted; raises :class:`UngroundedError` unless they state or agree to ``text``
        (read as :meth:`action_item` reads a task, the ``quote`` standing for it across languages)."""
        cited = self._cited(lines)
        numbers = [line.number for line in cited]
        found = self._quoted(quote, cited)
        words = self._words("decision", text, found, remedy="state it")
        matched = {line.number for line in cited if words & content_words(line.text)}
        self._said("decision", text, found, cited)
        # An agreement that says nothing else ("Agreed.", "Yes, let's do that") supports what it agrees to.
        marked = {
            line.number for line in cited if _agrees(line) and (self.cross_language or _bare(line.text))
        }
        # Across languages the wording cannot show a decision, so a cited line must say one was taken.
        deciding = marked if self.cross_language else matched | marked
        settled = {line.number for line in cited if line.number in deciding and not _tentative(line)}
        if not settled:
            raise UngroundedError(
                "settled",
                f"{_span(numbers)} {_verb(numbers, 'does', 'do')} not show it was decided: a question or"
                " a 'maybe' is not a decision; cite the line where it was decided or agreed.",
            )
        idle = [n for n in numbers if n not in matched | marked]
        if idle:
            raise UngroundedError(
                "idle",
                f"{_span(idle)} {_verb(idle, 'shows', 'show')} nothing of it; cite only lines that do.",
            )
        return tuple(numbers)

    # ------------------------------------------------------------ parts of the rule

    def _words(self, kind: str, text: str, found: str | None, *, remedy: str) -> frozenset[str]:
        """The content words the cited lines must show: those of ``text`` (the ``kind``: task or
        decision), or across languages those of the quote ``found`` for it; raises when there are none
        (``remedy`` says what to do about the text)."""
        wording = text if found is None or not self.cross_language else found
        words = content_words(wording, names=self._participants)
        if not words:
            if self.cross_language:
                raise UngroundedError(
                    "quote", f"The quote says nothing of the {kind}; quote the words that say it."
                )
            raise UngroundedError(
                "object", f"The {kind} has no content word to check against the lines; {remedy}."
            )
        return words

    def _said(self, kind: str, text: str, found: str | None, cited: Sequence[_Line]) -> None:
        """Raises unless the cited lines say ``text`` as it words it, or across languages unless the
        quote ``found`` for it keeps its polarity and its numbers."""
        if found is None or not self.cross_language:
            self._worded(kind, text, cited)
        else:
            _same_polarity(text, found, cited, kind)
            _numbers_kept(text, found, kind)

    def _quoted(self, quote: str | None, cited: Sequence[_Line]) -> str | None:
        """The quote, when given and found in the cited lines; required across languages."""
        if quote is None or not quote.strip():
            if self.cross_language:
                raise UngroundedError(
                    "quote",
                    "The summary is written in another language than the transcript, so each call carries"
                    " a quote: the words of the cited lines that say the item, copied exactly.",
                )
            return None
        if not quote_found(quote, [self.line(line.number) for line in cited]):
            numbers = [line.number for line in cited]
            raise UngroundedError(
                "quote",
                f"The quote is not in {_span(numbers)}: copy the words exactly as the lines have them"
                " (join words from two lines with '...'), or cite the lines it comes from.",
            )
        return quote

    def _worded(self, kind: str, text: str, cited: Sequence[_Line]) -> None:
        """Raises unless the cited lines say ``text``: its words, its details, their order, its polarity."""
        numbers = [line.number for line in cited]
        wanted = [
            (word, stem)
            for word, stem in _content_tokens(text, names=self._participants)
            if word not in _DATES and stem not in _LIGHT_STEMS
        ]
        said = frozenset().union(*(content_words(line.text) for line in cited))
        missing = list(dict.fromkeys(word for word, stem in wanted if stem not in said))
        if wanted and 2 * len(missing) > len({stem for _, stem in wanted}):
            raise UngroundedError("object", f"Most words of the {kind} do not appear in {_span(numbers)}.")
        if missing:
            raise UngroundedError(
                "object",
                f"{_span(numbers)} {_verb(numbers, 'does', 'do')} not say {_listed(missing)}:"
                f" word the {kind} with the words the lines use, or cite the lines that say it.",
            )
        unsaid = _unsaid(text, cited)
        if unsaid:
            raise UngroundedError(
                "detail",
                f"{_span(numbers)} {_verb(numbers, 'does', 'do')} not say {', '.join(unsaid)}: a {kind}"
                " changed later in the meeting cites the line that changed it.",
            )
        stems = [stem for _, stem in wanted]
        if not _in_order(stems, [_stem_sequence(line.text) for line in cited], text):
            raise UngroundedError(
                "order",
                f"The {kind} says its words in another order than {_span(numbers)}, which changes who or"
                " what comes first: keep the order the lines say them in.",
            )
        theirs = _polarity([line.text for line in cited], set(stems))
        if theirs is not None and theirs != _polarity([text], set(stems)):
            said_it = "negates" if theirs else "does not negate"
            raise UngroundedError(
                "polarity",
                f"{_span(numbers)} {said_it} what the {kind} says and the {kind}"
                f" {'does not' if theirs else 'does'}: keep the lines' 'not'.",
            )

    def _cited(self, lines: Sequence[int]) -> list[_Line]:
        if not lines:
            raise UngroundedError(
                "lines",
                "No lines were cited. Give the numbers written before the transcript lines that show it.",
            )
        numbers = sorted(set(lines))
        outside = [n for n in numbers if not self._first <= n <= self.last]
        if outside:
            raise UngroundedError(
                "lines",
                f"{_span(outside)} {'is' if len(outside) == 1 else 'are'} not in the transcript"
                f" (it has lines {self._first} to {self.last}).",
            )
        if numbers[-1] - numbers[0] > MAX_PASSAGE:
            raise UngroundedError(
                "lines",
                f"The cited lines run from {numbers[0]} to {numbers[-1]}; cite the passage where it was"
                f" said, lines at most {MAX_PASSAGE} apart.",
            )
        return [self._lines[n - self._first] for n in numbers]

    def _person(self, owner: str) -> _Person:
        words = tuple(_tokens(owner))
        if not words:
            raise UngroundedError("owner", "The owner has no name to look for in the transcript.")
        fits = [
            label
            for label, theirs in self._participant_words.items()
            if set(words) <= set(theirs) or set(theirs) <= set(words)
        ]
        if len(fits) > 1:
            raise UngroundedError(
                "owner",
                f"{_shown(owner)!r} fits more than one participant ({', '.join(fits)});"
                " write the owner's full name.",
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
            if _UNSPACED.search(tokens[end - 1]) and any(m in line.text for m in _UNSPACED_ASSIGNMENTS):
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
    return (
        line.question
        or bool(_HEDGES & set(line.tokens))
        or any(marker in line.text for marker in _UNSPACED_HEDGES)
    )


def _agrees(line: _Line) -> bool:
    """Whether a line says a decision was taken or agrees to one: "we decided", "agreed", "let's"."""
    tokens = line.tokens
    if _DECISION_WORDS & set(tokens) or (tokens and tokens[0] in _ACCEPTANCES):
        return True
    if any(marker in line.text for marker in _UNSPACED_AGREEMENTS):
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
        if tuple(tokens[at : at + 2]) in _FIRST_PERSON_PAIRS:
            return True
    return any(marker in text for marker in _UNSPACED_COMMITMENTS)


# ---------------------------------------------------------------- wording: order and polarity

_LIGHT_STEMS: Final = frozenset(_stem(word) for word in _LIGHT_WORDS)
# "the slides for the board" says what "the board slides" says: a noun phrase may turn around "of"/"for".
_OF_PHRASE: Final = re.compile(r"(\w+) (?:of|for) (?:(?:the|a|an|our|their|its|his|her|my|your) )?(\w+)")


def _stem_sequence(text: str) -> list[str]:
    return [stem for _, stem in _content_tokens(text)]


def _orders(text: str, keep: frozenset[str]) -> list[list[str]]:
    """The orders in which ``text`` may say its words (``keep``'s stems) without changing what it means:
    as written, a noun phrase turned around "of"/"for", and, of three words or more, its leading verb
    made a noun at the end ("update the pricing page", "the pricing page update")."""
    texts = [normalized(text)]
    texts += [
        texts[0][: m.start()] + f"{m[2]} {m[1]}" + texts[0][m.end() :] for m in _OF_PHRASE.finditer(texts[0])
    ]
    orders = []
    for variant in dict.fromkeys(texts):
        stems = [stem for stem in _stem_sequence(variant) if stem in keep]
        orders.append(stems)
        if len(stems) > 2:  # of two words, the verb made a noun is the two swapped: "move the launch"
            orders += [stems[1:] + stems[:1], stems[-1:] + stems[:-1]]
    return orders


def _follows(wanted: Sequence[str], said: Sequence[str]) -> bool:
    """Whether ``wanted`` is a subsequence of ``said``."""
    rest = iter(said)
    return all(any(word == other for other in rest) for word in wanted)


def _in_order(stems: Sequence[str], lines: Sequence[Sequence[str]], text: str) -> bool:
    """Whether some order ``text`` may say its words in (:func:`_orders`) is the order of each cited
    line that says two or more of them ("Okta first, then Azure AD" is not "Azure AD first, then Okta")."""
    if len(set(stems)) < 2:
        return True
    orders = _orders(text, frozenset(stems))
    for order in orders:
        if all(
            len({stem for stem in order if stem in set(line)}) < 2
            or _follows([stem for stem in order if stem in set(line)], line)
            for line in lines
        ):
            return True
    return False


def _says_no(clause: str) -> bool:
    return bool(_POLAR_NEGATIONS & set(_tokens(clause))) or any(m in clause for m in _UNSPACED_NEGATIONS)


def _polarity(texts: Sequence[str], stems: set[str]) -> bool | None:
    """Whether the clause of ``texts`` that says most of ``stems`` is negated; None when none says any."""
    best, negated = 0, None
    for text in texts:
        for clause in _CLAUSE_END.split(text):
            said = len(stems & content_words(clause))
            if said > best:
                best, negated = said, _says_no(clause)
    return negated


def _same_polarity(item: str, quote: str, cited: Sequence[_Line], kind: str) -> None:
    """Across languages: the item negates what the lines say at its quote exactly when they negate it."""
    theirs = _polarity([line.text for line in cited], set(content_words(quote)))
    if theirs is not None and theirs != _says_no(item):
        raise UngroundedError(
            "polarity",
            f"The lines {'negate' if theirs else 'do not negate'} what the quote says and the {kind}"
            f" {'does not' if theirs else 'does'}: keep the lines' negation.",
        )


def _numbers_kept(item: str, quote: str, kind: str) -> None:
    """Across languages: every number of the item is in its quote (digits read the same in any language),
    and every weekday or month it names, in any language the rule reads ("vendredi" is "Friday")."""
    unsaid = sorted({token for token in _tokens(item) if token.isdigit()} - set(_tokens(quote)))
    if unsaid:
        raise UngroundedError("detail", f"The quote does not say {', '.join(unsaid)}, which the {kind} does.")
    # Short Latin words are left out: "may", "mar" or "sun" name a date less often than not.
    spelled = " ".join(word for word in item.split() if len(word) >= 4 or not word.isascii())
    named = {mark for mark in due_marks(spelled) if mark.startswith(("weekday:", "month:"))}
    if named - due_marks(quote):
        raise UngroundedError(
            "detail", f"The {kind} names a day or a month the quote does not say: keep the meeting's."
        )


# ---------------------------------------------------------------- due dates

_WEEKDAY_NAMES: Final = (
    ("monday", "mon", "lundi", "montag", "lunes", "月曜"),
    ("tuesday", "tue", "tues", "mardi", "dienstag", "martes", "火曜"),
    ("wednesday", "wed", "mercredi", "mittwoch", "miercoles", "水曜"),
    ("thursday", "thu", "thur", "thurs", "jeudi", "donnerstag", "jueves", "木曜"),
    ("friday", "fri", "vendredi", "freitag", "viernes", "金曜"),
    ("saturday", "sat", "samedi", "samstag", "sabado", "土曜"),
    ("sunday", "sun", "dimanche", "sonntag", "domingo", "日曜"),
)
_MONTH_NAMES: Final = (
    ("january", "jan", "janvier", "januar", "enero"),
    ("february", "feb", "fevrier", "februar", "febrero"),
    ("march", "mar", "mars", "marz", "maerz", "marzo"),
    ("april", "apr", "avril", "abril"),
    ("may", "mai", "mayo"),
    ("june", "jun", "juin", "juni", "junio"),
    ("july", "jul", "juillet", "juli", "julio"),
    ("august", "aug", "aout", "agosto"),
    ("september", "sep", "sept", "septembre", "septiembre"),
    ("october", "oct", "octobre", "oktober", "octubre"),
    ("november", "nov", "novembre", "noviembre"),
    ("december", "dec", "decembre", "dezember", "diciembre"),
)
# Relative deadlines, each written several ways and in the languages the rule reads, to one mark.
_RELATIVE: Final = (
    ("tomorrow", r"tomorrow|tmrw|tmr|demain|morgen|manana|明日"),
    ("today", r"today|aujourd ?hui|heute|hoy|今日"),
    ("tonight", r"tonight|ce soir|heute abend|esta noche|今夜|今晩"),
    (
        "end-of-day",
        r"eod|cob|end of (?:the )?(?:business )?day|close of business|fin de (?:la )?journee|終業",
    ),
    ("end-of-week", r"eow|end of (?:the )?week|fin de (?:la )?semaine|ende der woche|週末"),
    ("end-of-month", r"eom|end of (?:the )?month|fin du mois|ende des monats|月末"),
    ("end-of-sprint", r"end of (?:the )?sprint|fin du sprint|ende des sprints"),
    ("end-of-quarter", r"eoq|end of (?:the )?quarter|fin du trimestre|ende des quartals"),
    (
        "next-week",
        r"next week|(?:la )?semaine prochaine|nachste woche|(?:la )?proxima semana|semana que viene|来週",
    ),
    (
        "next-month",
        r"next month|(?:le )?mois prochain|nachsten monat|nachster monat|(?:el )?proximo mes|来月",
    ),
    ("next-sprint", r"next sprint|(?:le )?prochain sprint|nachsten sprint|nachster sprint|次のスプリント"),
    ("next-quarter", r"next quarter|(?:le )?prochain trimestre|nachsten quartal|来期"),
    ("this-week", r"this week|cette semaine|diese woche|esta semana|今週"),
    ("this-quarter", r"this quarter|ce trimestre|dieses quartal|今期"),
)
_MARK_NAMES: Final = {
    **{name: f"weekday:{at}" for at, names in enumerate(_WEEKDAY_NAMES, 1) for name in names},
    **{name: f"month:{at}" for at, names in enumerate(_MONTH_NAMES, 1) for name in names},
    "noon": "time:12:00", "midi": "time:12:00", "mittag": "time:12:00", "mediodia": "time:12:00",
    "midnight": "time:0:00", "minuit": "time:0:00", "mitternacht": "time:0:00",
}  # fmt: skip
_DUE_PATTERN: Final = re.compile(
    r"(?P<relative>"
    + "|".join(
        f"(?P<r{at}>(?<![a-z0-9])(?:{normalized(spoken)})(?![a-z0-9]))"
        for at, (_, spoken) in enumerate(_RELATIVE)
    )
    + ")"
    r"|(?P<iso>\b\d{4}-\d{1,2}-\d{1,2}\b)"
    r"|(?P<hour>\b\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<half>[ap])\.?\s?m\b\.?"
    r"|\b(?P<clock>\d{1,2})(?::|h)(?P<minutes>\d{2})\b"
    r"|(?P<jmonth>\d{1,2})月|(?P<jday>\d{1,2})日"
    r"|(?P<number>\b\d+(?:\.\d+)*)(?:st|nd|rd|th|er|e)?\b"
    r"|(?P<unspaced>[月火水木金土日]曜)"
    # Latin words only: a run of an unspaced script is read for the marks inside it.
    r"|(?P<word>[a-z]+)"
)


_DUE_FILLER: Final = frozenset({"by", "the", "on", "at", "in", "a", "an", "of", "no", "later", "than"})


def due_marks(text: str) -> frozenset[str]:
    """What a due date says, written any of the ways people write it: ``weekday:5`` for "Friday",
    "Fri", "vendredi" or "金曜日"; ``month:3``; ``time:17:00`` for "5pm" or "17:00"; ``number:3`` for
    "3rd"; ``relative:end-of-week`` for "EOW" or "end of the week". Words that are none of these
    ("by", "the") give no mark."""
    marks: set[str] = set()
    for match in _DUE_PATTERN.finditer(normalized(text)):
        if match["relative"] is not None:
            at = next(at for at in range(len(_RELATIVE)) if match[f"r{at}"] is not None)
            marks.add(f"relative:{_RELATIVE[at][0]}")
        elif match["iso"] is not None:
            year, month, day = (int(part) for part in match["iso"].split("-"))
            marks |= {f"number:{year}", f"month:{month}", f"number:{day}"}
        elif match["hour"] is not None:
            hour = int(match["hour"]) % 12 + (12 if match["half"] == "p" else 0)
            marks.add(f"time:{hour}:{match['minute'] or '00'}")
        elif match["clock"] is not None:
            marks.add(f"time:{int(match['clock'])}:{match['minutes']}")
        elif match["jmonth"] is not None:
            marks.add(f"month:{int(match['jmonth'])}")
        elif match["jday"] is not None:
            marks.add(f"number:{int(match['jday'])}")
        elif match["number"] is not None:
            number = match["number"]
            marks.add(f"number:{int(number) if number.isdigit() else number}")
        elif match["unspaced"] is not None:
            marks.add(_MARK_NAMES[match["unspaced"]])
        elif match["word"] in _MARK_NAMES:
            marks.add(_MARK_NAMES[match["word"]])
    return frozenset(marks)


def _due_said(due: str, said: str, numbers: Sequence[int], *, quoted: bool) -> None:
    """Raises unless ``said`` (the cited lines, or the quote across languages) states ``due``: its
    marks (:func:`due_marks`), or, for a due with none ("before the demo"), its words."""
    where = "the quote" if quoted else _span(numbers)
    marks = due_marks(due)
    unsaid: set[str] | frozenset[str]
    if marks:
        unsaid = marks - due_marks(said)
    else:
        # No date in it: its words, "before" and "after" included, are what it says.
        words = {_stem(token) for token in _tokens(due) if token not in _DUE_FILLER}
        unsaid = words - {_stem(token) for token in _tokens(said)} if words else {"a date"}
    if unsaid:
        raise UngroundedError(
            "due",
            f"{where} {'does' if quoted or len(numbers) == 1 else 'do'} not say the due date {_shown(due)!r}:"
            " give it as the meeting said it, or null when the cited lines say none.",
        )


# ---------------------------------------------------------------- quotes

# A line's time as the model reads it ("[01:02] "): a quote may copy it, the lines checked have none.
_STAMP: Final = re.compile(r"^\s*[\[(]\s*\d{1,2}(?::\d{2}){1,2}\s*[\])]\s*")
_ELLIPSIS: Final = re.compile(r"\[?\s*(?:\.\.\.|\u2026)\s*\]?")
_NOT_WORD: Final = re.compile(r"[\W_]+")


def _quote_key(text: str) -> str:
    """``text`` as a quote is compared: normalized, punctuation dropped, one space between words."""
    return " " + _NOT_WORD.sub(" ", normalized(text)).strip() + " "


def quote_found(quote: str, texts: Sequence[str]) -> bool:
    """Whether ``quote`` is in ``texts`` (the cited lines, in order) word for word, case, accents and
    punctuation aside; its parts joined by "..." are each found, in order, across the lines, a time
    before a part ("[01:02] Ana: ...") left out."""
    said = " ".join(_quote_key(text).strip() for text in texts)
    said_key = f" {said} "
    parts = [_quote_key(_STAMP.sub("", part)) for part in _ELLIPSIS.split(quote)]
    parts = [part for part in parts if part.strip()]
    if not parts:
        return False
    at = 0
    for part in parts:
        unspaced = bool(_UNSPACED.search(part))
        haystack = said_key.replace(" ", "") if unspaced else said_key
        needle = part.replace(" ", "") if unspaced else part
        found = haystack.find(needle, at if not unspaced else 0)
        if found < 0:
            return False
        at = found + len(needle) - 1 if not unspaced else 0
    return True
