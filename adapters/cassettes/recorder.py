"""``Recorder``: an HTTP transport that writes every exchange it carries to a cassette, secrets cut."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import httpx

from adapters.cassettes.format import SUFFIX, Exchange, decoded_body, header_line, kept_headers
from adapters.redaction import Redactor

__all__ = ["Recorder"]


class Recorder(httpx.AsyncBaseTransport):
    """Carries requests through ``inner`` and appends each exchange to one cassette in ``directory``.

    A cassette is one JSON-lines file per recorder (per container, so per CLI run), named by the time
    it was opened, written as each answer's body ends: the request body as sent, the response body as
    received (its gzip or deflate coding undone), the status and the headers a replay needs. Every
    known secret (``secrets``: the API key, extra header values) is cut from both bodies and the kept
    headers; authorization headers are never written. The cassette holds the run's content, which is
    the point of recording it: a host decides whether to record at all.

    Reading is not delayed: the body goes on to the caller chunk by chunk as it arrives, and is
    written once the caller has read it whole or closed it (``complete`` is then false).
    """

    def __init__(
        self,
        directory: str | Path,
        inner: httpx.AsyncBaseTransport | None = None,
        *,
        secrets: Iterable[str | None] = (),
    ) -> None:
        self.directory = Path(directory)
        self._inner = inner if inner is not None else httpx.AsyncHTTPTransport()
        self._redactor = Redactor(secrets)
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self.path: Path | None = None
        """The cassette written so far; None until the first exchange ends."""

    def __repr__(self) -> str:
        return f"Recorder({str(self.directory)!r})"

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        sent = await request.aread()
        response = await self._inner.handle_async_request(request)
        tee = _Tee(
            response.stream, lambda body, complete: self._write(request, sent, response, body, complete)
        )
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=tee,
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            with self._lock:
                if self._file is not None:
                    self._file.close()
                    self._file = None

    def _write(
        self, request: httpx.Request, sent: bytes, response: httpx.Response, body: bytes, complete: bool
    ) -> None:
        received = decoded_body(body, response.headers.get("content-encoding"))
        exchange = Exchange(
            method=request.method,
            path=request.url.path,
            request_headers=self._cut_headers(request.headers.multi_items(), response=False),
            request_body=self._request_body(sent),
            status=response.status_code,
            response_headers=self._cut_headers(response.headers.multi_items(), response=True),
            response_body=self._cut_bytes(received if received is not None else b""),
            complete=complete and received is not None,
        )
        line = json.dumps(exchange.to_json(), ensure_ascii=False) + "\n"
        with self._lock:
            self._cassette().write(line)
            self._cassette().flush()

    def _cassette(self) -> IO[str]:
        if self._file is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            self.path = self.directory / f"{stamp}-{secrets.token_hex(4)}{SUFFIX}"
            self._file = self.path.open("x", encoding="utf-8", errors="surrogatepass")
            self._file.write(json.dumps(header_line()) + "\n")
        return self._file

    def _cut_headers(self, headers: Iterable[tuple[str, str]], *, response: bool) -> dict[str, str]:
        kept = kept_headers(headers, response=response)
        return {name: self._redactor.redact(value) for name, value in kept.items()}

    def _cut_bytes(self, body: bytes) -> bytes:
        if not self._redactor:
            return body
        try:
            return self._redactor.redact(body.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            # Latin-1 maps every byte to one character and back, so a secret's ASCII bytes are found
            # in a body that is not UTF-8 as well.
            return self._redactor.redact(body.decode("latin-1")).encode("latin-1", "replace")

    def _request_body(self, sent: bytes) -> Any:
        text = self._cut_bytes(sent).decode("utf-8", "replace")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text


class _Tee(httpx.AsyncByteStream):
    """The inner stream's chunks, handed on as they come and kept; ``done`` gets them once at the end."""

    def __init__(self, inner: httpx.AsyncByteStream | Any, done: Any) -> None:
        self._inner = inner
        self._done = done
        self._chunks: list[bytes] = []
        self._ended = False
        self._written = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._chunks.append(chunk)
            yield chunk
        self._ended = True
        self._finish()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._finish()

    def _finish(self) -> None:
        if not self._written:
            self._written = True
            self._done(b"".join(self._chunks), self._ended)
