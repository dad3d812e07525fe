"""The cassette: a run's HTTP exchanges as JSON lines, each request keyed by a digest of its body."""

from __future__ import annotations

import base64
import difflib
import gzip
import hashlib
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

__all__ = [
    "FORMAT",
    "IGNORED_REQUEST_KEYS",
    "VERSION",
    "CassetteError",
    "Exchange",
    "canonical",
    "decoded_body",
    "header_line",
    "kept_headers",
    "read_exchanges",
    "request_diff",
    "request_digest",
]

FORMAT: Final = "meeting-agents-cassette"
VERSION: Final = 1
SUFFIX: Final = ".jsonl"
CONTENT_NOTE: Final = (
    "Holds the run's content as sent and received: prompts, transcripts, tool results and answers. "
    "Known secrets (the API key, extra header values) are cut."
)
IGNORED_REQUEST_KEYS: Final = frozenset({"stream", "prompt_cache_key", "stream_options"})
"""Request body keys that change from run to run, or with the adapter, without changing the answer:
``stream`` (either adapter replays either body shape) and the run's own ``prompt_cache_key``."""
_REQUEST_HEADERS: Final = frozenset({"content-type", "accept", "x-initiator"})
_RESPONSE_HEADERS: Final = frozenset(
    {"content-type", "retry-after", "retry-after-ms", "x-request-id", "x-litellm-response-cost"}
)
_RESPONSE_PREFIXES: Final = ("x-ratelimit-",)
_DIFF_LINES: Final = 24
_DIFF_LINE_CHARS: Final = 160


class CassetteError(ValueError):
    """A cassette that cannot be read: not JSON lines, another format or version, a field of the wrong
    type. The message names the file and line."""


@attrs.frozen
class Exchange:
    """One request and the answer it got, as a cassette line holds them."""

    method: str
    path: str
    request_headers: Mapping[str, str]
    request_body: Any
    """The request's JSON value (a string when the body was not JSON)."""
    status: int
    response_headers: Mapping[str, str]
    response_body: bytes
    complete: bool = True
    """False when the caller stopped reading before the body ended: what arrived is all there is."""

    @property
    def digest(self) -> str:
        return request_digest(self.method, self.path, self.request_body)

    def to_json(self) -> dict[str, Any]:
        try:
            body: dict[str, str] = {"text": self.response_body.decode("utf-8")}
        except UnicodeDecodeError:
            body = {"base64": base64.b64encode(self.response_body).decode("ascii")}
        return {
            "digest": self.digest,
            "request": {
                "method": self.method,
                "path": self.path,
                "headers": dict(self.request_headers),
                "body": self.request_body,
            },
            "response": {
                "status": self.status,
                "headers": dict(self.response_headers),
                "body": body,
                "complete": self.complete,
            },
        }

    @classmethod
    def from_json(cls, value: object) -> Exchange:
        """The exchange a cassette line holds; ``ValueError`` naming the first field that is wrong."""
        line = _mapping(value, "the line")
        request = _mapping(line.get("request"), "request")
        response = _mapping(line.get("response"), "response")
        body = _mapping(response.get("body"), "response.body")
        if isinstance(body.get("text"), str):
            raw = body["text"].encode("utf-8", "surrogatepass")
        elif isinstance(body.get("base64"), str):
            raw = base64.b64decode(body["base64"], validate=True)
        else:
            raise ValueError("response.body: expected {'text': str} or {'base64': str}")
        status = response.get("status")
        if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
            raise ValueError(f"response.status: expected an HTTP status, got {status!r}")
        complete = response.get("complete", True)
        if not isinstance(complete, bool):
            raise ValueError("response.complete: expected true or false")
        return cls(
            method=_text(request.get("method"), "request.method"),
            path=_text(request.get("path"), "request.path"),
            request_headers=_headers(request.get("headers", {}), "request.headers"),
            request_body=request.get("body"),
            status=status,
            response_headers=_headers(response.get("headers", {}), "response.headers"),
            response_body=raw,
            complete=complete,
        )


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected a string, got {type(value).__name__}")
    return value


def _headers(value: object, where: str) -> dict[str, str]:
    headers = _mapping(value, where)
    for name, text in headers.items():
        _text(text, f"{where}.{name}")
    return dict(headers)


