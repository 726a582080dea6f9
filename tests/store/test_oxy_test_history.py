"""`oxy test` and `oxy run` recording into a history on SQLite and on a real PostgreSQL
server (the full store there; on SQLite the first run creates the file, later ones use the
lean writer)."""

from __future__ import annotations

import asyncio
import json

from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.store import Location, open_store
from oxyeval.suites.consistency import run_tests
from oxyeval.suites.workflows import run_workflow

from ..conftest import MOCK_CONFIG, MakeProject

AGENT = """\
model: agent_model
system_instructions: Be brief.
tests:
  - {type: consistency, name: totals, n: 3, task_description: "total?", model_ref: judge}
"""
WORKFLOW = "tasks:\n  - {name: ask, type: agent, agent_ref: a.agent.yml, prompt: q}\n"


def _db(location: Location) -> str:
    return str(location.path) if location.path is not None else location.url


def test_results_previous_and_history_on_both_backends(
    make_project: MakeProject, location: Location
) -> None:
    root = make_project(MOCK_CONFIG, {"a.agent.yml": AGENT, "w.workflow.yml": WORKFLOW})
    db = _db(location)
    first = run_tests([root / "a.agent.yml"], db=db)
    second = run_tests([root / "a.agent.yml"], db=db)
    assert first.history[0].error is None and second.history[0].error is None
    assert first.tests[0].previous is None
    prev = second.tests[0].previous
    assert prev is not None and prev.accuracy == 1.0 and prev.run_id == first.history[0].run_id
    asyncio.run(run_workflow(root / "w.workflow.yml", db=db))
    with open_store(location, read_only=True) as store:
        rows = store.tests.history("a.agent.yml", "totals")
        workflows = store.workflows.history("w.workflow.yml")
    assert [r.run_id for r in rows] == [second.history[0].run_id, first.history[0].run_id]
    assert rows[0].n == 3 and rows[0].status == "scored"
    assert [w.run.status for w in workflows] == ["completed"]
    result = CliRunner().invoke(app, ["history", "--db", db, "--json", "--project", str(root)])
    assert result.exit_code == 0, result.stderr
    kinds = [r["kind"] for r in json.loads(result.stdout)["runs"]]
    assert kinds == ["workflow", "consistency", "consistency"]
