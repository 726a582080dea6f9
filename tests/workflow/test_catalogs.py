"""oxy's ``databases.<name>`` context read at run time: DuckDB's DDL introspected from its
dataset files and database file (once per run), a warehouse's dialect with its DDL
refused where a template reads it (a type without a catalog)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import duckdb
import pytest

from oxyeval.errors import LoadError
from oxyeval.project import load_agent, load_project
from oxyeval.workflow.context import RunContext

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    outputs: ["There are 2 orders."]
databases:
  - name: local
    type: duckdb
    dataset: data
  - name: wh
    type: motherduck
    token_var: MD_TOKEN
    schemas: {sales: [orders]}
"""

DUCKDB_AGENT = """\
model: m
system_instructions: |
  Dialect: {{ databases.local.dialect }}
  {% with dataset = databases.local.datasets.duckdb %}
  Dataset: {{ dataset.dataset }}
  {{ dataset.ddl }}
  {% endwith %}
  Asked: {{ tools.prompt }}
tools:
  - name: q
    type: execute_sql
    database: local
"""

FILES = {
    "data/orders.csv": "id,region,amount\n1,North,10.5\n2,South,3\n",
    # A column name that looks like a template: DDL is data, never rendered.
    "data/odd.csv": "{{ 7 * 7 }}\nx\n",
    "a.agent.yml": DUCKDB_AGENT,
}


def _ask(root: Path, agent_file: str, question: str) -> tuple[str, str, RunContext]:
    project = load_project(root)
    agent = load_agent(project, root / agent_file)

    async def go() -> tuple[str, str, RunContext]:
        async with RunContext(project) as context:
            runner = context.agent(agent)
            answer = await runner.ask(question)
            return answer.text, runner.messages(question)[0].content, context

    return asyncio.run(go())


def test_an_agent_renders_duckdbs_dialect_and_ddl_and_runs(make_project: MakeProject) -> None:
    root = make_project(CONFIG, FILES)
    answer, system, _ = _ask(root, "a.agent.yml", "How many orders?")
    assert answer == "There are 2 orders."
    assert "Dialect: duckdb" in system and "Dataset: duckdb" in system
    assert (
        "-- orders.csv\nCREATE TABLE 'orders.csv' "
        '("id" BIGINT, "region" VARCHAR, "amount" DOUBLE);' in system
    )
    assert "CREATE TABLE 'odd.csv' (\"{{ 7 * 7 }}\" VARCHAR);" in system
    assert "Asked: How many orders?" in system


def test_a_database_file_describes_its_tables_once_per_run(make_project: MakeProject) -> None:
    config = CONFIG.replace("dataset: data\n", "dataset: data\n    path: data/shop.duckdb\n", 1)
    root = make_project(config, {"data/orders.csv": "id\n1\n"})
    with duckdb.connect(str(root / "data" / "shop.duckdb")) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER, name VARCHAR)")
    project = load_project(root)
    context = RunContext(project)
    try:
        info = context.databases.describe("local")
        assert info is context.databases.describe("local")  # read once per run
        ddl = info["datasets"]["duckdb"]["ddl"]
        assert "CREATE TABLE customers(id INTEGER, " in ddl and info["tables"] == [ddl]
    finally:
        asyncio.run(context.aclose())


def test_a_warehouse_gives_its_dialect_and_refuses_its_ddl_at_run_time(
    make_project: MakeProject,
) -> None:
    agent = (
        "model: m\nsystem_instructions: |\n  {{ databases.wh.dialect }}\n"
        "  {{ databases.wh.datasets.sales.ddl }}\n"
    )
    root = make_project(CONFIG, {**FILES, "w.agent.yml": agent})
    with pytest.raises(LoadError) as info:
        _ask(root, "w.agent.yml", "Q?")
    [problem] = info.value.diagnostics
    assert problem.line == 4 and "DDL not available for motherduck yet" in problem.message
