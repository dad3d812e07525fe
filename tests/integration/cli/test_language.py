"""--language and agent.summary_language: items in the chosen language, still checked against their lines."""

from __future__ import annotations

import pytest

from adapters.cli import EXIT_OK, EXIT_USAGE
from adapters.container import Container
from adapters.settings import ConfigurationError
from tests.integration.cli.support import TRANSCRIPT, run

GATEWAY = {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-any", "telemetry": False}


def test_a_summary_in_another_language_quotes_every_item_and_records_them_all() -> None:
    ran = run("summarize", str(TRANSCRIPT), "--language", "fr", "--format", "json")
    assert ran.code == EXIT_OK, ran.err
    summary = ran.json()
    assert summary["action_items"]
    assert all(call["error"] is None for call in summary["tool_calls"])
    # The same meeting without the option: the same items, since the stand-in quotes what it cites.
    plain = run("summarize", str(TRANSCRIPT), "--format", "json").json()
    assert summary["action_items"] == plain["action_items"]


@pytest.mark.parametrize("command", ["summarize", "batch"])
def test_a_language_that_is_no_tag_is_refused_before_any_request(command: str) -> None:
    extra = ["--out", "unused"] if command == "batch" else []
    ran = run(command, str(TRANSCRIPT), *extra, "--language", "French please")
    assert ran.code == EXIT_USAGE
    assert "BCP 47" in ran.err
    assert "'French please'" in ran.err


def test_the_configured_language_is_refused_naming_its_key() -> None:
    ran = run("summarize", str(TRANSCRIPT), environ={"AGENT_SUMMARY_LANGUAGE": "en_US"})
    assert ran.code == EXIT_USAGE
    assert "agent.summary_language" in ran.err


@pytest.mark.parametrize(("configured", "language"), [({}, "auto"), ({"summary_language": "pt-BR"}, "pt-BR")])
async def test_the_container_builds_the_summary_agent_in_the_configured_language(
    configured: dict[str, str], language: str
) -> None:
    async with Container() as container:
        container.config.from_dict({"agent": {**GATEWAY, **configured}})
        assert container.summary_agent().language == language


async def test_a_configured_language_that_is_no_tag_is_refused_naming_its_key() -> None:
    async with Container() as container:
        container.config.from_dict({"agent": {**GATEWAY, "summary_language": "Portuguese"}})
        with pytest.raises(ConfigurationError, match=r"agent\.summary_language"):
            container.summary_agent()
