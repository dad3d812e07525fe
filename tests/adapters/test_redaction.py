"""The redactor cuts every known secret, in every spelling an echo gives it, out of any text; the log
filter does the same to every record of a logger, where a redactor applies."""

from __future__ import annotations

import base64
import json
import logging
import urllib.parse
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.redaction import REDACTED, RedactingFilter, Redactor

# Lower-case letters, digits and dashes, as keys are spelled: none of them can combine with the
# upper-case "[REDACTED]" marker into a new occurrence of a secret.
secrets = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=6, max_size=40)
texts = st.text(max_size=80)


@given(st.lists(secrets, min_size=1, max_size=4), st.lists(texts, min_size=1, max_size=5))
def test_no_secret_survives_wherever_it_is_planted(planted: list[str], pieces: list[str]) -> None:
    text = "".join(piece + secret for piece, secret in zip(pieces, planted * len(pieces), strict=False))

    redacted = Redactor(planted).redact(text)

    for secret in planted:
        assert secret not in redacted
    assert REDACTED in redacted


@given(texts)
def test_text_without_secrets_is_unchanged(text: str) -> None:
    # Hypothesis text holds no lone surrogates, so nothing in it needs replacing.
    assert Redactor(["sk-not-in-the-text-4242"]).redact(text) == text
    assert Redactor.none().redact(text) == text


def test_a_secret_inside_a_longer_one_leaves_nothing_of_the_longer_one() -> None:
    redactor = Redactor(["abc", "xxabcxx", "", None])

    assert redactor.redact("1 xxabcxx 2 abc 3") == f"1 {REDACTED} 2 {REDACTED} 3"


def test_escaped_and_quoted_spellings_of_a_secret_are_cut_too() -> None:
    secret = 'gw/"key"\\ü+ €'
    redactor = Redactor([secret])
    echoes = [
        json.dumps({"echo": secret}),
        json.dumps({"echo": secret}, ensure_ascii=False),
        repr({"echo": secret}),
        repr(ValueError(secret)),
        urllib.parse.quote(secret, safe=""),
        "https://x.test/?k=" + urllib.parse.quote_plus(secret),
    ]

    for echo in echoes:
        redacted = redactor.redact(echo)
        assert secret not in redacted, echo
        assert REDACTED in redacted, echo
        assert not redactor.contains_secret(redacted)
    assert redactor.contains_secret(echoes[0])


def test_the_limit_bounds_the_length_after_redaction() -> None:
    redactor = Redactor(["sk-live-123456"])

    text = redactor.redact("key=sk-live-123456 " + "x" * 1000, limit=300)

    assert text.startswith(f"key={REDACTED} ")
    assert len(text) == 303
    assert text.endswith("...")
    assert redactor.redact("short", limit=300) == "short"


def test_lone_surrogates_become_replacement_characters_so_the_text_can_be_encoded() -> None:
    shown = Redactor.none().redact("a\ud800b\udfffc")

    assert shown == "a\ufffdb\ufffdc"
    shown.encode("utf-8")


def test_objects_are_shown_through_str_and_one_whose_str_fails_by_its_type() -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    redactor = Redactor(["k3y-k3y-k3y"])

    assert redactor.redact(ValueError("k3y-k3y-k3y leaked")) == f"{REDACTED} leaked"
    assert redactor.redact(42) == "42"
    assert redactor.redact(Unprintable()) == "<unprintable Unprintable>"


def test_the_repr_counts_the_secrets_but_shows_none() -> None:
    redactor = Redactor(["sk-abc-123", "gw-456-xyz", "sk-abc-123"])

    assert repr(redactor) == "Redactor(<2 secrets>)"
    assert repr(Redactor(["only-one-1"])) == "Redactor(<1 secret>)"
    assert bool(redactor)
    assert not Redactor.none()


# ---------------------------------------------------------------- the log filter

API_KEY = "sk-test-SECRET-4b1d"
GATEWAY_TOKEN = "gw-token-9f8e7d6c"
REDACTOR = Redactor([API_KEY, GATEWAY_TOKEN])
ECHO = f"key {API_KEY} token {GATEWAY_TOKEN}"


