"""An answer cut at the token limit gets advice about the limit that cut it, the same for
a prompt version's case and an agent's consistency test.

Anthropic's API requires ``max_tokens``, so oxyeval sends its default when none is set:
the advice must then say "raise max_tokens", not blame the server's context window.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from oxyeval.providers.anthropic import DEFAULT_MAX_TOKENS
from oxyeval.suites.cases.run import run_cases
from oxyeval.suites.consistency import run_tests

from ..conftest import MakeProject
from ..fakes import FakeServer, anthropic_message_response, fake_anthropic

CONFIG = """\
models:
  - {{name: claude, vendor: anthropic, model_ref: claude-test, api_url: {url}{extra}}}
  - name: judge
    vendor: mock
    rules:
      - {{match: ".", output: "Same.\\nAnswer: A"}}
"""

PROMPT = """\
name: summary
model: claude
template: "Summarise: {{ text }}"
similarity: lexical
cases:
  - name: long
    input: {text: "the report"}
"""

AGENT = """\
model: claude
system_instructions: Answer.
tests:
  - type: consistency
    name: totals
    n: 2
    task_description: What is the total?
"""

ADVICE = re.compile(r"stopped at the token limit \(max_tokens: (\d+) for model 'claude'\)")


def _cut_server() -> FakeServer:
    """An Anthropic server whose every answer stops at the token limit."""
    return fake_anthropic(
        lambda _r: anthropic_message_response("The report says that", stop_reason="max_tokens")
    )


def _advice(
    root: Path, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> tuple[str, str, set[int]]:
    """The token-limit line of the prompt's case and of the agent's test, and the
    max_tokens values the server was sent."""
    cases = run_cases([root / "s.prompt.yml"], environ={})
    (case_line,) = [w for w in cases.warnings if "token limit" in w]
    with caplog.at_level(logging.WARNING, logger="oxyeval"):
        run_tests([root / "a.agent.yml"], environ={}, history=False)
    (agent_line,) = [r.getMessage() for r in caplog.records if "token limit" in r.getMessage()]
    sent = {r.body["max_tokens"] for r in server.requests}
    return case_line, agent_line, sent


def test_anthropic_without_max_tokens_gets_the_same_advice_for_a_case_and_an_agent(
    make_project: MakeProject, caplog: pytest.LogCaptureFixture
) -> None:
    with _cut_server() as server:
        root = make_project(
            CONFIG.format(url=server.url, extra=""), {"s.prompt.yml": PROMPT, "a.agent.yml": AGENT}
        )
        case_line, agent_line, sent = _advice(root, server, caplog)
    assert sent == {DEFAULT_MAX_TOKENS}  # the limit that cut the answers
    for line in (case_line, agent_line):
        match = ADVICE.search(line)
        assert match, line
        assert int(match.group(1)) == DEFAULT_MAX_TOKENS
        assert "raise max_tokens" in line
        assert "server's token limit" not in line and "--n_ctx" not in line
    assert case_line.startswith("prompt 'summary' v1: case 'long' stopped")
    assert re.match(r"test 'totals' \(\S*a\.agent\.yml\): 2 of 2 runs \(1, 2\) stopped", agent_line)


@pytest.mark.parametrize(
    ("extra", "prompt_line", "agent_line", "expected"),
    [
        (", max_tokens: 64", "", "", 64),  # config.yml's model
        ("", "max_tokens: 48\n", "max_tokens: 48\n", 48),  # the prompt's and the agent's own
    ],
)
def test_a_set_max_tokens_is_what_is_sent_and_what_the_advice_names(
    make_project: MakeProject,
    caplog: pytest.LogCaptureFixture,
    extra: str,
    prompt_line: str,
    agent_line: str,
    expected: int,
) -> None:
    prompt = PROMPT.replace("model: claude\n", f"model: claude\n{prompt_line}")
    agent = AGENT.replace("model: claude\n", f"model: claude\n{agent_line}")
    with _cut_server() as server:
        root = make_project(
            CONFIG.format(url=server.url, extra=extra),
            {"s.prompt.yml": prompt, "a.agent.yml": agent},
        )
        lines = _advice(root, server, caplog)
    assert lines[2] == {expected}
    for line in lines[:2]:
        match = ADVICE.search(line)
        assert match and int(match.group(1)) == expected, line
