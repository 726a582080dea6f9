"""One mistake repeated a thousand times: the terminal shows the first screenful and
counts the rest, JSON lists up to a bound and counts the rest, as compilers do."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.errors import LISTED_DIAGNOSTICS, SHOWN_DIAGNOSTICS

from ..conftest import MakeProject

TESTS = 600  # two errors each: past both bounds
AGENT = "model: agent_model\nsystem_instructions: hi\ntests:\n" + "".join(
    f"  - {{type: consistency, name: t{i}, n: 0, task_description: q, bogus: 1}}\n"
    for i in range(TESTS)
)


def test_a_thousand_errors_are_shown_as_a_screenful_and_counted(
    make_project: MakeProject,
) -> None:
    root = make_project(files={"a.agent.yml": AGENT})
    agent = str(root / "a.agent.yml")
    total = 2 * TESTS
    text = CliRunner().invoke(app, ["validate", agent])
    assert text.exit_code == 2
    assert text.stderr.count("error: ") == SHOWN_DIAGNOSTICS
    assert f"... {total - SHOWN_DIAGNOSTICS} more error(s) not shown" in text.stderr
    assert f"{total} error(s), 0 warning(s)" in text.stdout
    doc = json.loads(CliRunner().invoke(app, ["validate", agent, "--format", "json"]).stdout)
    assert len(doc["errors"]) == LISTED_DIAGNOSTICS + 1
    assert doc["errors"][-1]["message"] == f"{total - LISTED_DIAGNOSTICS} more error(s) not listed"
    ran = CliRunner().invoke(app, ["test", agent, "--format", "json"])
    assert ran.exit_code == 2
    assert ran.stderr.count("error: ") == SHOWN_DIAGNOSTICS
    assert f"\n{total} error(s) in " in ran.stderr
    lines = json.loads(ran.stdout)["error"].splitlines()
    assert len(lines) == LISTED_DIAGNOSTICS + 1
    assert lines[-1].endswith(f"{total - LISTED_DIAGNOSTICS} more error(s) not listed")
