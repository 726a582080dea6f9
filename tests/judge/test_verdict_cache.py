"""Judge verdicts replayed from a cache: what the key holds, that a replay makes no call,
and that judge errors are never kept."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from oxyeval.judge import VerdictCache, verdict_data, verdict_from_data, verdict_key
from oxyeval.judge.judge import Judge, JudgeResult
from oxyeval.project.config import JudgeSettings
from oxyeval.project.templates import TemplateRef
from oxyeval.providers import GenerateParams, ModelPool, ModelSpec
from tests.fakes import fake_openai, judge_reply, openai_error


class MemoryVerdicts:
    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}
        self.keys: list[dict[str, Any]] = []

    async def get(self, key: Mapping[str, Any]) -> JudgeResult | None:
        self.keys.append(dict(key))
        data = self.entries.get(json.dumps(key, sort_keys=True))
        return verdict_from_data(data) if data is not None else None

    async def put(self, key: Mapping[str, Any], result: JudgeResult) -> None:
        self.entries[json.dumps(key, sort_keys=True)] = verdict_data(result)


def spec(url: str, **fields: Any) -> ModelSpec:
    values: dict[str, Any] = {
        "name": "judge",
        "vendor": "openai",
        "model_ref": "gpt-judge",
        "api_url": url,
        "key_var": "K",
        "max_retries": 0,
    }
    return ModelSpec(**{**values, **fields})


def compare(
    model: ModelSpec,
    cache: VerdictCache | None,
    pairs: list[tuple[str, str]],
    settings: JudgeSettings | None = None,
    prompt: TemplateRef | None = None,
) -> list[JudgeResult]:
    async def go() -> list[JudgeResult]:
        async with ModelPool({"judge": model}, environ={"K": "sk-judge-SECRET-4321"}) as pool:
            judge = Judge(pool.get("judge"), prompt, settings=settings, cache=cache)
            return [await judge.compare("What is the total?", a, b) for a, b in pairs]

    return asyncio.run(go())


def test_the_memory_cache_meets_the_protocol() -> None:
    assert isinstance(MemoryVerdicts(), VerdictCache)


def test_a_rerun_on_the_same_pair_costs_no_judge_call() -> None:
    cache = MemoryVerdicts()
    with fake_openai(judge_reply("B", "They differ.")) as server:
        (first,) = compare(spec(server.url), cache, [("42", "43")])
        (again,) = compare(spec(server.url), cache, [("42", "43")])
        assert len(server.requests) == 1
    assert (first.choice, first.calls, first.cached_calls) == ("B", 1, 0)
    assert (again.choice, again.reasoning, again.calls, again.cached_calls) == (
        "B",
        "They differ.",
        0,
        1,
    )


def test_another_pair_or_order_is_another_verdict() -> None:
    cache = MemoryVerdicts()
    with fake_openai(judge_reply("A")) as server:
        compare(spec(server.url), cache, [("42", "43"), ("43", "42"), ("42", "44")])
        assert len(server.requests) == 3
        compare(spec(server.url), cache, [("42", "44"), ("43", "42")])
        assert len(server.requests) == 3


def test_the_key_is_the_judge_and_its_prompt_never_its_key() -> None:
    cache = MemoryVerdicts()
    with fake_openai(judge_reply("A")) as server:
        url = server.url
        compare(spec(url), cache, [("x", "y")])
        compare(spec(url, model_ref="gpt-other"), cache, [("x", "y")])
        compare(spec(url), cache, [("x", "y")], settings=JudgeSettings(structured="off"))
        compare(spec(url), cache, [("x", "y")], settings=JudgeSettings(max_tokens=64))
        compare(spec(url, params=GenerateParams(temperature=0.9)), cache, [("x", "y")])
        compare(
            spec(url),
            cache,
            [("x", "y")],
            prompt=TemplateRef("{{ submission_1 }} vs {{ submission_2 }}? Answer: A or B"),
        )
        assert len(server.requests) == 6  # each a different judge or prompt: no replay
        compare(spec(url, name="renamed", headers={"X-Token": "hdr-SECRET"}), cache, [("x", "y")])
        assert len(server.requests) == 6  # same judge under another name and headers
    keys = {json.dumps(k, sort_keys=True) for k in cache.keys}
    assert len(keys) == 6
    text = " ".join(keys)
    assert "sk-judge-SECRET-4321" not in text and "hdr-SECRET" not in text
    first = cache.keys[0]
    assert first["kind"] == "verdict" and "x" in first["prompt"] and first["model"] == "gpt-judge"


def test_judge_errors_are_never_kept() -> None:
    cache = MemoryVerdicts()
    with fake_openai(judge_reply("A")) as server:
        server.enqueue((400, openai_error("bad request")))
        off = JudgeSettings(structured="off")
        (failed,) = compare(spec(server.url), cache, [("a", "b")], off)
        assert failed.error is not None and cache.entries == {}
        # No verdict even when asked again: an error, asked afresh on the next run.
        server.enqueue((200, _text("I cannot tell.")), (200, _text("Still unsure.")))
        (unsure,) = compare(spec(server.url), cache, [("c", "d")], JudgeSettings(structured="off"))
        assert unsure.choice is None and unsure.error and cache.entries == {}
        before = len(server.requests)
        (ok,) = compare(spec(server.url), cache, [("c", "d")], JudgeSettings(structured="off"))
        assert ok.choice == "A" and len(server.requests) == before + 1
    assert len(cache.entries) == 1


def test_a_verdict_after_asking_again_is_one_cached_verdict_of_two_calls() -> None:
    cache = MemoryVerdicts()
    settings = JudgeSettings(structured="off")
    with fake_openai(judge_reply("B")) as server:
        server.enqueue((200, _text("Hmm, hard to say.")))
        (first,) = compare(spec(server.url), cache, [("a", "b")], settings)
        (again,) = compare(spec(server.url), cache, [("a", "b")], settings)
        assert len(server.requests) == 2
    assert (first.choice, first.calls) == ("B", 2)
    assert (again.choice, again.calls, again.cached_calls) == ("B", 0, 2)


def test_a_damaged_entry_is_a_miss() -> None:
    assert verdict_from_data({"choice": "C"}) is None
    assert verdict_from_data({}) is None
    result = verdict_from_data({"choice": "A", "reasoning": 3, "calls": "x"})
    assert result is not None and result.reasoning == "" and result.cached_calls == 1


def test_verdict_key_is_plain_json() -> None:
    from oxyeval.providers import Model
    from oxyeval.providers.openai import OpenAIAPI

    model = Model(OpenAIAPI(spec("http://h/v1"), None))
    key = verdict_key(model, GenerateParams(max_tokens=512), "auto", "prompt text")
    assert json.loads(json.dumps(key)) == key
    assert key["base_url"] == "http://h/v1" and key["params"] == {"max_tokens": 512}
    assert verdict_key(model, replace(GenerateParams(), max_tokens=5), "auto", "p") != key


def test_a_new_reading_of_replies_never_replays_verdicts_read_the_old_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A verdict cached before the parser learnt that "Answer: A? No, B." is B keeps A:
    the reading's version is part of the key, so it is asked again."""
    from oxyeval.judge import verdicts
    from oxyeval.providers import Model
    from oxyeval.providers.openai import OpenAIAPI

    model = Model(OpenAIAPI(spec("http://h/v1"), None))
    now = verdict_key(model, GenerateParams(), "auto", "p")
    assert now["reading"] == verdicts.READING
    monkeypatch.setattr(verdicts, "READING", verdicts.READING - 1)
    assert verdict_key(model, GenerateParams(), "auto", "p") != now


def _text(text: str) -> dict[str, Any]:
    from tests.fakes import openai_chat_response

    return openai_chat_response(text)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("K", raising=False)