def canonical(value: object) -> str:
    """``value`` as JSON with sorted keys and no spaces: equal values, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _matched_part(body: object) -> object:
    if isinstance(body, Mapping):
        return {key: value for key, value in body.items() if key not in IGNORED_REQUEST_KEYS}
    return body


def request_digest(method: str, path: str, body: object) -> str:
    """What a replayed request is matched by: its method, path and body, less ``IGNORED_REQUEST_KEYS``."""
    text = canonical([method.upper(), path, _matched_part(body)])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def request_diff(recorded: object, sent: object) -> str:
    """A short unified diff from a recorded request body to the one sent, as indented JSON; a long
    changed line is cut to a window around where it first differs from its counterpart."""

    def lines(body: object) -> list[str]:
        return json.dumps(_matched_part(body), sort_keys=True, indent=1, ensure_ascii=False).splitlines()

    diff = list(difflib.unified_diff(lines(recorded), lines(sent), "recorded", "sent", n=1, lineterm=""))
    for at, line in enumerate(diff):
        if line.startswith("-") and not line.startswith("---") and at + 1 < len(diff):
            other = diff[at + 1]
            if other.startswith("+") and not other.startswith("+++"):
                start = max(0, _common_prefix(line[1:], other[1:]) - _DIFF_LINE_CHARS // 2)
                diff[at], diff[at + 1] = _window(line, start), _window(other, start)
    shown = [line if len(line) <= _DIFF_LINE_CHARS else line[:_DIFF_LINE_CHARS] + "..." for line in diff]
    if len(shown) > _DIFF_LINES:
        shown = [*shown[:_DIFF_LINES], f"... ({len(shown) - _DIFF_LINES} more lines)"]
    return "\n".join(shown)


def _common_prefix(one: str, other: str) -> int:
    """How many characters ``one`` and ``other`` share from their start."""
    return next(
        (at for at, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other))
    )


def _window(line: str, start: int) -> str:
    """``line``'s sign, then its text from ``start`` on (marked cut), at most a diff line long."""
    if start == 0:
        return line
    text = line[1 + start :]
    cut = text[:_DIFF_LINE_CHARS] + ("..." if len(text) > _DIFF_LINE_CHARS else "")
    return f"{line[0]}...{cut}"


def kept_headers(headers: Iterable[tuple[str, str]], *, response: bool) -> dict[str, str]:
    """The headers that matter to a replay (never an authorization header): content type, the
    initiator, and for a response its ids, cost, Retry-After and rate-limit headers."""
    names = _RESPONSE_HEADERS if response else _REQUEST_HEADERS
    kept = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in names or (response and lowered.startswith(_RESPONSE_PREFIXES)):
            kept[lowered] = value
    return kept


def decoded_body(raw: bytes, encoding: str | None) -> bytes | None:
    """``raw`` with its gzip or deflate content coding undone; None for a coding this cannot undo."""
    coding = (encoding or "identity").strip().lower()
    try:
        if coding in ("", "identity"):
            return raw
        if coding in ("gzip", "x-gzip"):
            return gzip.decompress(raw)
        if coding == "deflate":
            try:
                return zlib.decompress(raw)
            except zlib.error:
                return zlib.decompress(raw, -zlib.MAX_WBITS)
    except (OSError, EOFError, zlib.error):
        return None
    return None


def header_line() -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "content": CONTENT_NOTE}


def _cassette_lines(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open("r", encoding="utf-8", errors="surrogateescape") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise CassetteError(f"{path}:{number}: not JSON ({exc.msg})") from None


def read_exchanges(path: Path) -> list[Exchange]:
    """Every exchange of one cassette file, in the order it was recorded."""
    exchanges = []
    lines = _cassette_lines(path)
    first = next(lines, None)
    if first is None:
        raise CassetteError(f"{path}: empty; a cassette starts with its format line")
    number, header = first
    if not isinstance(header, Mapping) or header.get("format") != FORMAT:
        raise CassetteError(f"{path}:{number}: not a {FORMAT} file")
    if header.get("version") != VERSION:
        raise CassetteError(
            f"{path}:{number}: version {header.get('version')!r}; this package reads {VERSION}"
        )
    for number, value in lines:
        try:
            exchanges.append(Exchange.from_json(value))
        except ValueError as exc:
            raise CassetteError(f"{path}:{number}: {exc}") from None
    return exchanges
