"""What a run through the offline stand-in cost: its litellm dialect bills each answer in LiteLLM's
``x-litellm-response-cost`` header, which both adapters read and the run sums; its openai dialect, like
OpenAI itself, says nothing of cost."""

from __future__ import annotations

import pytest

from adapters.offline import OfflineResponsesServer
from application import MeetingSummary
from tests.integration.offline.support import EXAMPLES, ContainerFactory, bounded

ADAPTERS = pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
TRANSCRIPT = (EXAMPLES / "standup-transcript.txt").read_text(encoding="utf-8")
# The stand-in's price list, as examples/README.md documents it (US dollars per million tokens).
INPUT_PRICE, OUTPUT_PRICE = 0.15, 0.60


def billed(input_tokens: int | None, output_tokens: int | None) -> float:
    assert input_tokens is not None
    assert output_tokens is not None
    return (input_tokens * INPUT_PRICE + output_tokens * OUTPUT_PRICE) / 1_000_000


async def summarize(containers: ContainerFactory, model: str, *, streaming: bool) -> MeetingSummary:
    return await bounded(containers(model, streaming=streaming).summary_agent().summarize(TRANSCRIPT))


@ADAPTERS
async def test_a_run_reports_the_cost_the_litellm_dialect_billed_summed_over_its_requests(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool
) -> None:
    summary = await summarize(containers, "offline", streaming=streaming)

    responses = summary.run.responses
    assert len(responses) == len(server.requests) > 1
    usage = summary.usage
    assert usage is not None
    if server.dialect == "openai":
        assert usage.cost_usd is None
        assert all(r.usage is None or r.usage.cost_usd is None for r in responses)
        return
    each = [billed(r.usage.input_tokens, r.usage.output_tokens) for r in responses if r.usage is not None]
    assert len(each) == len(responses)
    assert [r.usage.cost_usd for r in responses if r.usage is not None] == pytest.approx(each)
    assert usage.cost_usd is not None
    assert usage.cost_usd == pytest.approx(sum(each))
    assert usage.cost_usd > 0


@ADAPTERS
async def test_the_litellm_scenario_bills_on_an_openai_server_too(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool
) -> None:
    summary = await summarize(containers, "offline:litellm", streaming=streaming)

    usage = summary.usage
    assert usage is not None
    assert usage.input_tokens is not None
    assert usage.output_tokens is not None
    assert usage.cost_usd == pytest.approx(billed(usage.input_tokens, usage.output_tokens))