@pytest.fixture
def filtered() -> Iterator[tuple[logging.Logger, list[logging.LogRecord], list[Redactor | None]]]:
    logger = logging.getLogger("tests.redaction.filtered")
    current: list[Redactor | None] = [REDACTOR]
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    log_filter = RedactingFilter(lambda: current[0])
    handler = Keep()
    logger.addFilter(log_filter)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, records, current
    logger.removeFilter(log_filter)
    logger.removeHandler(handler)


def test_the_log_filter_scrubs_messages_arguments_and_extra_fields(
    filtered: tuple[logging.Logger, list[logging.LogRecord], list[Redactor | None]],
) -> None:
    logger, records, _ = filtered

    logger.debug("request_id: %s", f"req {API_KEY}", extra={"echo": ECHO, "count": 3})
    logger.debug("clean %s", "value")

    echoed, clean = records
    assert echoed.getMessage() == f"request_id: req {REDACTED}"
    assert vars(echoed)["echo"] == f"key {REDACTED} token {REDACTED}"
    assert vars(echoed)["count"] == 3
    assert (clean.msg, clean.args) == ("clean %s", ("value",))


def test_the_log_filter_acts_only_where_a_redactor_applies_and_never_breaks_a_record(
    filtered: tuple[logging.Logger, list[logging.LogRecord], list[Redactor | None]],
) -> None:
    logger, records, current = filtered

    logger.debug("%s %s", API_KEY)
    current[0] = None
    logger.debug("outside a request: %s", API_KEY)

    broken, outside = records
    assert broken.getMessage() == f"%s %s (arguments: ('{REDACTED}',))"
    assert outside.getMessage() == f"outside a request: {API_KEY}"


# ---------------------------------------------------------------- echoes spelled otherwise

ECHOED = "sk-proj-Ab3dE5fG7hJ9kL1mN3pQ"


@pytest.mark.parametrize("spelling", [ECHOED.upper(), ECHOED.lower(), ECHOED.swapcase()])
def test_an_echo_in_another_letter_case_is_cut(spelling: str) -> None:
    assert Redactor([ECHOED]).redact(f"invalid key {spelling}!") == f"invalid key {REDACTED}!"


@pytest.mark.parametrize("prefix", ["", "u", "us", "user:", "Basic token="])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode], ids=["standard", "urlsafe"])
def test_an_echo_in_base64_is_cut_however_it_lines_up(prefix: str, encode: Callable[[bytes], bytes]) -> None:
    """Alone or inside a longer base64 text (an Authorization: Basic value): each of the three ways
    the key's bytes can fall on base64's 3-byte groups."""
    encoded = encode(f"{prefix}{ECHOED}:more".encode()).decode()

    shown = Redactor([ECHOED]).redact(f"auth {encoded}")

    assert REDACTED in shown
    # Of the key's base64 (4 characters per 3 bytes) at most the two characters it shares with what
    # came before and after it are left.
    assert len(shown.replace(REDACTED, "")) <= len(f"auth {encoded}") - (len(ECHOED) * 4 // 3 - 2)


def test_a_key_split_across_two_texts_is_cut_from_both() -> None:
    code, message = ECHOED[:11], ECHOED[11:] + " was refused"

    assert Redactor([ECHOED]).redact_parts([code, message]) == [REDACTED, f"{REDACTED} was refused"]
    assert Redactor([ECHOED]).redact_parts(["no", "secret"]) == ["no", "secret"]
    assert Redactor().redact_parts(["a", "b"]) == ["a", "b"]


@given(cut=st.integers(min_value=1, max_value=len(ECHOED) - 1), before=st.text(max_size=5))
def test_any_split_of_the_key_between_parts_leaves_no_half_of_it(cut: int, before: str) -> None:
    first, second = Redactor([ECHOED]).redact_parts([before + ECHOED[:cut], ECHOED[cut:] + "."])

    assert first.endswith(REDACTED)
    assert second == f"{REDACTED}."
