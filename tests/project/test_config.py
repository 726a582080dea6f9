from __future__ import annotations

from pathlib import Path

import pytest

from oxyeval.errors import ConfigError, LoadError
from oxyeval.project.agents import load_agent
from oxyeval.project.config import load_project
from oxyeval.project.files import file_kind, find_config

from ..conftest import MakeProject

AGENT = """\
model: agent_model
system_instructions: You answer questions.
tests:
  - type: consistency
    n: 4
    task_description: How many users?
"""


def test_config_found_by_walking_up(make_project: MakeProject) -> None:
    root = make_project(files={"agents/deep/a.agent.yml": AGENT})
    assert find_config(root / "agents" / "deep" / "a.agent.yml") == root / "config.yml"
    project = load_project(root / "agents" / "deep" / "a.agent.yml")
    assert project.root == root.resolve()
    assert list(project.models) == ["agent_model", "judge"]
    assert project.default_model == "agent_model"
    assert project.default_judge == "agent_model"  # oxy: the first model judges by default


def test_no_config_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a.agent.yml").write_text(AGENT)
    with pytest.raises(ConfigError, match=r"no config\.yml found .* --project DIR"):
        load_project(tmp_path / "a.agent.yml")


def test_project_dir_option(make_project: MakeProject, tmp_path: Path) -> None:
    root = make_project()
    assert load_project(project_dir=str(root)).root == root.resolve()
    with pytest.raises(ConfigError, match=r"no config\.yml in that folder"):
        load_project(project_dir=str(root / "missing"))


def test_agent_defaults_filled(make_project: MakeProject) -> None:
    root = make_project(files={"a.agent.yml": AGENT})
    agent = load_agent(load_project(root), root / "a.agent.yml")
    assert agent.name == "a"
    (test,) = agent.tests
    assert (test.n, test.pairing, test.concurrency, test.name) == (4, "all", 10, "Test 1")
    (judge,) = test.judges
    assert judge.model == "agent_model"
    assert judge.scores == {"A": 1.0, "B": 0.0}
    assert judge.prompt is None


def test_unknown_model_names_file_line_and_suggests(make_project: MakeProject) -> None:
    root = make_project(
        files={
            "a.agent.yml": AGENT.replace("model: agent_model", "model: agent_modle")
            + "    model_ref: jduge\n"
        }
    )
    with pytest.raises(LoadError) as info:
        load_agent(load_project(root), root / "a.agent.yml")
    diags = info.value.diagnostics
    assert [(d.line, d.key) for d in diags] == [(1, "model"), (7, "tests[0].model_ref")]
    assert "did you mean 'agent_model'?" in diags[0].message
    assert "did you mean 'judge'?" in diags[1].message
    assert "a.agent.yml:1:8" in str(info.value)


def test_oxy_metrics_spelling(make_project: MakeProject) -> None:
    agent = AGENT + (
        "    metrics:\n"
        "      - type: similarity\n"
        "        model_ref: judge\n"
        "        scores: {A: 1, B: 0.25}\n"
        "        prompt: 'Compare {{ submission_1 }} and {{ submission_2 }}. Answer A or B.'\n"
    )
    root = make_project(files={"a.agent.yml": agent})
    (test,) = load_agent(load_project(root), root / "a.agent.yml").tests
    (judge,) = test.judges
    assert judge.model == "judge"
    assert judge.scores == {"A": 1.0, "B": 0.25}
    assert judge.prompt is not None and "submission_1" in judge.prompt.source


def test_bad_judge_template_and_unknown_variable(make_project: MakeProject) -> None:
    agent = AGENT + "    prompt: |\n      {{ submission_1 }} vs {{ submision_2 }}\n      {% if %}\n"
    root = make_project(files={"a.agent.yml": agent})
    with pytest.raises(LoadError) as info:
        load_agent(load_project(root), root / "a.agent.yml")
    text = str(info.value)
    assert "template syntax error" in text
    assert "a.agent.yml:9" in text  # the {% if %} line inside the block scalar


def test_judge_prompt_variable_checks(make_project: MakeProject) -> None:
    agent = AGENT + "    prompt: '{{ submission_1 }} vs {{ submision_2 }}'\n"
    root = make_project(files={"a.agent.yml": agent})
    with pytest.raises(LoadError) as info:
        load_agent(load_project(root), root / "a.agent.yml")
    messages = [d.message for d in info.value.diagnostics]
    assert any("unknown variable(s) submision_2" in m for m in messages)
    assert any("never uses {{ submission_2 }}" in m for m in messages)


