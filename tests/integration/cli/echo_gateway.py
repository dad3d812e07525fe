"""A hostile gateway on 127.0.0.1 that echoes the caller's API key back, to prove the CLI never shows it.

Use it where a test plants a key and looks at everything the command printed. The model name picks
what comes back: ``echo-text`` (a completed answer whose text quotes the key), ``echo-401`` (an
error body quoting it) or ``echo-failed`` (a failed response whose message quotes it).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from tests.adapters.support import message_item, response_document

__all__ = ["EchoGateway"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a test reads what the command printed, not this server."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        key = self.headers.get("authorization", "").removeprefix("Bearer ")
        model = str(body.get("model"))
        if model == "echo-401":
            status = 401
            document: dict[str, Any] = {
                "error": {"message": f"Incorrect API key provided: {key}", "type": "auth", "code": "bad_key"}
            }
        elif model == "echo-failed":
            status = 200
            document = response_document(
                [],
                model=model,
                status="failed",
                error={"code": "server_error", "message": f"key {key} refused"},
            )
        else:
            status = 200
            document = response_document([message_item("msg_1", f"Summary. Your key is {key}.")], model=model)
        payload = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("x-request-id", "req_echo")
        self.end_headers()
        self.wfile.write(payload)


class EchoGateway:
    """The echoing server; ``with EchoGateway() as gateway: gateway.base_url``."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="echo-gateway", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)
