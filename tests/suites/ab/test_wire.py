"""``provider:`` branches end to end: config.yml's ``providers:`` sends each to its fake
server on 127.0.0.1 (OpenAI chat completions and Anthropic messages, streamed); the
engine asks with the branch's settings, measures what the stream gives, prices it,
ranks it, and stores it scrubbed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from oxyeval.store import open_store
from oxyeval.suites.ab import run_ab_tests
from tests.fakes import FakeServer
from tests.providers.streamfakes import anthropic_events, openai_events, timed

from ...conftest import MakeProject

PROMPT = """\
name: support
model: local
system: You answer support questions.
template: "Question: {{ q }}"
similarity: lexical
branches:
  - name: GPT
    provider: openai
    model: gpt-4o-mini
    temperature: 0.9
    max_tokens: 1000
    top_p: 0.95
    other_params: {seed: 7}
  - name: Claude
    provider: anthropic
    model: claude-haiku-4-5
    control: true
cases:
  - {name: hours, input: {q: "When are you open?"}, expected_output: "We are open 9 to 5"}
"""


@pytest.fixture(scope="module", autouse=True)
def _async_stack_loaded() -> None:
    """httpx's first request imports anyio's backend: paid before any timing."""
    import anyio

    asyncio.run(anyio.sleep(0))


def _project(make_project: MakeProject, openai: FakeServer, anthropic: FakeServer) -> Path:
    config = f"""\
models:
  - {{name: local, vendor: mock, outputs: [unused]}}
providers:
  openai: {{api_url: "{openai.url}", key_var: AB_OPENAI_KEY}}
  anthropic: {{api_url: "{anthropic.url}", key_var: AB_ANTHROPIC_KEY}}
"""
    return make_project(config, {"support.prompt.yml": PROMPT})


def test_provider_branches_are_asked_measured_priced_and_stored(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AB_OPENAI_KEY", "sk-ab-openai-secret-1")
    monkeypatch.setenv("AB_ANTHROPIC_KEY", "sk-ant-ab-secret-2")
    with (
        FakeServer(prefix="/v1").start() as openai,
        FakeServer(prefix="/v1").start() as anthropic,
    ):
        # GPT: slow first token, echoes its key (a model can); Claude: fast, exact.
        openai.enqueue(
            timed(
                openai_events(
                    ["We are open 9 to 5 ", "(key sk-ab-openai-secret-1)"], usage=(20, 10)
                ),
                first=0.30,
                gap=0.05,
            )
        )
        anthropic.enqueue(
            timed(anthropic_events(["We are open ", "9 to 5"], usage=(22, 6)), first=0.05, gap=0.05)
        )
        root = _project(make_project, openai, anthropic)
        run = run_ab_tests(project_dir=str(root), criteria="fastest")
        sent_openai, sent_anthropic = openai.requests[0].body, anthropic.requests[0].body

    # The branch's settings went out in each vendor's form, on one rendered prompt.
    assert sent_openai["model"] == "gpt-4o-mini" and sent_openai["stream"] is True
    assert (sent_openai["temperature"], sent_openai["top_p"], sent_openai["seed"]) == (0.9, 0.95, 7)
    assert sent_openai["max_tokens"] == 1000 or sent_openai.get("max_completion_tokens") == 1000
    assert sent_anthropic["model"] == "claude-haiku-4-5" and sent_anthropic["temperature"] == 0.7
    assert sent_anthropic["max_tokens"] == 2048 and sent_anthropic["system"]
    question = next(m for m in sent_openai["messages"] if m["role"] == "user")["content"]
    assert question == "Question: When are you open?"
    assert sent_anthropic["messages"][-1]["content"] in (
        question,
        [{"type": "text", "text": question}],
    )

    (result,) = run.results
    claude, gpt = result.branches
    assert (claude.branch.name, claude.rank, gpt.rank) == ("Claude", 1, 2)
    assert claude.time_to_first_token is not None and gpt.time_to_first_token is not None
    assert 50 <= claude.time_to_first_token < gpt.time_to_first_token
    assert gpt.time_to_first_token >= 300 and gpt.latency_ms is not None and gpt.latency_ms >= 350
    out = gpt.outcomes[0]
    assert (out.input_tokens, out.output_tokens) == (20, 10)
    assert out.estimated_cost == pytest.approx((20 * 0.15 + 10 * 0.60) / 1e6)
    assert claude.quality_score == 1.0
    assert "sk-ab-openai-secret-1" not in out.output and "***" in out.output

    with open_store(root / ".oxy" / "oxyeval.db") as store:
        (stored,) = store.branches.executions("support::hours@GPT")
        assert stored.time_to_first_token == out.time_to_first_token
        assert stored.output_tokens == 10 and stored.estimated_cost == out.estimated_cost
    database = (root / ".oxy" / "oxyeval.db").read_bytes()
    assert b"sk-ab-openai-secret-1" not in database
    assert json.dumps(result.branches[0].branch.name) == '"Claude"'
    assert result.winner is None  # one iteration: a leader, no winner
