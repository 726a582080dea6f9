"""A judge reply cut at the token limit names the limit that was sent (the providers'
one rule), also when oxyeval sent the vendor's default rather than a judge cap."""

from __future__ import annotations

import asyncio

from oxyeval.judge.judge import Judge
from oxyeval.providers import ModelPool, ModelSpec
from oxyeval.providers.anthropic import DEFAULT_MAX_TOKENS

from ..fakes import anthropic_message_response, fake_anthropic


def test_a_judge_cut_at_the_vendors_default_names_that_limit() -> None:
    """A judge on an Anthropic-compatible gateway serving a thinking model gets no judge
    cap, so oxyeval sends Anthropic's default: the error names it, not the server's."""
    cut = anthropic_message_response("Submission 1 says", stop_reason="max_tokens")
    with fake_anthropic(lambda _r: cut) as server:
        spec = ModelSpec(
            name="judge", vendor="anthropic", model_ref="o3-mini", api_url=server.url, max_retries=0
        )

        async def go() -> str | None:
            async with ModelPool({"judge": spec}, environ={}) as pool:
                result = await Judge(pool.get("judge")).compare("How many?", "42", "41")
                return result.error

        error = asyncio.run(go())
        sent = {r.body["max_tokens"] for r in server.requests}
    assert sent == {DEFAULT_MAX_TOKENS}
    assert error is not None and f"cut off at max_tokens={DEFAULT_MAX_TOKENS}" in error
    assert "server's limit" not in error
