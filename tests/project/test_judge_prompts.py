"""A judge prompt must show the judge both answers.

A ``consistency_prompt:`` (a workflow's, or a task's) or an agent test's ``prompt:``
that never uses ``{{ submission_1 }}`` / ``{{ submission_2 }}`` made the judge compare
nothing and gave a false 100% consistency. It is an error wherever it is written, at
validate time as at run time; and a task's own consistency_prompt, which used to be
checked as a template over the workflow (so ``{{ submission_1 }}`` was an "unknown
reference"), is checked as the judge prompt it is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.errors import ConfigError, Diagnostic
from oxyeval.judge.judge import Judge
from oxyeval.project import TemplateRef, check_judge_prompt

from ..conftest import MakeProject

DOCS = Path(__file__).resolve().parents[2] / "docs"
JUDGE_CONFIG = """\
models:
  - {name: agent_model, vendor: mock, outputs: ["one answer", "another answer"]}
  - name: judge
    vendor: mock
    rules:
      - {match: "one answer", output: "They differ.\\nAnswer: B"}
      - {match: ".", output: "Answer: A"}
"""
AGENT = "model: agent_model\nsystem_instructions: Be brief.\n"


def _workflow(top: str = "", task: str = "") -> str:
    return (
        f"{top}tasks:\n  - name: t\n    type: agent\n    agent_ref: a.agent.yml\n"
        f"    prompt: hi\n    consistency_run: 2\n    judge_model: judge\n{task}"
    )


def _run(*argv: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(argv))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("files", "where"),
    [
        (
            {"w.workflow.yml": _workflow(top="consistency_prompt: 'Same facts? Answer: A or B'\n")},
            "w.workflow.yml:1",
        ),
        (
            {
                "w.workflow.yml": _workflow(
                    task="    consistency_prompt: 'About {{ task_description }}: A or B?'\n"
                )
            },
            "w.workflow.yml:8",
        ),
    ],
    ids=["workflow", "task"],
)
def test_a_workflow_judge_prompt_that_cannot_see_the_answers_is_an_error(
    make_project: MakeProject, files: dict[str, str], where: str
) -> None:
    root = make_project(JUDGE_CONFIG, {"a.agent.yml": AGENT, **files})
    for argv in (["validate", str(root)], ["run", str(root / "w.workflow.yml")]):
        code, _out, err = _run(*argv)
        assert code == 2, err
        assert where in err and "never uses {{ submission_1 }} or {{ submission_2 }}" in err


def test_an_agent_test_prompt_that_cannot_see_the_answers_is_an_error(
    make_project: MakeProject,
) -> None:
    agent = AGENT + (
        "tests:\n  - type: consistency\n    n: 2\n    task_description: q\n"
        "    prompt: 'Is {{ submission_1 }} right? Answer: A or B'\n"
    )
    root = make_project(JUDGE_CONFIG, {"a.agent.yml": agent})
    for argv in (["validate", str(root)], ["test", str(root / "a.agent.yml")]):
        code, _out, err = _run(*argv)
        assert code == 2, err
        assert "a.agent.yml:7" in err and "never uses {{ submission_2 }}" in err
        assert "warning" not in err  # it used to be only a warning


def test_a_tasks_own_judge_prompt_is_a_judge_prompt(make_project: MakeProject) -> None:
    """It reads the answers (not workflow names), and the judge really sees them."""
    task = "    consistency_prompt: 'Same? 1: {{ submission_1 }} 2: {{ submission_2 }}'\n"
    root = make_project(
        JUDGE_CONFIG, {"a.agent.yml": AGENT, "w.workflow.yml": _workflow(task=task)}
    )
    code, _out, err = _run("validate", str(root))
    assert code == 0, err
    code, out, err = _run("run", str(root / "w.workflow.yml"), "--format", "json", "--no-history")
    assert code in (0, 3), err
    consistency = json.loads(out)["tasks"][0]["consistency"]
    assert consistency["score"] == 0.0  # the judge saw "one answer" vs "another answer": B


def test_readme_judge_prompts_are_valid() -> None:
    """The docs' own snippets: the workflow's consistency_prompt and a test's prompt."""
    text = "\n".join(page.read_text("utf-8") for page in sorted(DOCS.rglob("*.md")))
    blocks = re.findall(r"```yaml[^\n]*\n(.*?)```", text, re.S)
    prompts = []
    for block in blocks:
        data = yaml.safe_load(block)
        if isinstance(data, dict) and "consistency_prompt" in data:
            prompts.append(data["consistency_prompt"])
        for test in (data or {}).get("tests", []) if isinstance(data, dict) else []:
            if isinstance(test, dict) and test.get("prompt"):
                prompts.append(test["prompt"])
    assert len(prompts) >= 2, "the docs no longer show a workflow and a test judge prompt"
    for prompt in prompts:
        problems: list[Diagnostic] = []
        check_judge_prompt(TemplateRef(prompt, None), problems)
        assert problems == [], prompt
        assert "submission_1" in prompt and "submission_2" in prompt


def test_a_judge_built_in_code_must_see_the_answers() -> None:
    with pytest.raises(ConfigError, match="never uses"):
        Judge(object(), TemplateRef("Is it right? {{ submission_1 }}"))  # type: ignore[arg-type]
    Judge(object(), TemplateRef("{{ submission_1 }} / {{ submission_2 }}"))  # type: ignore[arg-type]
