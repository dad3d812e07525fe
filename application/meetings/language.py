"""The summary's language: the ``auto`` default, BCP 47 tags, and which language a transcript is in."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Final

from application.meetings.grounding import SPEAKER_LINE, normalized

__all__ = ["AUTO", "language_name", "languages_differ", "summary_language", "transcript_language"]

AUTO: Final = "auto"
"""The summary is written in the transcript's own language."""

# A BCP 47 language tag's shape: a 2-3 letter language, then subtags (script, region, variant).
_TAG: Final = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")
_NAMES: Final = {
    "en": "English", "fr": "French", "de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
    "nl": "Dutch", "ja": "Japanese", "zh": "Chinese", "ko": "Korean", "ru": "Russian", "pl": "Polish",
    "sv": "Swedish", "da": "Danish", "nb": "Norwegian Bokmål", "fi": "Finnish", "tr": "Turkish",
}  # fmt: skip
# Words that are frequent in one language and rare in the others: a transcript's language is the one
# whose words it uses most.
_COMMON_WORDS: Final = {
    "en": frozenset("the and to of is we i will it that for on with this you be let 'll".split()),  # noqa: SIM905 - a word list reads best as prose
    "fr": frozenset("le la les et des est je nous pour que une un pas vais sur avec ce dans".split()),  # noqa: SIM905 - a word list reads best as prose
    "de": frozenset("der die das und ist ich wir nicht mit zu ein eine bis den auf werde fur".split()),  # noqa: SIM905 - a word list reads best as prose
    "es": frozenset("el los las y que es en por para una con yo vamos esta del lo".split()),  # noqa: SIM905 - a word list reads best as prose
    "it": frozenset("il di che per non sono gli della io una con lo ho".split()),  # noqa: SIM905 - a word list reads best as prose
    "pt": frozenset("os as que para um uma com nao vou eu do da em".split()),  # noqa: SIM905 - a word list reads best as prose
    "nl": frozenset("het een en van ik niet dat met voor op ga wij".split()),  # noqa: SIM905 - a word list reads best as prose
}
_WORD: Final = re.compile(r"'?[^\W\d_]+")


def summary_language(value: str) -> str:
    """``value`` checked: ``auto`` or a BCP 47 language tag (``fr``, ``pt-BR``, ``zh-Hant``); raises
    :class:`ValueError` naming what arrived otherwise."""
    cleaned = value.strip()
    if cleaned.casefold() == AUTO:
        return AUTO
    if not _TAG.fullmatch(cleaned):
        raise ValueError(f"expected 'auto' or a BCP 47 language tag such as 'fr' or 'pt-BR', got {value!r}")
    return cleaned


def _primary(tag: str) -> str:
    return tag.split("-", 1)[0].casefold()


def language_name(tag: str) -> str:
    """How the instructions name the language: "French (fr)", or the tag alone when it is not listed."""
    name = _NAMES.get(_primary(tag))
    return f"{name} ({tag})" if name else tag


def _script(char: str) -> str | None:
    name = unicodedata.name(char, "")
    for script in ("HIRAGANA", "KATAKANA", "CJK", "HANGUL", "CYRILLIC", "LATIN"):
        if name.startswith(script):
            return script
    return None


SAMPLE_CHARS: Final = 20_000
"""How much of what a transcript's speakers say is read to tell its language: enough for any meeting,
and a bound on the time a long one takes."""


def transcript_language(lines: Sequence[str]) -> str | None:
    """The primary language subtag of what the transcript's speakers say (``en``, ``ja``), or None
    when it cannot be told: by script, then, for Latin text, by its most common words. Only the first
    :data:`SAMPLE_CHARS` characters said are read."""
    said: list[str] = []
    size = 0
    for line in lines:
        match = SPEAKER_LINE.match(line)
        said.append(match["text"] if match is not None else line)
        size += len(said[-1])
        if size >= SAMPLE_CHARS:
            break
    text = "\n".join(said)[:SAMPLE_CHARS]
    scripts = Counter(script for char in text if char.isalpha() and (script := _script(char)) is not None)
    if not scripts:
        return None
    ((top, _),) = scripts.most_common(1)
    if top in {"HIRAGANA", "KATAKANA"} or (top == "CJK" and scripts["HIRAGANA"] + scripts["KATAKANA"]):
        return "ja"
    if top != "LATIN":
        return {"CJK": "zh", "HANGUL": "ko", "CYRILLIC": "ru"}.get(top)
    words = _WORD.findall(normalized(text))
    counts = Counter({tag: sum(word in common for word in words) for tag, common in _COMMON_WORDS.items()})
    ((best, hits),) = counts.most_common(1)
    return best if hits > 0 else None


def languages_differ(language: str, lines: Sequence[str]) -> bool:
    """Whether items written in ``language`` (``auto`` or a tag) are in another language than
    ``lines``: never for ``auto``; for a tag, unless the transcript is found to be in that language
    (a transcript whose language cannot be told counts as another one, so its items carry quotes)."""
    if language == AUTO:
        return False
    return transcript_language(lines) != _primary(language)
