"""A typo is said once, with its correction first."""

from __future__ import annotations

import pytest

from oxyeval.errors import LoadError
from oxyeval.project import load_agent, load_project

from ..conftest import MakeProject


def test_a_misspelt_task_description_is_one_did_you_mean(make_project: MakeProject) -> None:
    agent = (
        "model: agent_model\nsystem_instructions: x\ntests:\n"
        "  - type: consistency\n    n: 2\n    task_descripton: How many?\n"
    )
    root = make_project(files={"a.agent.yml": agent})
    with pytest.raises(LoadError) as info:
        load_agent(load_project(root), root / "a.agent.yml")
    (problem,) = info.value.diagnostics
    assert "did you mean 'task_description'" in problem.message
    # Without the typo, the missing key is still an error of its own.
    (root / "a.agent.yml").write_text(agent.replace("    task_descripton: How many?\n", ""))
    with pytest.raises(LoadError) as missing:
        load_agent(load_project(root), root / "a.agent.yml")
    assert "needs task_description" in str(missing.value)


def test_an_unknown_model_reads_as_one_sentence(make_project: MakeProject) -> None:
    root = make_project(files={"a.agent.yml": "model: agent_modle\nsystem_instructions: x\n"})
    with pytest.raises(LoadError) as info:
        load_agent(load_project(root), root / "a.agent.yml")
    text = str(info.value)
    assert "did you mean 'agent_model'? (the models in " in text
    assert "config.yml: agent_model, judge)" in text and "?; models" not in text
