"""The agent keeps every tool call it made with its result (for a later `tool:` check)."""

from __future__ import annotations

import asyncio

from oxyeval.project.agents import load_agent
from oxyeval.project.config import load_project
from oxyeval.providers import Completion, ModelPool
from oxyeval.workflow.agent import AgentRunner
from oxyeval.workflow.sql import Databases

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    model_ref: gpt-4o-mini
    rules:
      - match: '^Which region'
        tool_call: {name: query, arguments: {sql: "SELECT region FROM sales.csv ORDER BY amount DESC"}}
      - match: 'South'
        tool_call: {name: count, arguments: {}}
      - match: '^Error'
        output: South sells the most.
databases:
  - {name: shop, type: duckdb, dataset: data}
"""
AGENT = """\
model: m
system_instructions: Use the tools.
tools:
  - {name: query, type: execute_sql, database: shop}
  - {name: count, type: execute_sql, database: shop}
"""


def test_a_two_tool_run_keeps_both_calls_with_their_results(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {"a.agent.yml": AGENT, "data/sales.csv": "region,amount\nNorth,15\nSouth,25\n"},
    )
    project = load_project(root)
    agent = load_agent(project, root / "a.agent.yml")

    async def go() -> Completion:
        async with ModelPool(project.models) as pool:
            sql = Databases(project.databases, project.root)
            try:
                return await AgentRunner(agent, pool, project.root, sql).ask("Which region?")
            finally:
                sql.close()

    answer = asyncio.run(go())
    assert answer.text == "South sells the most."
    first, second = answer.tool_trace
    assert first.name == "query" and first.arguments["sql"].startswith("SELECT region")
    assert first.error is None and first.output is not None and "South" in first.output
    assert second.name == "count" and second.arguments == {}
    assert second.output is None and "missing argument 'sql'" in (second.error or "")
    assert [c.name for c in answer.tool_calls] == ["query", "count"]
    # three model calls, each priced (gpt-4o-mini): the answer's cost is their sum
    assert answer.cost is not None and answer.cost > 0
