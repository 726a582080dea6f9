"""The one rule for the max_tokens a call goes out with: the call's, else config.yml's,
else the vendor's own default (Anthropic requires one), else the default output cap for
every model that talks to a server, except reasoning models (the server's limit)."""

from __future__ import annotations

import asyncio

import pytest

from oxyeval.providers import (
    DEFAULT_OUTPUT_TOKENS,
    ChatMessage,
    GenerateParams,
    ModelPool,
    ModelSpec,
)
from oxyeval.providers.anthropic import DEFAULT_MAX_TOKENS

from ..fakes import fake_anthropic

SPECS = {
    "claude": ModelSpec(name="claude", vendor="anthropic", model_ref="c"),
    "capped": ModelSpec(
        name="capped", vendor="anthropic", model_ref="c", params=GenerateParams(max_tokens=100)
    ),
    "gpt": ModelSpec(name="gpt", vendor="openai", model_ref="g", api_url="http://127.0.0.1:9"),
    "o3": ModelSpec(name="o3", vendor="openai", model_ref="o3-mini", api_url="http://127.0.0.1:9"),
    "mock": ModelSpec(name="mock", vendor="mock", options={"outputs": ["x"]}),
    "odd": ModelSpec(name="odd", vendor="no-such-vendor"),
}


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("claude", None, DEFAULT_MAX_TOKENS),  # the vendor's own default
        ("claude", GenerateParams(max_tokens=7), 7),  # the call's wins
        ("capped", None, 100),  # config.yml's wins over the vendor's
        ("capped", GenerateParams(max_tokens=7), 7),
        ("gpt", None, DEFAULT_OUTPUT_TOKENS),  # every model has a cap by default
        ("o3", None, None),  # a reasoning model: nothing sent, the server's limit
        ("gpt", GenerateParams(max_tokens=9), 9),
        ("mock", None, None),
        ("odd", GenerateParams(max_tokens=5), 5),  # an unknown vendor: only what was set
        ("unknown", GenerateParams(max_tokens=3), 3),
        ("unknown", None, None),
    ],
)
def test_the_pool_tells_the_limit_without_needing_a_key(
    name: str, params: GenerateParams | None, expected: int | None
) -> None:
    pool = ModelPool(SPECS, environ={})  # no ANTHROPIC_API_KEY: still answered
    assert pool.max_tokens(name, params) == expected


def test_a_model_says_the_limit_its_calls_are_sent_with() -> None:
    with fake_anthropic("ok") as server:
        spec = ModelSpec(name="claude", vendor="anthropic", model_ref="c", api_url=server.url)

        async def go() -> tuple[int | None, int | None]:
            async with ModelPool({"claude": spec}, environ={}) as pool:
                model = pool.get("claude")
                await model.generate([ChatMessage("user", "hi")])
                return model.max_tokens(), model.max_tokens(GenerateParams(max_tokens=12))

        assert asyncio.run(go()) == (DEFAULT_MAX_TOKENS, 12)
        (request,) = server.requests
    assert request.body["max_tokens"] == DEFAULT_MAX_TOKENS
