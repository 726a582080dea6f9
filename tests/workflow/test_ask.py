"""``ask_agent``: one question to one agent, as ``oxy run FILE.agent.yml --question`` asks it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oxyeval.errors import ConfigError, LoadError, ProviderError
from oxyeval.workflow import AgentAnswer, ask_agent

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    rules:
      - {match: "15", output: "North sold 15."}  # reacts to the tool's result
      - {match: "North", tool_call: {name: query, arguments: {sql: "SELECT SUM(amount) AS s FROM sales.csv WHERE region = 'North'"}}}
      - {match: ".", output: "Ask me about a region."}
  - name: slow
    vendor: mock
    latency_ms: 600000
    outputs: ["too late"]
  - name: down
    vendor: mock
    rules:
      - {match: ".", error: "backend down"}
databases:
  - {name: shop, type: duckdb, dataset: data}
"""
FILES = {
    "data/sales.csv": "region,amount\nNorth,15\nSouth,25\n",
    "agents/sales.agent.yml": """\
        model: m
        system_instructions: Answer from the database.
        tools:
          - {name: query, type: execute_sql, database: shop}
        """,
    "slow.agent.yml": "model: slow\nsystem_instructions: x\n",
    "down.agent.yml": "model: down\nsystem_instructions: x\n",
}


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(CONFIG, FILES)
    monkeypatch.chdir(project)  # files display relative to the working folder
    return project


def test_the_agent_answers_with_its_tools(root: Path) -> None:
    answer = asyncio.run(ask_agent(root / "agents" / "sales.agent.yml", "How did North do?"))
    assert answer.status == "succeeded" and not answer.interrupted
    assert answer.output == "North sold 15."
    assert answer.agent == "agents/sales.agent.yml"  # as the project displays it
    (call,) = answer.tool_calls
    assert call["name"] == "query" and "North" in call["arguments"]["sql"]
    assert isinstance(answer.duration_s, float) and answer.duration_s >= 0
    doc = answer.to_dict()
    assert doc["output"] == "North sold 15." and doc["tool_calls"] == answer.tool_calls
    assert set(doc["usage"]) == {"input_tokens", "output_tokens"}


def test_into_is_the_answer_returned(root: Path) -> None:
    into = AgentAnswer()
    answer = asyncio.run(ask_agent(str(root / "agents" / "sales.agent.yml"), "hi", into=into))
    assert answer is into and into.output == "Ask me about a region."


def test_a_cancelled_ask_keeps_the_same_document_marked_interrupted(root: Path) -> None:
    answered = asyncio.run(ask_agent(root / "agents" / "sales.agent.yml", "hi")).to_dict()
    into = AgentAnswer()

    async def go() -> None:
        task = asyncio.create_task(ask_agent(root / "slow.agent.yml", "hi", into=into))
        for _ in range(6000):  # until loaded (the model call is then under way), or a minute
            if into.agent == "slow.agent.yml" or task.done():
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert into.status == "interrupted" and into.interrupted
    assert into.output is None and into.tool_calls == []
    assert isinstance(into.duration_s, float)
    assert set(into.to_dict()) == set(answered)


def test_project_dir_and_environ_are_used(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (root / "keyed").mkdir()
    (root / "keyed" / "config.yml").write_text(
        "models:\n  - {name: k, vendor: openai, model_ref: x, key_var: ASK_TEST_KEY}\n",
        encoding="utf-8",
    )
    (root / "keyed" / "k.agent.yml").write_text("model: k\nsystem_instructions: x\n", "utf-8")
    monkeypatch.setenv("ASK_TEST_KEY", "set-in-the-process")
    # ``environ`` replaces the process environment: the key is missing there
    with pytest.raises((ConfigError, LoadError), match="ASK_TEST_KEY"):
        asyncio.run(ask_agent(root / "keyed" / "k.agent.yml", "hi", environ={}))
    # --project: the agent file is checked against that project's models
    with pytest.raises(LoadError, match="'m'"):
        asyncio.run(
            ask_agent(root / "agents" / "sales.agent.yml", "hi", project_dir=str(root / "keyed"))
        )


def test_failures_raise_with_their_exit_code(root: Path) -> None:
    with pytest.raises(ProviderError, match="backend down") as failed:
        asyncio.run(ask_agent(root / "down.agent.yml", "hi"))
    assert failed.value.exit_code == 3
    (root / "bad.agent.yml").write_text("model: m\nsystem_instruction: typo\n", "utf-8")
    with pytest.raises(LoadError, match="system_instruction") as bad:
        asyncio.run(ask_agent(root / "bad.agent.yml", "hi"))
    assert bad.value.exit_code == 2
