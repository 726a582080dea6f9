"""What every warehouse's tests run: a project on one database of it, written into
``tmp_path``, and the same checks for each engine (a query task, an agent's SQL tool with
its dialect and DDL, a refused write, a timeout, a refused credential with the secret
hidden)."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.project import load_agent, load_project
from oxyeval.workflow.context import RunContext

__all__ = ["agent_answer", "ask_agent", "oxy_run", "write_project"]

MODELS = """\
models:
  - name: m
    vendor: mock
    rules:
      - match: "\\\\| (?P<n>[0-9]+) \\\\|"
        output: "There are \\\\g<n> orders."
      - match: "How many"
        tool_call: {name: q, arguments: {sql: "SELECT count(*) AS n FROM %(table)s"}}
"""

AGENT = """\
model: m
system_instructions: |
  Dialect: {{ databases.wh.dialect }}
  {{ databases.wh.datasets.%(dataset)s.ddl }}
tools:
  - name: q
    type: execute_sql
    database: wh
"""


def write_project(
    root: Path, database: str, *, table: str, dataset: str, files: dict[str, str] | None = None
) -> Path:
    """config.yml with a mock model that calls the tool ``q`` and answers with the count
    it read, ``database`` (YAML of one ``databases:`` entry named ``wh``), and an agent
    ``a.agent.yml`` whose system prompt reads the dialect and ``dataset``'s DDL."""
    entry = textwrap.indent(textwrap.dedent(database).strip(), "    ")
    entry = "  - " + entry[4:]
    config = MODELS % {"table": table} + "databases:\n" + entry + "\n"
    (root / "config.yml").write_text(config, encoding="utf-8")
    (root / "a.agent.yml").write_text(AGENT % {"dataset": dataset}, encoding="utf-8")
    for name, text in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def ask_agent(root: Path, question: str = "How many orders?") -> tuple[str, str]:
    """The agent's answer and its rendered system prompt."""
    project = load_project(root)
    agent = load_agent(project, root / "a.agent.yml")

    async def go() -> tuple[str, str]:
        async with RunContext(project) as context:
            runner = context.agent(agent)
            answer = await runner.ask(question)
            return answer.text, runner.messages(question)[0].content

    return asyncio.run(go())


def agent_answer(root: Path) -> str:
    return ask_agent(root)[0]


def oxy_run(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    """``oxy run ARGS`` in ``root``: its exit code and everything it printed."""
    monkeypatch.chdir(root)
    monkeypatch.setenv("OXY_DB", str(root / "history.db"))
    result = CliRunner().invoke(app, ["run", *args], env={"COLUMNS": "200", **_no_color()})
    return result.exit_code, result.output


def _no_color() -> dict[str, str]:
    return {"NO_COLOR": "1"} if "NO_COLOR" not in os.environ else {}
