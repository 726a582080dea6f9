"""A query on a database oxyeval cannot run (a type it has no engine for, a read-only DuckDB
file a deployment creates) is an error of the command that would run it (exit 2, at the
line that names the database, before any task runs or the model is asked), never of
``oxy validate``."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    outputs: ["There are 2 orders."]
databases:
  - {name: local, type: duckdb, dataset: data}
  - %s
"""
#: oxy's database entries, each valid as oxy reads it, none queryable here; and what the
#: command that would query it says.
UNQUERYABLE = {
    "motherduck": (
        "{name: wh, type: motherduck, token_var: MD_TOKEN, database: sales}",
        "database 'wh' is of type motherduck, which oxyeval cannot query yet",
    ),
    "airhouse": (
        "{name: wh, type: airhouse, host: h, port: '5432', user: u, password_var: AH_PW}",
        "database 'wh' is of type airhouse, which oxyeval cannot query yet",
    ),
    "airhouse_managed": (
        "{name: wh, type: airhouse_managed}",
        "database 'wh' is of type airhouse_managed, which oxyeval cannot query yet",
    ),
    "absent duckdb file": (
        "{name: wh, type: duckdb, path: db.duckdb}",
        "database 'wh': db.duckdb does not exist",
    ),
}
AGENT = (
    "model: m\nsystem_instructions: hi\ntools:\n  - {name: q, type: execute_sql, database: wh}\n"
)
WORKFLOW = """\
tasks:
  - {name: first, type: agent, agent_ref: ok.agent.yml, prompt: hi}
  - {name: q, type: execute_sql, database: wh, sql_query: SELECT 1}
"""


@pytest.mark.parametrize("kind", list(UNQUERYABLE))
def test_a_query_on_a_warehouse_validates_and_its_run_stops_with_exit_2(
    kind: str, make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry, said = UNQUERYABLE[kind]
    files = {
        "data/orders.csv": "id\n1\n",
        "t.agent.yml": AGENT,
        "ok.agent.yml": "model: m\nsystem_instructions: hi\n",
        "w.workflow.yml": WORKFLOW,
    }
    root = make_project(CONFIG % entry, files)
    monkeypatch.chdir(root)
    monkeypatch.setenv("OXY_DB", str(root / "history.db"))
    runner = CliRunner()
    checked = runner.invoke(app, ["validate", "t.agent.yml", "w.workflow.yml"])
    assert checked.exit_code == 0, checked.output
    for args, where in (
        (["run", "t.agent.yml", "--question", "Q?"], "t.agent.yml:4:44: tools[0].database"),
        (["run", "w.workflow.yml"], "w.workflow.yml:3:"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert where in result.output, result.output
        assert said in result.output
        # Before the model is asked, and before the workflow's first task runs.
        assert "Traceback" not in result.output and "✓ first" not in result.output
