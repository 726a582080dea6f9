"""Measured streaming, as the A/B engine will read it: one ``provider:`` branch per vendor,
each sent (through the environment variables of its SDK) to its own fake server on
127.0.0.1 that speaks the vendor's real streamed wire form with its own scripted time
to first token and total duration, all called at once. What is measured must follow the
script: the order of the times to first token and of the latencies across branches,
each value within a loose window of its script, the token counts from the stream, and
tokens per second as output tokens over the time after the first token."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from oxyeval.providers import (
    ChatMessage,
    Completion,
    GenerateParams,
    ModelPool,
    cost_of,
    price_for,
    vendor_model_spec,
)
from tests.fakes import FakeServer, SleepRecorder

from .streamfakes import anthropic_events, gemini_events, openai_events, timed

HI = [ChatMessage("user", "Say hello")]
PIECES = ["Hello", " from", " the stream"]
#: Above the script, a measured time may run this much late on a loaded 2-core box.
SLACK = 0.5


@dataclass(frozen=True)
class Branch:
    vendor: str
    model: str
    prefix: str  # the fake server's API path
    first: float  # seconds to the first content event
    gap: float  # seconds between content events (two gaps: three pieces)
    usage: tuple[int, int]  # input, output tokens the stream reports

    @property
    def total(self) -> float:
        return self.first + 2 * self.gap


#: The orders differ on purpose: by first token ollama < openai < gemini < anthropic;
#: by latency openai < anthropic < ollama < gemini. Neighbours are >= 100 ms apart.
BRANCHES = [
    Branch("openai", "gpt-4o-mini", "/v1", first=0.12, gap=0.04, usage=(11, 5)),  # 0.20
    Branch("anthropic", "claude-haiku-4-5", "/v1", first=0.40, gap=0.05, usage=(13, 7)),  # 0.50
    Branch("gemini", "gemini-2.5-flash", "/v1beta", first=0.25, gap=0.25, usage=(17, 9)),  # 0.75
    Branch("ollama", "llama3.2", "/v1", first=0.02, gap=0.29, usage=(19, 4)),  # 0.60
]


@pytest.fixture(scope="module", autouse=True)
def _async_stack_loaded() -> None:
    """httpx imports anyio's asyncio backend at a process's first request: a one-time
    cost of the client, paid before any timing (as in test_streams.py)."""
    import anyio

    asyncio.run(anyio.sleep(0))


def _events(branch: Branch) -> list[tuple[bool, bytes]]:
    if branch.vendor in ("openai", "ollama"):
        return openai_events(PIECES, usage=branch.usage)
    if branch.vendor == "anthropic":
        return anthropic_events(PIECES, usage=branch.usage)
    return gemini_events(PIECES, usage=branch.usage)


def _environ(servers: dict[str, FakeServer]) -> dict[str, str]:
    """Each vendor's SDK variables, in each SDK's form, pointing at its fake server."""
    return {
        "OPENAI_BASE_URL": servers["openai"].url,  # includes /v1
        "OPENAI_API_KEY": "sk-timing-openai-01",
        "ANTHROPIC_BASE_URL": servers["anthropic"].base_url,  # without /v1
        "ANTHROPIC_API_KEY": "sk-ant-timing-02",
        "GEMINI_BASE_URL": servers["gemini"].base_url,  # without the API version
        "GEMINI_API_KEY": "AIza-timing-03",
        "OLLAMA_HOST": f"127.0.0.1:{servers['ollama'].port}",  # host:port, no scheme
    }


def _run_all(servers: dict[str, FakeServer]) -> dict[str, Completion]:
    environ = _environ(servers)

    async def go() -> dict[str, Completion]:
        async with ModelPool({}, sleep=SleepRecorder(), environ={}) as pool:
            models = [
                pool.add(
                    vendor_model_spec(
                        b.vendor,
                        b.model,
                        params=GenerateParams(temperature=0.7, max_tokens=64, top_p=1.0),
                        environ=environ,
                        name=f"branch-{b.vendor}",
                    )
                )
                for b in BRANCHES
            ]
            done = await asyncio.gather(*(m.generate(HI, stream=True) for m in models))
        return {b.vendor: c for b, c in zip(BRANCHES, done, strict=True)}

    return asyncio.run(go())


def test_measured_order_and_values_follow_the_script_on_every_wire() -> None:
    servers = {b.vendor: FakeServer(prefix=b.prefix).start() for b in BRANCHES}
    try:
        for b in BRANCHES:
            servers[b.vendor].enqueue(timed(_events(b), first=b.first, gap=b.gap))
        measured = _run_all(servers)
        requests = {vendor: server.requests for vendor, server in servers.items()}
    finally:
        for server in servers.values():
            server.stop()

    # each vendor was asked for its real streamed form
    (openai,) = requests["openai"]
    assert openai.route == "/v1/chat/completions"
    assert openai.body["stream"] is True
    assert openai.body["stream_options"] == {"include_usage": True}
    (anthropic,) = requests["anthropic"]
    assert anthropic.route == "/v1/messages" and anthropic.body["stream"] is True
    (gemini,) = requests["gemini"]
    assert gemini.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    (ollama,) = requests["ollama"]
    assert ollama.route == "/v1/chat/completions"
    assert ollama.body["stream_options"] == {"include_usage": True}

    by_first = sorted(BRANCHES, key=lambda b: b.first)
    by_total = sorted(BRANCHES, key=lambda b: b.total)
    ttft = {v: c.time_to_first_token for v, c in measured.items()}
    assert all(t is not None for t in ttft.values()), ttft
    assert sorted(ttft, key=lambda v: ttft[v]) == [b.vendor for b in by_first], ttft
    latency = {v: c.latency for v, c in measured.items()}
    assert sorted(latency, key=lambda v: latency[v]) == [b.vendor for b in by_total], latency

    for b in BRANCHES:
        c = measured[b.vendor]
        first = c.time_to_first_token
        assert first is not None
        shown = f"{b.vendor}: ttft {first:.3f} latency {c.latency:.3f}"
        assert b.first <= first < b.first + SLACK, shown
        assert b.total <= c.latency < b.total + SLACK, shown
        assert c.latency - first >= 2 * b.gap - 0.01, shown  # generation after the first token
        assert c.text == "".join(PIECES)
        # the token counts are the stream's own (Anthropic's output count from message_delta)
        assert (c.usage.input_tokens, c.usage.output_tokens) == b.usage
        assert c.tokens_per_second == pytest.approx(b.usage[1] / (c.latency - first))
        assert c.cost == cost_of(price_for(b.model), *b.usage)
    assert measured["ollama"].cost is None  # no price known: None, never 0
    assert measured["openai"].cost == pytest.approx((11 * 0.15 + 5 * 0.60) / 1e6)


def test_a_branch_run_twice_measures_each_call() -> None:
    """Iterations: a second call of the same branch is timed on its own (not cached,
    not the first call's figures)."""
    fast, slow = 0.05, 0.35
    with FakeServer(prefix="/v1").start() as server:
        server.enqueue(timed(openai_events(PIECES), first=slow, gap=0.01))
        server.enqueue(timed(openai_events(PIECES), first=fast, gap=0.01))
        environ: dict[str, Any] = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-x-123456"}

        async def go() -> list[Completion]:
            spec = vendor_model_spec("openai", "gpt-4o-mini", environ=environ)
            async with ModelPool({}, sleep=SleepRecorder(), environ={}) as pool:
                model = pool.add(spec)
                return [await model.generate(HI, stream=True) for _ in range(2)]

        first_call, second_call = asyncio.run(go())
    assert first_call.time_to_first_token is not None
    assert second_call.time_to_first_token is not None
    assert slow <= first_call.time_to_first_token < slow + SLACK
    assert fast <= second_call.time_to_first_token < fast + SLACK
    assert second_call.time_to_first_token < first_call.time_to_first_token
