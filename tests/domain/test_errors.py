"""The domain error tree: what each error carries and how it presents itself."""

from __future__ import annotations

from domain import ChatError, ChatResponse, ChatTransportError, MalformedResponseError, ResponseFailedError


def test_every_adapter_error_is_a_chat_error_with_context() -> None:
    partial = ChatResponse(response_id="resp_1")
    errors: list[ChatError] = [
        ResponseFailedError("boom", code="server_error", response_id="resp_1", partial=partial),
        MalformedResponseError("cut short", response_id="resp_1", partial=partial),
        ChatTransportError("503", status_code=503, attempts=3, response_id="resp_1", partial=partial),
    ]
    for error in errors:
        assert isinstance(error, ChatError)
        assert error.partial is partial
        assert error.response_id == "resp_1"
        assert not hasattr(error, "run")  # a tool run raises its own copy that carries the run
        assert str(error) == error.message
        assert repr(error).startswith(type(error).__name__ + "(")
        assert "response_id='resp_1'" in repr(error)


def test_specific_fields() -> None:
    failed = ResponseFailedError("rate limited", code="rate_limit_exceeded", request_id="req_9")
    assert (failed.code, failed.request_id, failed.model_id) == ("rate_limit_exceeded", "req_9", None)
    transport = ChatTransportError("no connection")
    assert (transport.status_code, transport.attempts) == (None, 1)
    assert repr(transport) == "ChatTransportError('no connection')"
