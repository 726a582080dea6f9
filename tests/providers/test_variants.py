"""Model variants (other sampling settings, no config.yml entry) and models named by vendor
and model id alone: they share the endpoint's limiter and the run's HTTP client."""

from __future__ import annotations

import asyncio

import pytest

from oxyeval.errors import ConfigError
from oxyeval.providers import (
    BUILTIN_PRICES,
    ChatMessage,
    GenerateParams,
    ModelPool,
    ModelSpec,
    model_spec,
)
from tests.fakes import fake_gemini, fake_openai

HI = [ChatMessage("user", "hi")]


def _base(url: str, **fields: object) -> ModelSpec:
    return ModelSpec(name="gpt", vendor="openai", model_ref="gpt-4o-mini", api_url=url, **fields)


def test_a_variant_shares_the_endpoint_limit_of_its_base() -> None:
    with fake_openai(latency=0.1) as server:
        spec = _base(server.url, concurrency=2)

        async def go() -> None:
            async with ModelPool({"gpt": spec}) as pool:
                base = pool.get("gpt")
                hot = pool.variant("gpt", GenerateParams(temperature=0.9, top_p=0.5))
                assert hot.limiter is base.limiter
                assert hot.api.client is base.api.client
                await asyncio.gather(*(m.generate(HI) for m in (base, hot, base, hot, base, hot)))

        asyncio.run(go())
        bodies = [r.body for r in server.requests]
    assert server.max_in_flight == 2  # six calls, two models, one limit of 2
    hot_bodies = [b for b in bodies if b.get("temperature") == 0.9]
    assert len(hot_bodies) == 3 and all(b["top_p"] == 0.5 for b in hot_bodies)
    assert sum("temperature" not in b for b in bodies) == 3


def test_a_variant_keeps_its_base_settings_and_names_what_changed() -> None:
    with fake_openai() as server:
        spec = _base(server.url, params=GenerateParams(temperature=0.2, max_tokens=50))

        async def go() -> tuple[str, str, dict[str, object]]:
            async with ModelPool({"gpt": spec}) as pool:
                base = pool.get("gpt")
                named = base.variant(GenerateParams(seed=7), name="gpt-seeded")
                default = base.variant(GenerateParams(temperature=1.1))
                answer = await named.generate(HI)
                await default.generate(HI)
                assert "gpt-seeded" not in pool.specs  # no config.yml entry was needed
                return answer.model, default.name, server.requests[-1].body

        model, default_name, last = asyncio.run(go())
        first = server.requests[0].body
    assert model == "gpt-seeded"
    assert first["seed"] == 7 and first["temperature"] == 0.2 and first["max_tokens"] == 50
    assert default_name == "gpt[temperature=1.1]"
    assert last["temperature"] == 1.1 and last["max_tokens"] == 50


def test_extra_vendor_fields_are_merged_into_the_request() -> None:
    with fake_gemini() as server:
        spec = ModelSpec(
            "g", "google", model_ref="gemini-2.5-flash", api_url=server.url, key_var="G_KEY"
        )

        async def go() -> None:
            async with ModelPool({"g": spec}, environ={"G_KEY": "g-key-123456"}) as pool:
                topk = pool.variant(
                    "g",
                    GenerateParams(
                        temperature=0.3, extra={"generationConfig": {"topK": 5}, "labels": {}}
                    ),
                )
                await topk.generate(HI)

        asyncio.run(go())
        body = server.requests[0].body
    assert body["generationConfig"] == {"temperature": 0.3, "topK": 5}  # merged, not replaced
    assert body["labels"] == {}


def test_extra_fields_are_part_of_the_cache_key() -> None:
    from oxyeval.providers import answer_key

    spec = ModelSpec("m", "openai", model_ref="x")
    plain = answer_key(spec, "http://h/v1", HI, GenerateParams())
    extra = answer_key(spec, "http://h/v1", HI, GenerateParams(extra={"top_k": 3}))
    assert plain != extra and extra["params"]["extra"] == {"top_k": 3}
    assert "extra" not in plain["params"]  # keys of calls without extras did not change


def test_a_model_not_in_config_yml_from_vendor_and_model_id() -> None:
    with fake_openai(api_key="sk-env-key-123456") as server:
        spec = model_spec("openai", "gpt-4o", api_url=server.url, key_var="MY_OPENAI")
        assert spec.name == "openai:gpt-4o" and spec.vendor == "openai"

        async def go() -> tuple[str, float | None]:
            pool = ModelPool({}, environ={"MY_OPENAI": "sk-env-key-123456"})
            async with pool:
                model = pool.add(spec)
                assert pool.add(spec) is model  # the same spec again: the same model
                answer = await model.generate(HI)
                return answer.text, model.price.input if model.price else None

        text, price = asyncio.run(go())
        assert server.requests[0].headers["authorization"] == "Bearer sk-env-key-123456"
    assert text == "hi" and price == BUILTIN_PRICES["gpt-4o"].input


def test_model_spec_refuses_what_it_cannot_call() -> None:
    with pytest.raises(ConfigError, match="unknown vendor 'azure'"):
        model_spec("azure", "gpt-4o")
    with pytest.raises(ConfigError, match="a model id is needed"):
        model_spec("anthropic", "")
    assert model_spec("gemini", "gemini-2.5-pro").vendor == "google"


def test_adding_another_spec_under_a_used_name_is_refused() -> None:
    pool = ModelPool({"gpt": ModelSpec("gpt", "mock", options={"outputs": ["x"]})})
    with pytest.raises(ConfigError, match="already defined"):
        pool.add(model_spec("openai", "gpt-4o", name="gpt"))
