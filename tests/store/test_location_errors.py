"""Bad history locations: a clear bad-input error, and a password never shown."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MOCK_CONFIG, MakeProject

AGENT = (
    "model: agent_model\nsystem_instructions: hi\ntests:\n"
    "  - {type: consistency, n: 2, task_description: q, model_ref: judge}\n"
)


def test_a_password_written_into_history_url_is_never_printed(
    make_project: MakeProject, tmp_path
) -> None:
    config = MOCK_CONFIG + "history:\n  url: postgresql://team:hunter2pw@127.0.0.1:1/db\n"
    root = make_project(config, {"a.agent.yml": AGENT})
    junit = tmp_path / "j.xml"
    runner = CliRunner()
    pretty = runner.invoke(app, ["test", str(root / "a.agent.yml"), "--junit", str(junit)])
    as_json = runner.invoke(app, ["test", str(root / "a.agent.yml"), "--format", "json"])
    history = runner.invoke(app, ["history", "--project", str(root)])
    for result in (pretty, as_json, history):
        assert result.exit_code == 2, result.output
        assert "hunter2pw" not in result.output
        assert "history.url contains a password" in result.output
    assert json.loads(as_json.stdout)["exitCode"] == 2
    assert "hunter2pw" not in junit.read_text("utf-8")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("postgresql://u:secretpw1@[::1/db", "Invalid IPv6 URL"),
        ("postgresql://u@h:99999/db", "the port 99999 is out of range: a port is 1-65535"),
    ],
)
def test_a_malformed_url_is_bad_input(make_project: MakeProject, url: str, why: str) -> None:
    root = make_project()
    result = CliRunner().invoke(app, ["history", "--project", str(root), "--db", url])
    assert result.exit_code == 2, result.output
    assert why in result.output and "internal error" not in result.output
    assert "secretpw1" not in result.output
