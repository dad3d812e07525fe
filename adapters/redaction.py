"""Cutting known secrets (the API key, extra header values) out of text before anyone can see it."""

from __future__ import annotations

import base64
import json
import logging
import re
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from domain.arguments import SURROGATE

__all__ = ["REDACTED", "RedactingFilter", "Redactor"]

REDACTED: Final = "[REDACTED]"
_ELLIPSIS: Final = "..."
# A base64 spelling shorter than this would match ordinary text by chance.
_MIN_ENCODED: Final = 8
# What every LogRecord has; anything else on a record came in through ``extra``.
_RECORD_FIELDS: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


def _base64_spellings(secret: str) -> set[str]:
    """The characters of ``secret``'s base64 (standard and URL-safe) that do not depend on what comes
    before or after it, for each of the three ways it can line up with base64's 3-byte groups."""
    data = secret.encode("utf-8", "surrogatepass")
    spellings = set()
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + data).decode("ascii")
            # Character k covers bits [6k, 6k+6): keep those wholly inside the secret's bits.
            first, last = -(-8 * offset // 6), 8 * (offset + len(data)) // 6
            stable = encoded[first:last]
            if len(stable) >= _MIN_ENCODED:
                spellings.add(stable)
    return spellings


def _spellings(secret: str) -> set[str]:
    """The ways a provider's echo can spell ``secret``: as is, JSON-escaped, repr-escaped, URL-quoted,
    base64-encoded (alone or inside a longer base64 text); matched in any letter case."""
    return {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret, safe=""),
        *_base64_spellings(secret),
    }


class Redactor:
    """Replaces every known secret in a text with ``[REDACTED]``, longest first.

    Built from the secrets themselves (empty strings and None are ignored). Besides the secret as
    it is, the spellings an echo produces (JSON or repr escaping, URL quoting, base64, any letter
    case) are cut too, so a secret quoted inside a provider's error body or an exception's repr is
    found as well. :meth:`redact_parts` finds one split across neighbouring texts.
    """

    __slots__ = ("_count", "_longest", "_pattern")

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        distinct = {secret for secret in secrets if secret}
        spellings = {spelling for secret in distinct for spelling in _spellings(secret) if spelling}
        self._count = len(distinct)
        self._longest = max(map(len, spellings), default=0)
        # Regex alternation takes the first alternative that matches, so longest first means a
        # secret that contains another is cut whole rather than leaving its remainder behind.
        ordered = sorted(spellings, key=lambda spelling: (-len(spelling), spelling))
        # Any letter case: a gateway that upper-cases an echo still echoes the key.
        self._pattern = re.compile("|".join(map(re.escape, ordered)), re.IGNORECASE) if ordered else None

    @classmethod
    def none(cls) -> Redactor:
        """A redactor that knows no secret: it only makes text safe to show."""
        return cls()

    def __repr__(self) -> str:
        # The secrets themselves are what a repr must not show.
        return f"Redactor(<{self._count} secret{'s' if self._count != 1 else ''}>)"

    def __bool__(self) -> bool:
        return self._pattern is not None

    def redact(self, text: object, *, limit: int | None = None) -> str:
        """``text`` as a string with every secret replaced, lone surrogates replaced by U+FFFD, and
        at most ``limit`` characters (then ending in ``...``) when a limit is given.

        Never raises: an object whose ``str`` fails is named by its type instead.
        """
        try:
            value = text if isinstance(text, str) else str(text)
        except Exception:
            # Any object may be handed in (an exception with odd args); its failure must not escape.
            value = f"<unprintable {type(text).__name__}>"
        if self._pattern is not None:
            value = self._pattern.sub(REDACTED, value)
        # Shown text never carries a surrogate: a log handler or a terminal would raise showing it.
        value = SURROGATE.sub("\ufffd", value)
        if limit is not None and len(value) > limit:
            value = value[:limit] + _ELLIPSIS
        return value

    def redact_parts(self, parts: Sequence[str]) -> list[str]:
        """Each of ``parts`` redacted, a secret split across neighbouring parts included (half a key in
        an error's code, the rest in its message): the parts are searched as one text, written one
        after another, and each keeps its own share of the cut."""
        if self._pattern is None:
            return [self.redact(part) for part in parts]
        joined = "".join(parts)
        spans = [match.span() for match in self._pattern.finditer(joined)]
        shown = []
        start = 0
        for part in parts:
            end = start + len(part)
            pieces: list[str] = []
            position = start
            for first, last in spans:
                if last <= start or first >= end:
                    continue
                first, last = max(first, start), min(last, end)
                pieces += [joined[position:first], REDACTED]
                position = last
            pieces.append(joined[position:end])
            shown.append(SURROGATE.sub("\ufffd", "".join(pieces)))
            start = end
        return shown

    def redact_settled(self, text: str) -> tuple[str, str]:
        """For text that arrives in pieces: ``(shown, held)``, where ``shown`` is the start of ``text``
        that no later piece can change, redacted, and ``held`` the end that could still begin a
        secret. Put ``held`` before the next piece; at the end, :meth:`redact` what is held.
        """
        if self._pattern is None:
            return self.redact(text), ""
        # A match starting before ``settled`` fits inside ``text`` whatever follows, so it is final.
        settled = max(0, len(text) - self._longest + 1)
        shown: list[str] = []
        position = 0
        for match in self._pattern.finditer(text):
            if match.start() >= settled:
                break
            shown += [text[position : match.start()], REDACTED]
            position = match.end()
        cut = max(settled, position)
        shown.append(text[position:cut])
        return SURROGATE.sub("\ufffd", "".join(shown)), text[cut:]

    def contains_secret(self, text: str) -> bool:
        """True when ``text`` holds a secret in any of the spellings this redactor cuts."""
        return self._pattern is not None and self._pattern.search(text) is not None


class RedactingFilter(logging.Filter):
    """A logging filter that cuts secrets out of each record's message as it is emitted.

    ``current`` returns the redactor that applies where the record is logged (for the adapters,
    the one of the request being sent), or None when no secret is in play there. Records pass
    unchanged when they hold no secret; a record that does has its message rewritten, formatted
    and scrubbed, and its string-valued extra fields scrubbed too.
    """

    def __init__(self, current: Callable[[], Redactor | None]) -> None:
        super().__init__()
        self._current = current

    def filter(self, record: logging.LogRecord) -> bool:
        redactor = self._current()
        if not redactor:
            return True
        try:
            message = record.getMessage()
        except Exception:
            # Arguments that do not fit the format: logging would print them raw in its error report,
            # so the record becomes its format and its arguments, side by side, scrubbed.
            message = f"{record.msg} (arguments: {record.args!r})"
            record.msg, record.args = message, None
        if redactor.contains_secret(message):
            record.msg = redactor.redact(message)
            record.args = None
        for name, value in list(vars(record).items()):
            if name not in _RECORD_FIELDS and isinstance(value, str) and redactor.contains_secret(value):
                setattr(record, name, redactor.redact(value))
        return True
