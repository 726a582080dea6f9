"""An agent task's `retry` (an oxy key oxyeval does not use) loads with a warning that
points at the model's max_retries, and keeps its 0-20 range check."""

from __future__ import annotations

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.config import load_project
from oxyeval.suites.validate import validate_paths
from oxyeval.workflow.spec import load_workflow

from ..conftest import MakeProject

CONFIG = "models:\n  - {name: m, vendor: mock, outputs: [ok]}\n"
AGENT = "model: m\nsystem_instructions: hi\n"
WORKFLOW = """\
tasks:
  - name: ask
    type: agent
    agent_ref: a.agent.yml
    prompt: hi
    retry: {retry}
"""


def test_retry_loads_with_a_warning_naming_max_retries(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT, "w.workflow.yml": WORKFLOW.format(retry=3)})
    workflow = load_workflow(load_project(root), root / "w.workflow.yml")
    (warning,) = [w for w in workflow.warnings if w.key == "tasks[0].retry"]
    assert warning.severity == "warning" and warning.line == 6
    assert "not used by oxyeval" in warning.message and "max_retries" in warning.message
    report = validate_paths([str(root / "w.workflow.yml")])
    assert report.errors == [] and [w.message for w in report.warnings] == [warning.message]


def test_retry_out_of_range_is_still_an_error(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT, "w.workflow.yml": WORKFLOW.format(retry=21)})
    with pytest.raises(LoadError, match=r"tasks\[0\]\.retry: must be at most 20, got 21"):
        load_workflow(load_project(root), root / "w.workflow.yml")
