"""Forms of oxy's project files as its current examples write them: procedures (the name
oxy gives workflows today), a custom-test dataset sharing the ``.test.yml`` suffix, and
``defaults.agent`` in config.yml. Each validates as oxy accepts it and runs where oxyeval
runs that part."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.project import collect_test_files, load_project
from oxyeval.project.files import file_kind

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    outputs: ["fine"]
defaults:
  agent: a.agent.yml
"""
PROCEDURE = """\
tasks:
  - {name: hello, type: formatter, template: "hello from a procedure"}
  - {name: inner, type: workflow, src: sub}
"""
SUB = "tasks:\n  - {name: sub, type: formatter, template: inner ran}\n"
DATASET = """\
- query: "How many apples?"
  response: "325"
  relevant_contexts: ["select 325 as n"]
- query: "Who runs Apple?"
  response: "Tim Cook"
"""
TEST_FILE = """\
target: a.agent.yml
cases:
  - {prompt: "Hi?", expected: "fine"}
"""


@pytest.fixture
def project(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_project(
        CONFIG,
        {
            "a.agent.yml": "model: m\nsystem_instructions: hi\n",
            "procedures/p.procedure.yml": PROCEDURE,
            "procedures/sub.procedure.yml": SUB,
            "data/custom.test.yml": DATASET,
            "a.agent.test.yml": TEST_FILE,
        },
    )
    monkeypatch.chdir(root)
    monkeypatch.setenv("OXY_DB", str(root / "history.db"))
    return root


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("x.procedure.yml", "workflow"),
        ("x.procedure.yaml", "workflow"),
        ("x.automation.yml", "workflow"),
        ("x.workflow.yml", "workflow"),
        ("x.agent.test.yml", "test"),
    ],
)
def test_every_name_oxy_gives_a_workflow_is_one(name: str, kind: str) -> None:
    assert file_kind(Path(name)) == kind


def test_the_project_validates_whole_and_a_procedure_runs(project: Path) -> None:
    runner = CliRunner()
    checked = runner.invoke(app, ["validate", "--format", "json"])
    assert checked.exit_code == 0, checked.output
    files = json.loads(checked.stdout)["files"]
    assert "procedures/p.procedure.yml" in files and "data/custom.test.yml" in files
    ran = runner.invoke(app, ["run", "procedures/p.procedure.yml"])
    assert ran.exit_code == 0, ran.output
    assert "✓ hello formatter" in ran.output and "inner ran" in ran.output


def test_a_dataset_is_checked_as_one(project: Path) -> None:
    (project / "data" / "custom.test.yml").write_text(
        '- query: ""\n- {query: q, response: [1], relevant_contexts: x, colour: red}\n- 3\n'
    )
    result = CliRunner().invoke(app, ["validate", "data/custom.test.yml"])
    assert result.exit_code == 2
    for said in (
        "custom.test.yml:1:3: [0]: a dataset item needs a text query:",
        "custom.test.yml:2:24: [1].response: must be text",
        "[1].relevant_contexts: must be a list of texts",
        "warning: data/custom.test.yml:2:51: [1].colour: unknown key 'colour'",
        "[2]: a dataset item is a mapping",
    ):
        assert said in result.output, result.output


def test_a_folders_test_files_pass_over_datasets_and_one_named_is_refused(
    project: Path,
) -> None:
    found = collect_test_files(load_project(project), [project])
    assert [f.name for f in found] == ["a.agent.test.yml"]
    named = CliRunner().invoke(app, ["test", "data/custom.test.yml"])
    assert named.exit_code == 2
    assert "custom-test dataset" in named.output and "Traceback" not in named.output
