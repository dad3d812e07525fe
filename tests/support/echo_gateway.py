"""A hostile gateway on 127.0.0.1 that echoes the caller's API key back, to prove the CLI never shows it.

Use it where a test plants a key and looks at everything the command printed. The model name picks
what comes back: ``echo-text`` (a completed answer whose text quotes the key), ``echo-401`` (an
error body quoting it) or ``echo-failed`` (a failed response whose message quotes it).
"""

from __future__ import annotations

import json
from typing import Any

from adapters.offline.threaded import Receive, Scope, Send, ThreadedServer, read_request
from tests.support.gateway import message_item, response_document

__all__ = ["EchoGateway"]


class EchoGateway(ThreadedServer):
    """The echoing server; ``with EchoGateway() as gateway: gateway.base_url``."""

    def __init__(self) -> None:
        super().__init__(self._echo, name="echo-gateway")

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    async def _echo(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = await read_request(scope, receive)
        body = json.loads(request.body or b"{}")
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
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
        headers = [(b"content-type", b"application/json"), (b"x-request-id", b"req_echo")]
        headers.append((b"content-length", str(len(payload)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
