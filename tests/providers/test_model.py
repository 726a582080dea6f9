"""Model: retries, backoff, Retry-After and the per-model concurrency limit.

Delays are recorded by an injected ``sleep`` (never waited for), and concurrency
is asserted from recorded events, so nothing here depends on wall-clock speed.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from oxyeval.errors import ConfigError, ProviderError
from oxyeval.providers import (
    ChatMessage,
    Completion,
    GenerateParams,
    Model,
    ModelAPI,
    ModelPool,
    ModelSpec,
    RetryPolicy,
)
from oxyeval.providers._http import parse_retry_after, post_json
from tests.fakes import SleepRecorder, fake_openai, openai_error, run_model

HI = [ChatMessage("user", "hi")]


class ScriptedAPI(ModelAPI):
    """Raises or returns the scripted outcomes in order; records every attempt."""

    vendor = "scripted"

    def __init__(self, spec: ModelSpec, outcomes: list[ProviderError | str]) -> None:
        super().__init__(spec, None)
        self.outcomes = list(outcomes)
        self.calls: list[GenerateParams] = []

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        self.calls.append(params)
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        if isinstance(outcome, ProviderError):
            raise outcome
        return Completion(text=outcome)


def retryable(status: int = 503, retry_after: float | None = None) -> ProviderError:
    return ProviderError(
        f"HTTP {status}", model="m", status=status, retryable=True, retry_after=retry_after
    )


def model_with(
    outcomes: list[ProviderError | str], **spec_fields: object
) -> tuple[Model, ScriptedAPI, SleepRecorder]:
    fields: dict[str, object] = {"name": "m", "vendor": "scripted", "max_retries": 3}
    fields.update(spec_fields)
    api = ScriptedAPI(ModelSpec(**fields), outcomes)  # type: ignore[arg-type]
    sleep = SleepRecorder()
    return Model(api, retry=RetryPolicy(rng=random.Random(0)), sleep=sleep), api, sleep


class EdgeRandom(random.Random):
    """Always picks the low (or high) end of ``uniform`` to pin the jitter range."""

    def __init__(self, high: bool) -> None:
        super().__init__(0)
        self.high = high

    def uniform(self, a: float, b: float) -> float:
        return b if self.high else a


# ------------------------------------------------------------------------------ RetryPolicy


def test_backoff_doubles_up_to_the_cap_with_equal_jitter() -> None:
    high = RetryPolicy(base=1.0, cap=30.0, rng=EdgeRandom(high=True))
    low = RetryPolicy(base=1.0, cap=30.0, rng=EdgeRandom(high=False))
    assert [high.delay(n, None) for n in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert [low.delay(n, None) for n in range(7)] == [0.5, 1, 2, 4, 8, 15, 15]


def test_backoff_with_real_jitter_stays_inside_its_band() -> None:
    policy = RetryPolicy(base=0.5, cap=4.0, rng=random.Random(42))
    for attempt in range(8):
        ceiling = min(4.0, 0.5 * 2**attempt)
        for _ in range(50):
            assert ceiling / 2 <= policy.delay(attempt, None) <= ceiling


def test_retry_after_wins_over_the_curve_and_is_never_shortened() -> None:
    policy = RetryPolicy(base=1.0, cap=2.0, rng=random.Random(1))
    for _ in range(50):
        assert 10.0 <= policy.delay(0, 10.0) <= 11.0
        assert 2.0 <= policy.delay(5, 2.0) <= 2.2
    assert RetryPolicy(rng=EdgeRandom(high=True)).delay(0, 0.0) == 0.0


# ------------------------------------------------------------------------------ Retry-After parsing


def test_retry_after_seconds_and_ms() -> None:
    assert parse_retry_after(httpx.Headers({"Retry-After": "2"})) == 2.0
    assert parse_retry_after(httpx.Headers({"Retry-After": "1.5"})) == 1.5
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    # OpenAI sends both; the precise one wins.
    both = httpx.Headers({"retry-after-ms": "1500", "Retry-After": "2"})
    assert parse_retry_after(both) == 1.5
    assert parse_retry_after(httpx.Headers({"Retry-After": "-5"})) == 0.0
    assert parse_retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None


def test_retry_after_http_date() -> None:
    later = datetime.now(timezone.utc) + timedelta(seconds=30)
    header = email.utils.format_datetime(later, usegmt=True)
    delay = parse_retry_after(httpx.Headers({"Retry-After": header}))
    assert delay is not None and 27.0 <= delay <= 30.0
    past = email.utils.format_datetime(later - timedelta(hours=1), usegmt=True)
    assert parse_retry_after(httpx.Headers({"Retry-After": past})) == 0.0


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="needs time.tzset")
def test_retry_after_http_date_with_minus_zero_zone_is_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    # "-0000" parses to a naive datetime; on a machine not in UTC it must still mean UTC.
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        later = datetime.now(timezone.utc) + timedelta(seconds=60)
        header = later.strftime("%a, %d %b %Y %H:%M:%S -0000")
        delay = parse_retry_after(httpx.Headers({"Retry-After": header}))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert delay is not None and 57.0 <= delay <= 60.0


# ------------------------------------------------------------------------------ Model retries


def test_retryable_errors_are_retried_then_succeed() -> None:
    model, api, sleep = model_with([retryable(), retryable(502), "done"])
    result = asyncio.run(model.generate(HI))
    assert result.text == "done"
    assert result.attempts == 3
    assert result.model == "m"
    assert len(api.calls) == 3
    assert len(sleep.delays) == 2
    assert 0.5 <= sleep.delays[0] <= 1.0  # attempt 0 band
    assert 1.0 <= sleep.delays[1] <= 2.0  # attempt 1 band


def test_retry_after_is_honoured_by_model() -> None:
    model, _, sleep = model_with([retryable(429, retry_after=2.0), "done"])
    result = asyncio.run(model.generate(HI))
    assert result.attempts == 2
    assert sleep.delays[0] >= 2.0


def test_non_retryable_error_is_raised_at_once() -> None:
    error = ProviderError("HTTP 400 bad request", model="m", status=400)
    model, api, sleep = model_with([error, "never"])
    with pytest.raises(ProviderError) as info:
        asyncio.run(model.generate(HI))
    assert info.value is error
    assert len(api.calls) == 1
    assert sleep.delays == []


def test_gives_up_after_max_retries_plus_one_attempts() -> None:
    model, api, sleep = model_with([retryable()] * 10, max_retries=3)
    with pytest.raises(ProviderError) as info:
        asyncio.run(model.generate(HI))
    assert len(api.calls) == 4
    assert len(sleep.delays) == 3
    assert "gave up after 4 attempts" in str(info.value)
    assert info.value.retryable is False
    assert info.value.status == 503


def test_zero_retries_means_one_attempt() -> None:
    model, api, sleep = model_with([retryable()], max_retries=0)
    with pytest.raises(ProviderError, match=r"gave up after 1 attempt\)"):
        asyncio.run(model.generate(HI))
    assert len(api.calls) == 1
    assert sleep.delays == []


def test_retry_after_beyond_the_limit_fails_instead_of_waiting() -> None:
    model, api, sleep = model_with([retryable(429, retry_after=3600.0), "never"])
    with pytest.raises(ProviderError) as info:
        asyncio.run(model.generate(HI))
    assert len(api.calls) == 1
    assert sleep.delays == []
    assert "3600" in str(info.value)


def test_call_params_are_layered_over_model_defaults() -> None:
    defaults = GenerateParams(temperature=0.9, max_tokens=100)
    model, api, _ = model_with(["ok"], params=defaults)
    asyncio.run(model.generate(HI, GenerateParams(temperature=0.0)))
    assert api.calls[0] == GenerateParams(temperature=0.0, max_tokens=100)


# ------------------------------------------------------------------------------ concurrency


class TrackingAPI(ModelAPI):
    """Records start/end events; yields to the loop so overlapping calls really overlap."""

    vendor = "tracking"

    def __init__(self, spec: ModelSpec, fail_first: set[str] | None = None) -> None:
        super().__init__(spec, None)
        self.events: list[tuple[str, str]] = []
        self.fail_first = set(fail_first or ())

    async def generate(self, messages: list[ChatMessage], params: GenerateParams) -> Completion:
        tag = messages[0].content
        self.events.append(("start", tag))
        for _ in range(5):
            await asyncio.sleep(0)
        self.events.append(("end", tag))
        if tag in self.fail_first:
            self.fail_first.discard(tag)
            raise retryable()
        return Completion(text=tag)


def max_in_flight(events: list[tuple[str, str]]) -> int:
    current = peak = 0
    for kind, _ in events:
        current += 1 if kind == "start" else -1
        peak = max(peak, current)
    return peak


def test_semaphore_limits_in_flight_calls_to_concurrency() -> None:
    api = TrackingAPI(ModelSpec(name="m", vendor="tracking", concurrency=3))
    model = Model(api, sleep=SleepRecorder())

    async def go() -> list[str]:
        calls = [model.generate([ChatMessage("user", str(i))]) for i in range(12)]
        return [c.text for c in await asyncio.gather(*calls)]

    assert asyncio.run(go()) == [str(i) for i in range(12)]
    assert len(api.events) == 24
    assert max_in_flight(api.events) == 3


def test_backoff_sleep_does_not_hold_a_concurrency_slot() -> None:
    api = TrackingAPI(ModelSpec(name="m", vendor="tracking", concurrency=1), fail_first={"a"})

    async def slow_sleep(seconds: float) -> None:
        for _ in range(20):  # long enough for "b" to run entirely
            await asyncio.sleep(0)

    model = Model(api, retry=RetryPolicy(rng=random.Random(0)), sleep=slow_sleep)

    async def go() -> None:
        await asyncio.gather(
            model.generate([ChatMessage("user", "a")]), model.generate([ChatMessage("user", "b")])
        )

    asyncio.run(go())
    assert max_in_flight(api.events) == 1
    assert api.events == [
        ("start", "a"),
        ("end", "a"),  # fails, backs off without the slot...
        ("start", "b"),  # ...so b runs meanwhile
        ("end", "b"),
        ("start", "a"),
        ("end", "a"),
    ]


# ------------------------------------------------------------------------------ over HTTP


def spec_for(url: str, **overrides: object) -> ModelSpec:
    fields: dict[str, object] = {
        "name": "gpt",
        "vendor": "openai",
        "model_ref": "gpt-test",
        "api_url": url,
        "timeout": 5.0,
        "max_retries": 2,
    }
    fields.update(overrides)
    return ModelSpec(**fields)  # type: ignore[arg-type]


def test_http_date_retry_after_from_a_server() -> None:
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    sleep = SleepRecorder()
    with fake_openai("ok") as server:
        server.enqueue((503, openai_error("busy"), {"Retry-After": when}))
        result = run_model(spec_for(server.url), HI, sleep=sleep)
    assert result.attempts == 2
    assert 3.0 <= sleep.delays[0] <= 6.0


def test_retry_after_ms_from_a_server() -> None:
    sleep = SleepRecorder()
    with fake_openai("ok") as server:
        server.enqueue((429, openai_error("slow down"), {"retry-after-ms": "1500"}))
        result = run_model(spec_for(server.url), HI, sleep=sleep)
    assert result.attempts == 2
    assert 1.5 <= sleep.delays[0] <= 1.65


@pytest.mark.parametrize(
    ("status", "retryable_expected"),
    [
        (400, False),
        (404, False),
        (408, True),
        (409, True),
        (422, False),
        (429, True),
        (500, True),
        (503, True),
        (529, True),
        (599, True),
    ],
)
def test_status_classification(status: int, retryable_expected: bool) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json={"error": {"message": "nope"}})

    spec = ModelSpec(name="m", vendor="openai", model_ref="x", api_url="http://unit.test/v1")

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            await post_json(client, spec, "http://unit.test/v1/chat/completions", {}, {})

    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    assert info.value.retryable is retryable_expected
    assert info.value.status == status
    assert f"HTTP {status}" in str(info.value)


def test_connection_refused_is_retryable_and_says_what_to_check() -> None:
    with fake_openai() as server:
        url = server.url
    # The server is stopped now: nothing listens on that port.
    with pytest.raises(ProviderError) as info:
        run_model(spec_for(url, max_retries=1), HI)
    message = str(info.value)
    assert "could not reach" in message
    assert "api_url" in message
    assert "gave up after 2 attempts" in message


def test_missing_key_is_a_config_error_naming_the_variable() -> None:
    spec = ModelSpec(name="gpt", vendor="openai", model_ref="x", key_var="MY_MISSING_KEY")

    async def go() -> None:
        async with ModelPool({"gpt": spec}, environ={}) as pool:
            pool.get("gpt")

    with pytest.raises(ConfigError, match="MY_MISSING_KEY"):
        asyncio.run(go())