def test_agent_test_needs_task_description(make_project: MakeProject) -> None:
    root = make_project(
        files={
            "a.agent.yml": "model: agent_model\nsystem_instructions: x\ntests:\n  - type: consistency\n"
        }
    )
    with pytest.raises(LoadError, match="needs task_description"):
        load_agent(load_project(root), root / "a.agent.yml")


def test_config_errors_are_collected(make_project: MakeProject) -> None:
    root = make_project(
        config="""\
        models:
          - name: a
            vendor: mock
            outputs: [x]
            rules:
              - match: "(unclosed"
                output: y
          - name: a
            vendor: mock
            outputs: [y]
        defaults:
          judge_model: b
        """
    )
    with pytest.raises(LoadError) as info:
        load_project(root)
    messages = " | ".join(d.message for d in info.value.diagnostics)
    assert "invalid regular expression" in messages
    assert "model name 'a' is used twice" in messages
    assert "unknown model 'b'" in messages


def test_header_env_var_missing(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OXY_TEST_HEADER", raising=False)
    root = make_project(
        config="""\
        models:
          - name: a
            vendor: openai
            model_ref: x
            api_url: http://127.0.0.1:9/v1
            headers:
              X-Org: {env_var: OXY_TEST_HEADER}
        """
    )
    # Read when the model is called, not when config.yml loads: a command that
    # never calls this model needs none of its secrets (tests/suites/test_validate_secrets.py).
    project = load_project(root)
    assert project.models["a"].header_vars == {"X-Org": "OXY_TEST_HEADER"}
    assert project.models["a"].headers == {}


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.agent.yml", "agent"),
        ("b.agent.yaml", "agent"),
        ("w.workflow.yml", "workflow"),
        ("config.yml", "config"),
        ("other.yml", None),
    ],
)
def test_file_kind(name: str, kind: str | None) -> None:
    assert file_kind(Path(name)) == kind


def test_schema_and_semantic_errors_reported_together(make_project: MakeProject) -> None:
    agent = AGENT.replace("model: agent_model", "model: agent_modle").replace(
        "    n: 4\n", "    n: 4\n    judge: x\n"
    )
    root = make_project(files={"a.agent.yml": agent})
    with pytest.raises(LoadError) as info:
        load_agent(load_project(root), root / "a.agent.yml")
    assert [(d.line, d.key) for d in info.value.diagnostics] == [
        (1, "model"),
        (6, "tests[0].judge"),
    ]


def test_variables_without_default_fail_by_name_and_defaults_match_schema(
    make_project: MakeProject,
) -> None:
    agent = (
        "model: agent_model\nsystem_instructions: 'Hi {{ company }} {{ year }}'\n"
        "variables:\n  company: {type: string}\n  year: {type: integer, default: '2024'}\n"
    )
    root = make_project(files={"a.agent.yml": agent})
    with pytest.raises(LoadError) as info:
        load_agent(load_project(root), root / "a.agent.yml")
    (d,) = info.value.diagnostics
    assert d.key == "variables.year.default" and "'2024' is not of type 'integer'" in d.message
    root2 = make_project(files={"b.agent.yml": agent.replace("default: '2024'", "default: 2024")})
    loaded = load_agent(load_project(root2), root2 / "b.agent.yml")
    assert loaded.variables == {
        "year": 2024
    }  # company has no value: templates using it fail by name


@pytest.mark.parametrize("scores", ["{A: .inf, B: 0}", "{A: .nan, B: 0}", "{A: 5, B: -3}"])
def test_scores_must_be_finite_between_0_and_1(make_project: MakeProject, scores: str) -> None:
    root = make_project(files={"a.agent.yml": AGENT + f"    scores: {scores}\n"})
    with pytest.raises(LoadError, match="scores"):
        load_agent(load_project(root), root / "a.agent.yml")


def test_unnamed_tests_beside_others_are_warned_about(make_project: MakeProject) -> None:
    """The history tells tests apart by name; 'Test 2' shifts when a test is inserted."""
    agent = (
        "model: agent_model\nsystem_instructions: hi\ntests:\n"
        "  - {type: consistency, name: named, task_description: a}\n"
        "  - {type: consistency, task_description: b}\n"
    )
    root = make_project(files={"a.agent.yml": agent})
    loaded = load_agent(load_project(root), root / "a.agent.yml")
    (warning,) = [w for w in loaded.warnings if "no name" in w.message]
    assert warning.line == 5 and "stored as 'Test 2', by position" in warning.message
    single = make_project(
        files={
            "b.agent.yml": agent.replace(
                "  - {type: consistency, name: named, task_description: a}\n", ""
            )
        }
    )
    assert not [
        w
        for w in load_agent(load_project(single), single / "b.agent.yml").warnings
        if "no name" in w.message
    ]
