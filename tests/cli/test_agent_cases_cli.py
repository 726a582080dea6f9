"""`oxy cases run`, `oxy validate` and `oxy run --question` on an agent whose system
prompt needs its variable defaults: all three accept it and send the same prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..fakes import fake_openai
from ..suites.test_agent_cases import AGENT, CASES, config, echo_system


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_cases_run_validate_and_run_agree(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OXY_DB", raising=False)
    with fake_openai(echo_system) as server:
        root: Path = make_project(config(server), {"a.agent.yml": AGENT, "a.cases.yml": CASES})
        monkeypatch.chdir(root)
        checked = invoke("validate")
        assert checked.exit_code == 0, checked.stderr
        assert "0 error(s)" in checked.stdout + checked.stderr
        ran = invoke("cases", "run", "a.cases.yml", "--format", "json")
        assert ran.exit_code == 0, ran.stderr
        doc = json.loads(ran.stdout)
        assert doc["summary"]["passed"] == 2 and doc["summary"]["exitCode"] == 0
        outputs = sorted(e["actualOutput"] for e in doc["executions"])
        assert outputs == [
            "You work for Acme in Sales. | How many?",
            "You work for Beta in Sales. | And now?",
        ]
        asked = invoke("run", "a.agent.yml", "--question", "How many?")
        assert asked.exit_code == 0, asked.stderr
        assert asked.stdout.strip() == "You work for Acme in Sales. | How many?"
