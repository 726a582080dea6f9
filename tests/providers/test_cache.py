"""The answer cache contract: what the key holds (and never holds), what may be cached, and
Model.generate replaying an answer without a request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from oxyeval.errors import ProviderError
from oxyeval.providers import (
    ChatMessage,
    Completion,
    GenerateParams,
    ModelPool,
    ModelSpec,
    ResponseCache,
    ResponseSchema,
    ToolCall,
    ToolSpec,
    Usage,
    answer_key,
    cacheable,
    completion_data,
    completion_from_data,
    current_repeat,
    repeat_scope,
)
from tests.fakes import fake_openai, openai_chat_response, openai_error

SPEC = ModelSpec(name="m", vendor="openai", model_ref="gpt-x", api_url="http://h/v1")
MESSAGES = [ChatMessage("system", "Be brief."), ChatMessage("user", "total?")]
PARAMS = GenerateParams(temperature=0.2, max_tokens=100)
BASE = "http://h/v1"


def key(**changes: Any) -> dict[str, Any]:
    spec = changes.pop("spec", SPEC)
    base = changes.pop("base_url", BASE)
    messages = changes.pop("messages", MESSAGES)
    params = changes.pop("params", PARAMS)
    run = changes.pop("run", (1,))
    assert not changes
    return answer_key(spec, base, messages, params, run)


class MemoryCache:
    """A ResponseCache in a dict, recording what it was asked and given."""

    def __init__(self, keep_truncated: bool = False) -> None:
        self.keep_truncated = keep_truncated
        self.entries: dict[str, dict[str, Any]] = {}
        self.gets: list[dict[str, Any]] = []

    @staticmethod
    def _id(k: Mapping[str, Any]) -> str:
        return json.dumps(k, sort_keys=True)

    async def get(self, k: Mapping[str, Any]) -> Completion | None:
        self.gets.append(dict(k))
        data = self.entries.get(self._id(k))
        return completion_from_data(data) if data is not None else None

    async def put(self, k: Mapping[str, Any], completion: Completion) -> None:
        self.entries[self._id(k)] = completion_data(completion)


def test_the_memory_cache_meets_the_protocol() -> None:
    assert isinstance(MemoryCache(), ResponseCache)


def test_equal_calls_have_equal_keys_and_the_key_is_plain_json() -> None:
    assert key() == key()
    assert json.loads(json.dumps(key())) == key()


@pytest.mark.parametrize(
    "change",
    [
        {"run": (2,)},
        {"run": (1, 1)},
        {"params": replace(PARAMS, temperature=0.3)},
        {"params": replace(PARAMS, max_tokens=101)},
        {"params": replace(PARAMS, seed=7)},
        {"params": replace(PARAMS, stop=("END",))},
        {"params": replace(PARAMS, tools=(ToolSpec("sql", "Run SQL."),))},
        {"params": replace(PARAMS, response_schema=ResponseSchema("v", {"type": "object"}))},
        {"messages": [*MESSAGES[:1], ChatMessage("user", "total? ")]},
        {"messages": MESSAGES[1:]},
        {"messages": [*MESSAGES, ChatMessage("assistant", "", (ToolCall("c1", "sql", {}),))]},
        {"base_url": "http://other/v1"},
        {"spec": replace(SPEC, model_ref="gpt-y")},
        {"spec": replace(SPEC, vendor="anthropic")},
        {"spec": replace(SPEC, options={"outputs": ["a"]})},
    ],
    ids=lambda c: next(iter(c)) + ":" + str(next(iter(c.values())))[:30],
)
def test_what_decides_an_answer_changes_the_key(change: dict[str, Any]) -> None:
    assert key(**change) != key()


KEY_VARIANTS = [
    {},
    {"run": (2, 1)},
    {"params": replace(PARAMS, stop=("END",), extra={"top_k": 3, "nested": {"b": (1, 2)}})},
    {"params": replace(PARAMS, tools=(ToolSpec("sql", "Run SQL."),))},
    {"params": replace(PARAMS, response_schema=ResponseSchema("v", {"type": "object"}))},
    {"messages": [ChatMessage("user", 'Grüße, 東京 \u2028 "quoted" \\ back')]},
    {"messages": [*MESSAGES, ChatMessage("assistant", "", (ToolCall("c1", "sql", {"q": (1,)}),))]},
    {"messages": [ChatMessage("user", "see", images=("https://x/a.png",))]},
    {"base_url": "http://user:pw@other/v1"},
    {"spec": replace(SPEC, options={"outputs": ["a", "é"], "rules": [{"match": "."}], 3: "x"})},
]


@pytest.mark.parametrize("change", KEY_VARIANTS, ids=lambda c: ",".join(c) or "plain")
def test_the_key_carries_its_canonical_text_and_hashes_as_the_cache_hashes_it(
    change: dict[str, Any],
) -> None:
    """The cache names an entry by the text a key carries: it must be the store's
    canonical JSON of the key, or a key made once would miss the entry made by another."""
    from oxyeval.store import canonical_json

    made = key(**change)
    assert made.canonical == canonical_json(dict(made))
    assert json.loads(made.canonical) == made
    again = key(**change)  # the settings' part made once, then reused
    assert again == made and again.canonical == made.canonical


def test_a_model_s_changed_settings_are_a_new_key() -> None:
    first = key(spec=replace(SPEC, options={"outputs": ["a"]}))
    other = key(spec=replace(SPEC, options={"outputs": ["b"]}))
    assert first != other and first.canonical != other.canonical


def test_tool_arguments_and_descriptions_are_in_the_key() -> None:
    a = replace(PARAMS, tools=(ToolSpec("sql", "Run SQL."),))
    b = replace(PARAMS, tools=(ToolSpec("sql", "Run a query."),))
    assert key(params=a) != key(params=b)
    call = lambda args: ChatMessage("assistant", "", (ToolCall("c1", "sql", args),))  # noqa: E731
    assert key(messages=[*MESSAGES, call({"sql": "SELECT 1"})]) != key(
        messages=[*MESSAGES, call({"sql": "SELECT 2"})]
    )


def test_keys_headers_and_the_config_name_never_enter_the_key() -> None:
    secret = replace(
        SPEC,
        name="renamed",
        api_key="sk-live-SECRET-1234",
        key_var="OPENAI_API_KEY",
        headers={"X-Api-Key": "hdr-SECRET-5678", "Authorization": "Bearer tok-SECRET"},
    )
    text = json.dumps(key(spec=secret))
    for value in ("sk-live-SECRET-1234", "hdr-SECRET-5678", "tok-SECRET", "X-Api-Key"):
        assert value not in text
    assert "OPENAI_API_KEY" not in text and "renamed" not in text
    assert key(spec=secret) == key()  # none of it changes what the model answers


def test_repeat_scopes_nest_into_the_run_index() -> None:
    assert current_repeat() == ()
    with repeat_scope(3) as outer:
        assert outer == (3,) == current_repeat()
        with repeat_scope(2):
            assert current_repeat() == (3, 2)
        assert current_repeat() == (3,)
    assert current_repeat() == ()


@pytest.mark.parametrize(
    ("completion", "keep", "expected"),
    [
        (Completion("an answer", finish_reason="stop"), False, True),
        (Completion("", finish_reason="stop"), False, False),
        (Completion("   \n", finish_reason="stop"), False, False),
        (Completion("", tool_calls=[ToolCall("c", "sql", {})]), False, True),
        (Completion("", structured={"verdict": "A"}), False, True),
        (Completion("cut off mid", finish_reason="length"), False, False),
        (Completion("cut off mid", finish_reason="MAX_TOKENS"), False, False),
        (Completion("cut off mid", finish_reason="length"), True, True),
        (Completion("", finish_reason="length"), True, False),
    ],
)
def test_empty_and_truncated_answers_are_not_cacheable(
    completion: Completion, keep: bool, expected: bool
) -> None:
    assert cacheable(completion, keep_truncated=keep) is expected


def test_an_answer_survives_the_round_trip() -> None:
    original = Completion(
        "text",
        usage=Usage(12, 3),
        finish_reason="tool_calls",
        tool_calls=[ToolCall("c1", "sql", {"sql": "SELECT 1"})],
        structured={"a": [1, 2]},
        latency=1.5,
        attempts=3,
        model="m",
    )
    data = completion_data(original)
    assert "latency" not in data and "attempts" not in data and "model" not in data
    back = completion_from_data(json.loads(json.dumps(data)))
    assert back is not None
    assert (back.text, back.usage, back.finish_reason, back.tool_calls, back.structured) == (
        "text",
        Usage(12, 3),
        "tool_calls",
        [ToolCall("c1", "sql", {"sql": "SELECT 1"})],
        {"a": [1, 2]},
    )


@pytest.mark.parametrize("data", [{}, {"text": 3}, {"text": "x", "tool_calls": [{"id": 1}]}])
def test_a_damaged_entry_is_a_miss(data: dict[str, Any]) -> None:
    assert completion_from_data(data) is None


def _generate(
    url: str, cache: ResponseCache, *, run: int = 1, messages: list[ChatMessage] = MESSAGES
) -> Completion:
    spec = replace(SPEC, api_url=url, max_retries=0)

    async def go() -> Completion:
        async with ModelPool({"m": spec}, environ={}) as pool:
            return await pool.get("m").generate(messages, PARAMS, run=run, cache=cache)

    return asyncio.run(go())


def test_generate_replays_a_cached_answer_without_a_request() -> None:
    cache = MemoryCache()
    with fake_openai("The total is 42.") as server:
        first = _generate(server.url, cache)
        again = _generate(server.url, cache)
        assert len(server.requests) == 1
    assert not first.cached and first.attempts == 1
    assert again.cached and again.text == "The total is 42." and again.attempts == 0
    assert again.latency == 0.0 and again.model == "m"
    assert again.usage == first.usage


def test_each_run_index_is_its_own_answer() -> None:
    answers = iter(["one", "two", "three"])
    cache = MemoryCache()
    with fake_openai(lambda _r: next(answers)) as server:
        firsts = [_generate(server.url, cache, run=k).text for k in (1, 2, 3)]
        replays = [_generate(server.url, cache, run=k).text for k in (1, 2, 3)]
        assert len(server.requests) == 3
    assert firsts == replays == ["one", "two", "three"]
    assert [k["run"] for k in cache.gets] == [[1], [2], [3]] * 2


def test_a_repeat_scope_reaches_the_key() -> None:
    cache = MemoryCache()
    with fake_openai("x") as server:

        async def go() -> None:
            spec = replace(SPEC, api_url=server.url)
            async with ModelPool({"m": spec}, environ={}) as pool:
                with repeat_scope(4):
                    await pool.get("m").generate(MESSAGES, PARAMS, run=2, cache=cache)

        asyncio.run(go())
    assert cache.gets[0]["run"] == [4, 2]


def test_errors_are_never_cached() -> None:
    cache = MemoryCache()
    with fake_openai("fine") as server:
        server.enqueue((400, openai_error("bad request")))
        with pytest.raises(ProviderError):
            _generate(server.url, cache)
        assert cache.entries == {}
        assert _generate(server.url, cache).text == "fine"  # asked again, then kept
        assert len(server.requests) == 2 and len(cache.entries) == 1


@pytest.mark.parametrize("keep", [False, True])
def test_empty_and_truncated_answers_are_asked_again_unless_kept(keep: bool) -> None:
    cache = MemoryCache(keep_truncated=keep)
    cut = (200, openai_chat_response("The total is", finish_reason="length"))
    empty = (200, openai_chat_response(""))
    with fake_openai("unused") as server:
        server.enqueue(empty, empty, cut, cut)
        assert _generate(server.url, cache).text == ""
        assert _generate(server.url, cache).text == ""  # an empty answer is never kept
        assert _generate(server.url, cache, run=2).truncated
        again = _generate(server.url, cache, run=2)
        made = len(server.requests)
    assert again.truncated
    assert again.cached is keep
    assert made == (3 if keep else 4)


def test_a_cached_answer_is_scrubbed_like_a_fresh_one() -> None:
    from oxyeval.redact import register_secret

    cache = MemoryCache()
    with fake_openai("unused") as server:
        k = key(spec=replace(SPEC, api_url=server.url), base_url=server.url)
        cache.entries[MemoryCache._id(k)] = {"text": "the key is sk-ECHOED-98765 ok"}
        register_secret("sk-ECHOED-98765")
        replay = _generate(server.url, cache)
        assert server.requests == []
    assert replay.cached and "sk-ECHOED-98765" not in replay.text


def test_a_key_is_what_a_json_round_trip_makes_of_it() -> None:
    """Keys are copied without a round trip where they are plain; whatever the form, the
    hashed text is the round trip's (a tuple, a number as a key, an enum, an object)."""
    import enum

    from oxyeval.providers._response_cache import _plain

    class Level(enum.IntEnum):
        HIGH = 2

    class Shown:
        def __str__(self) -> str:
            return "shown"

    values = [
        {"a": (1, 2), 1: "x", "n": None, "f": 1.5, "b": True, "e": Level.HIGH, "o": Shown()},
        {"messages": [{"role": "user", "content": "é \ud800"}], "run": (1, 2)},
        [1, "a", None, [2.5, {"k": (True,)}]],
        {"inf": float("inf"), "neg": -0.0},
        "text",
    ]
    for value in values:
        plain = _plain(value)
        expected = json.loads(json.dumps(value, default=str))
        assert json.dumps(plain, sort_keys=True) == json.dumps(expected, sort_keys=True)
        assert type(plain) is type(expected)
