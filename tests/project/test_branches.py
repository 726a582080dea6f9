"""A/B branches in YAML: a prompt's for every case, a case's own instead, and the rules
(5 at most, one control, unique names, config.yml models) with file, line and branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.errors import LoadError
from oxyeval.project.config import load_project
from oxyeval.project.prompts import collect_case_files, load_prompts

from ..conftest import MakeProject

CONFIG = """\
models:
  - {name: fast, vendor: mock, outputs: [positive]}
  - {name: slow, vendor: mock, outputs: [Positive]}
"""


def _prompt(branches: str, case_branches: str = "") -> str:
    return (
        "name: s\nmodel: fast\ntemplate: 'Feedback: {{ text }}'\nsimilarity: lexical\n"
        f"{branches}"
        "cases:\n"
        "  - {name: one, input: {text: hi}, expected_output: positive}\n"
        "  - name: two\n    input: {text: hi}\n    expected_output: positive\n"
        f"{case_branches}"
    )


def _load(root: Path):
    project = load_project(root)
    return load_prompts(project, collect_case_files(project, []))


def _errors(root: Path) -> list[str]:
    with pytest.raises(LoadError) as caught:
        _load(root)
    return [d.format() for d in caught.value.diagnostics if d.severity == "error"]


def test_a_prompts_branches_apply_to_each_case_a_cases_own_replace_them(
    make_project: MakeProject,
) -> None:
    root = make_project(
        CONFIG,
        {
            "s.prompt.yml": _prompt(
                "branches:\n"
                "  - {name: A, model: fast, control: true}\n"
                "  - {name: B, provider: openai, model: gpt-4o-mini, temperature: 0.2, "
                "max_tokens: 50, top_p: 0.5, other_params: {seed: 7}}\n",
                "    branches:\n      - {name: X, model: slow, active: false}\n",
            )
        },
    )
    (prompt,) = _load(root)
    one, two = prompt.cases
    assert [b.name for b in prompt.branches_of(one)] == ["A", "B"]
    assert [b.name for b in prompt.branches_of(two)] == ["X"]
    a, b = prompt.branches_of(one)
    # The Testing API's defaults where YAML says nothing; no cap of its own (the prompt's
    # or model's applies: see BranchDef.cap).
    assert (a.temperature, a.max_tokens, a.top_p, a.control, a.active) == (
        0.7,
        None,
        1.0,
        True,
        True,
    )
    assert a.provider is None
    assert b.fields() == {
        "name": "B",
        "model": "gpt-4o-mini",
        "provider": "openai",
        "description": None,
        "temperature": 0.2,
        "max_tokens": 50,
        "top_p": 0.5,
        "is_control": False,
        "is_active": True,
        "other_params": {"seed": 7},
    }
    assert prompt.branches_of(two)[0].active is False


def test_a_sixth_branch_a_second_control_and_a_repeated_name_are_named(
    make_project: MakeProject,
) -> None:
    six = "".join(f"  - {{name: b{i}, model: fast}}\n" for i in range(6))
    root = make_project(
        CONFIG,
        {
            "s.prompt.yml": _prompt(
                "branches:\n" + six,
                "    branches:\n"
                "      - {name: X, model: fast, control: true}\n"
                "      - {name: X, model: slow, control: true}\n",
            )
        },
    )
    errors = _errors(root)
    text = "\n".join(errors)
    assert "s.prompt.yml:11:" in text  # the sixth branch's line
    assert "branch 'b5' and any after it are one too many" in text
    assert "at most 5" in text
    assert "branch name 'X' is used twice for case 'two'" in text
    assert "case 'two' has two control branches, 'X' and 'X'" in text
    assert len(errors) == 3


def test_a_branch_without_provider_names_a_config_model(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG, {"s.prompt.yml": _prompt("branches:\n  - {name: A, model: slwo}\n")}
    )
    (error,) = _errors(root)
    assert "s.prompt.yml:6:" in error and "branches[0].model" in error
    assert "unknown model 'slwo'; did you mean 'slow'?" in error
    assert "with provider: openai|anthropic|gemini|ollama" in error


@pytest.mark.parametrize(
    ("branch", "key"),
    [
        ("{name: A, model: fast, temperature: 2.5}", "temperature"),
        ("{name: A, model: fast, top_p: 1.5}", "top_p"),
        ("{name: A, model: fast, max_tokens: 0}", "max_tokens"),
        ("{name: A, provider: mistral, model: m}", "provider"),
        ("{name: A, model: fast, colour: red}", "colour"),
        ("{name: A, model: fast, max_tokens: 100000000000000000000000000000}", "max_tokens"),
        ("{name: 'a@b', model: fast}", "name"),
        ('{name: "red\\e[31m", model: fast}', "name"),
    ],
)
def test_out_of_range_settings_are_refused_by_the_schema(
    make_project: MakeProject, branch: str, key: str
) -> None:
    root = make_project(CONFIG, {"s.prompt.yml": _prompt(f"branches:\n  - {branch}\n")})
    (error,) = _errors(root)
    assert "s.prompt.yml:6:" in error and key in error


def test_an_agents_cases_cannot_have_branches(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG,
        {
            "a.agent.yml": "model: fast\nsystem_instructions: hi\n",
            "a.cases.yml": "agent: a.agent.yml\nsimilarity: lexical\ncases:\n"
            "  - name: q\n    input: {question: hi}\n    branches:\n      - {name: A, model: fast}\n",
        },
    )
    (error,) = _errors(root)
    assert "a.cases.yml:6:" in error
    assert "cases of an agent cannot have branches" in error


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ("{model: other, seed: 7}", "other_params model cannot be set here"),
        ("{generationConfig: {temperature: 50}}", "generationConfig.temperature cannot be set"),
        ("{messages: [{role: user, content: hi}]}", "messages cannot be set here"),
    ],
)
def test_other_params_cannot_replace_what_the_branch_and_the_prompt_send(
    make_project: MakeProject, params: str, said: str
) -> None:
    """Found by an attacker's review: other_params went out as sent, so a branch said
    temperature 0 and model plain while the request carried 50 and another model."""
    root = make_project(
        CONFIG,
        {
            "s.prompt.yml": _prompt(
                f"branches:\n  - {{name: A, model: fast, other_params: {params}}}\n"
            )
        },
    )
    (error,) = _errors(root)
    assert "s.prompt.yml:6:" in error and "branches[0].other_params" in error and said in error
