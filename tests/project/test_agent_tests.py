"""oxy's pass/fail test files (*.test.yml): file kind, schema, loading and oxy validate."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.errors import LoadError
from oxyeval.project import (
    DEFAULT_TEST_FILE_CONCURRENCY,
    DEFAULT_TEST_FILE_RUNS,
    MAX_CONCURRENCY,
    MAX_TEST_FILE_RUNS,
    TestFile,
    case_display_name,
    collect_test_files,
    file_kind,
    load_project,
    load_test_file,
    project_files,
    select_cases,
)
from oxyeval.project.schema import load_schema

from ..conftest import MOCK_CONFIG, MakeProject

CONFIG = MOCK_CONFIG + "databases:\n  - {name: shop, type: duckdb, dataset: data}\n"

AGENT = """\
model: agent_model
system_instructions: You answer sales questions.
tools:
  - name: query_orders
    type: execute_sql
    database: shop
  - name: list_tables
    type: execute_sql
    database: shop
"""

PLAIN_AGENT = "model: agent_model\nsystem_instructions: You write summaries.\n"

CASES = """\
cases:
  - name: top region
    prompt: Which region sells the most?
    expected: South.
    tool: query_orders
    tags: [sql, smoke]
  - prompt: What is our refund policy?
    expected: It declines.
    tags: [scope]
"""


@pytest.fixture
def root(make_project: MakeProject) -> Path:
    folder = make_project(
        config=CONFIG,
        files={
            "agents/sales.agent.yml": AGENT,
            "agents/writer.agent.yml": PLAIN_AGENT,
            "agents/sales.agent.test.yml": CASES,
        },
    )
    (folder / "data").mkdir()
    return folder


def _load(root: Path, name: str, text: str | None = None) -> TestFile:
    path = root / name
    if text is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return load_test_file(load_project(root), path)


def _errors(root: Path, name: str, text: str | None = None) -> list[str]:
    with pytest.raises(LoadError) as caught:
        _load(root, name, text)
    return [d.format() for d in caught.value.diagnostics if d.severity == "error"]


# -- file kinds ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("config.yml", "config"),
        ("config.yaml", "config"),
        ("sales.agent.yml", "agent"),
        ("sales.agent.yaml", "agent"),
        ("report.workflow.yml", "workflow"),
        ("nightly.automation.yaml", "workflow"),
        ("sentiment.prompt.yml", "prompt"),
        ("more.cases.yaml", "cases"),
        ("smoke.test.yml", "test"),
        ("smoke.test.yaml", "test"),
        ("sales.agent.test.yml", "test"),
        ("report.workflow.test.yaml", "test"),
        ("Sales.Agent.TEST.YML", "test"),
        ("my.test.agent.yml", "agent"),  # an agent called "my.test"
        ("notes.yml", None),
        ("test.yml", None),  # no stem: not oxy's convention
        ("sales.agent.test.json", None),
    ],
)
def test_file_kind_of_every_convention(name: str, kind: str | None) -> None:
    assert file_kind(Path(name)) == kind


def test_a_test_file_is_not_walked_as_an_agent(root: Path) -> None:
    agents = project_files(root, ("agent",))
    assert [p.name for p in agents] == ["sales.agent.yml", "writer.agent.yml"]
    assert [p.name for p in project_files(root, ("test",))] == ["sales.agent.test.yml"]


def test_oxy_test_on_a_folder_still_collects_only_agent_and_workflow_files(root: Path) -> None:
    from oxyeval.suites.consistency import collect_files

    assert sorted(p.name for p in collect_files([root / "agents"])) == [
        "sales.agent.yml",
        "writer.agent.yml",
    ]


# -- the schema ---------------------------------------------------------------------------


def test_schema_maxima_are_the_project_limits() -> None:
    settings = load_schema("test")["$defs"]["settings"]["properties"]
    assert settings["runs"]["minimum"] == 1
    assert settings["runs"]["maximum"] == MAX_TEST_FILE_RUNS
    assert settings["concurrency"]["minimum"] == 1
    assert settings["concurrency"]["maximum"] == MAX_CONCURRENCY


def test_every_schema_key_is_described_and_closed() -> None:
    schema = load_schema("test")
    objects = [schema, schema["$defs"]["settings"], schema["$defs"]["case"]]
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["description"]
        for key, prop in obj["properties"].items():
            described = prop.get("description") or "$ref" in prop
            assert described, key


@pytest.mark.parametrize(
    ("text", "line", "key", "message"),
    [
        ("settings:\n  runs: 0\n" + CASES, 2, "settings.runs", "must be at least 1, got 0"),
        (
            "settings:\n  concurrency: 1001\n" + CASES,
            2,
            "settings.concurrency",
            "must be at most 1000",
        ),
        ("settings:\n  runs: 2.0\n" + CASES, 2, "settings.runs", "expected an integer"),
        (
            "cases:\n  - promt: hi\n    prompt: hi\n    expected: fine\n",
            2,
            "cases[0].promt",
            "did you mean 'prompt'?",
        ),
        ("cases:\n  - prompt: hi\n", 2, "cases[0]", "missing required key 'expected'"),
        ("cases: []\n", 1, "cases", "needs at least 1 item"),
        ("cases:\n  - {prompt: '', expected: x}\n", 2, "cases[0].prompt", "must not be empty"),
        (
            "setings: {runs: 2}\n" + CASES,
            1,
            "setings",
            "unknown key 'setings'; did you mean 'settings'?",
        ),
    ],
)
def test_schema_errors_name_file_line_and_key(
    root: Path, text: str, line: int, key: str, message: str
) -> None:
    errors = _errors(root, "agents/sales.agent.test.yml", text)
    assert len(errors) == 1, errors
    assert errors[0].startswith("error: ")
    assert f"sales.agent.test.yml:{line}:" in errors[0]
    assert f": {key}: " in errors[0]
    assert message in errors[0]


# -- loading --------------------------------------------------------------------------------


def test_defaults_and_the_target_inferred_from_the_file_name(root: Path) -> None:
    loaded = _load(root, "agents/sales.agent.test.yml")
    assert loaded.name == "sales.agent"
    assert loaded.target == (root / "agents" / "sales.agent.yml").resolve()
    assert loaded.target_kind == "agent"
    assert loaded.agent is not None and loaded.agent.name == "sales"
    assert loaded.tools == frozenset({"query_orders", "list_tables"})
    settings = loaded.settings
    assert (settings.runs, settings.concurrency, settings.judge_model) == (
        DEFAULT_TEST_FILE_RUNS,
        DEFAULT_TEST_FILE_CONCURRENCY,
        None,
    )
    assert (DEFAULT_TEST_FILE_RUNS, DEFAULT_TEST_FILE_CONCURRENCY) == (3, 5)  # oxy's
    first, second = loaded.cases
    assert (first.name, first.named, first.tool, first.tags) == (
        "top region",
        True,
        "query_orders",
        ("sql", "smoke"),
    )
    assert (second.name, second.named, second.tool, second.tags) == (
        "What is our refund policy?",
        False,
        None,
        ("scope",),
    )
    assert second.expected == "It declines." and second.index == 1
    where = second.diagnostic("judge said no", field_name="expected")
    assert where.line == 8 and where.key == "cases[1].expected"


def test_settings_name_and_target_given(root: Path) -> None:
    text = (
        "name: sales smoke\ntarget: agents/sales.agent.yml\n"
        "settings: {runs: 7, concurrency: 2, judge_model: judge}\n" + CASES
    )
    loaded = _load(root, "tests/smoke.test.yml", text)
    assert loaded.name == "sales smoke"
    assert loaded.target == (root / "agents" / "sales.agent.yml").resolve()
    assert (loaded.settings.runs, loaded.settings.concurrency) == (7, 2)
    assert loaded.settings.judge_model == "judge"


def test_nulls_mean_the_defaults(root: Path) -> None:
    text = "name: null\ntarget: null\nsettings: {judge_model: null}\n" + CASES.replace(
        "  - prompt:", "  - name: null\n    tool: null\n    prompt:"
    )
    loaded = _load(root, "agents/sales.agent.test.yml", text)
    assert loaded.name == "sales.agent" and loaded.settings.judge_model is None
    assert loaded.cases[1].name == "What is our refund policy?"
    assert loaded.cases[1].tool is None


def test_yaml_extension_and_workflow_inference(root: Path) -> None:
    (root / "agents" / "writer.agent.yml").rename(root / "agents" / "writer.agent.yaml")
    loaded = _load(root, "agents/writer.agent.test.yaml", "cases:\n  - {prompt: hi, expected: x}\n")
    assert loaded.target.name == "writer.agent.yaml"
    workflow = "tasks:\n  - {name: w, type: agent, agent_ref: agents/sales.agent.yml, prompt: hi}\n"
    (root / "flows").mkdir()
    (root / "flows" / "report.workflow.yml").write_text(workflow, encoding="utf-8")
    text = "cases:\n  - {prompt: hi, expected: x, tool: list_tables}\n"
    loaded = _load(root, "flows/report.workflow.test.yml", text)
    assert loaded.target_kind == "workflow" and loaded.agent is None
    assert loaded.target.name == "report.workflow.yml"
    assert loaded.tools == frozenset({"query_orders", "list_tables"})


def test_no_target_and_no_name_to_infer_it_from(root: Path) -> None:
    (error,) = _errors(root, "smoke.test.yml", "cases:\n  - {prompt: hi, expected: x}\n")
    assert "smoke.test.yml:1:" in error and "no target: add target:" in error


def test_inferred_target_that_does_not_exist(root: Path) -> None:
    (error,) = _errors(
        root, "agents/ghost.agent.test.yml", "cases:\n  - {prompt: hi, expected: x}\n"
    )
    assert "ghost.agent.test.yml:1:" in error
    assert "'ghost.agent.yml' (inferred from this file's name): file not found" in error


def test_target_outside_the_project(root: Path) -> None:
    outside = root.parent / "elsewhere.agent.yml"
    outside.write_text(PLAIN_AGENT, encoding="utf-8")
    text = "# tests\ntarget: ../elsewhere.agent.yml\n" + CASES
    (error,) = _errors(root, "smoke.test.yml", text)
    assert "smoke.test.yml:2:" in error and ": target: " in error
    assert "leaves the project folder" in error


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("agents/nope.agent.yml", "file not found (relative to the project folder"),
        ("config.yml", "is not an *.agent.yml or *.workflow.yml file"),
        ("agents", "is not an *.agent.yml or *.workflow.yml file"),
    ],
)
def test_bad_targets(root: Path, target: str, message: str) -> None:
    (error,) = _errors(root, "smoke.test.yml", f"target: {target}\n" + CASES)
    assert "smoke.test.yml:1:" in error and message in error


def test_the_target_agents_errors_pass_through(root: Path) -> None:
    (root / "agents" / "sales.agent.yml").write_text(
        AGENT.replace("agent_model", "agent_modl"), encoding="utf-8"
    )
    errors = _errors(root, "agents/sales.agent.test.yml")
    assert len(errors) == 1
    assert "sales.agent.yml:1:" in errors[0]
    assert "unknown model 'agent_modl'; did you mean 'agent_model'?" in errors[0]


def test_a_routing_agent_cannot_be_a_target(root: Path) -> None:
    (root / "agents" / "sales.agent.yml").write_text("type: routing\n" + AGENT, encoding="utf-8")
    (error,) = _errors(root, "agents/sales.agent.test.yml")
    assert "routing agent" in error


def test_unknown_tool_with_did_you_mean(root: Path) -> None:
    text = CASES.replace("tool: query_orders", "tool: query_order")
    (error,) = _errors(root, "agents/sales.agent.test.yml", text)
    assert "sales.agent.test.yml:5:" in error and ": cases[0].tool: " in error
    assert "tool 'query_order' is not a tool of agent agents/sales.agent.yml" in error
    assert "did you mean 'query_orders'?" in error
    assert "(tools: list_tables, query_orders)" in error


def test_a_tool_of_an_agent_without_tools(root: Path) -> None:
    text = "cases:\n  - {prompt: hi, expected: x, tool: query_orders}\n"
    (error,) = _errors(root, "agents/writer.agent.test.yml", text)
    assert "is not a tool of agent agents/writer.agent.yml" in error
    assert "(tools: none)" in error


def test_unknown_judge_model_with_did_you_mean(root: Path) -> None:
    text = "settings:\n  judge_model: judg\n" + CASES
    (error,) = _errors(root, "agents/sales.agent.test.yml", text)
    assert "sales.agent.test.yml:2:" in error and "settings.judge_model" in error
    assert "unknown judge model 'judg'; did you mean 'judge'?" in error


def test_duplicate_case_names(root: Path) -> None:
    text = (
        "cases:\n"
        "  - {name: a, prompt: one, expected: x}\n"
        "  - {name: a, prompt: two, expected: x}\n"
        "  - {prompt: same question, expected: x}\n"
        "  - {prompt: '  same   question ', expected: y}\n"
    )
    errors = _errors(root, "agents/sales.agent.test.yml", text)
    assert len(errors) == 2
    assert ":3:" in errors[0] and "cases[1].name" in errors[0]
    assert "case name 'a' is also the name of cases[0]" in errors[0]
    assert ":5:" in errors[1] and "cases[3].prompt" in errors[1]
    assert "'same question' is also the name of cases[2]" in errors[1]


def test_all_of_a_files_problems_at_once(root: Path) -> None:
    text = (
        "settings: {judge_model: nobody}\n"
        "cases:\n"
        "  - {name: a, prompt: one, expected: x, tool: nothing}\n"
        "  - {name: a, prompt: two, expected: x}\n"
    )
    errors = _errors(root, "agents/sales.agent.test.yml", text)
    assert [e.split(": ")[2] for e in errors] == [
        "settings.judge_model",
        "cases[0].tool",
        "cases[1].name",
    ]


def test_case_display_name_shortens_prompts() -> None:
    assert case_display_name("  How   many\nusers? ") == "How many users?"
    long = case_display_name("word " * 40)
    assert len(long) == 60 and long.endswith("...")


# -- workflow targets ---------------------------------------------------------------------


NESTED = """\
tasks:
  - name: each
    type: loop_sequential
    values: [1, 2]
    tasks:
      - {name: ask, type: agent, agent_ref: sales, prompt: hi}
  - {name: sub, type: workflow, src: flows/inner.workflow.yml}
"""


def test_workflow_tools_come_from_nested_agents_and_sub_workflows(root: Path) -> None:
    (root / "flows").mkdir()
    (root / "flows" / "outer.workflow.yml").write_text(NESTED, encoding="utf-8")
    inner = "tasks:\n  - {name: w, type: agent, agent_ref: agents/writer.agent.yml, prompt: x}\n"
    (root / "flows" / "inner.workflow.yml").write_text(inner, encoding="utf-8")
    text = "cases:\n  - {prompt: hi, expected: x, tool: query_orders}\n"
    loaded = _load(root, "flows/outer.workflow.test.yml", text)
    assert loaded.tools == frozenset({"query_orders", "list_tables"})
    text = "cases:\n  - {prompt: hi, expected: x, tool: querry_orders}\n"
    (error,) = _errors(root, "flows/outer.workflow.test.yml", text)
    assert "is not a tool of any agent task of flows/outer.workflow.yml" in error
    assert "did you mean 'query_orders'?" in error


def test_a_workflow_whose_agents_cannot_be_found_cannot_check_a_tool(root: Path) -> None:
    (root / "flows").mkdir()
    flow = "tasks:\n  - {name: w, type: agent, agent_ref: agents/gone.agent.yml, prompt: x}\n"
    (root / "flows" / "f.workflow.yml").write_text(flow, encoding="utf-8")
    plain = "cases:\n  - {prompt: hi, expected: x}\n"
    assert _load(root, "flows/f.workflow.test.yml", plain).tools is None  # no tool: fine
    text = "cases:\n  - {prompt: hi, expected: x, tool: query_orders}\n"
    (error,) = _errors(root, "flows/f.workflow.test.yml", text)
    assert "cannot check tool 'query_orders' against workflow flows/f.workflow.yml" in error
    assert "agents/gone.agent.yml" in error


def test_a_workflow_targets_schema_errors_pass_through(root: Path) -> None:
    (root / "flows").mkdir()
    (root / "flows" / "f.workflow.yml").write_text("tasks: []\n", encoding="utf-8")
    (error,) = _errors(root, "flows/f.workflow.test.yml", "cases:\n  - {prompt: a, expected: b}\n")
    assert "f.workflow.yml:1:" in error and "needs at least 1 item" in error


# -- collecting and selecting -------------------------------------------------------------


def test_collect_test_files(root: Path) -> None:
    (root / "more").mkdir()
    (root / "more" / "b.test.yml").write_text(CASES, encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "c.test.yml").write_text(CASES, encoding="utf-8")
    project = load_project(root)
    everything = collect_test_files(project)
    assert [p.name for p in everything] == ["sales.agent.test.yml", "b.test.yml"]
    one = root / "more" / "b.test.yml"
    assert collect_test_files(project, [one, root / "more"]) == [one]
    with pytest.raises(LoadError, match="not a pass/fail test file"):
        collect_test_files(project, [root / "agents" / "sales.agent.yml"])
    with pytest.raises(LoadError, match="file not found"):
        collect_test_files(project, [root / "missing.test.yml"])
    with pytest.raises(LoadError, match=r"no \*\.test\.yml files"):
        collect_test_files(project, [root / "data"])


def test_select_cases_by_tag_and_name(root: Path) -> None:
    loaded = _load(root, "agents/sales.agent.test.yml")
    names = lambda cases: [c.name for c in cases]  # noqa: E731
    assert names(select_cases(loaded)) == ["top region", "What is our refund policy?"]
    assert names(select_cases(loaded, tags=["smoke"])) == ["top region"]
    assert names(select_cases(loaded, tags=["scope", "sql"])) == names(loaded.cases)
    assert names(select_cases(loaded, names=["What is our refund policy?"])) == [
        "What is our refund policy?"
    ]
    assert names(select_cases(loaded, tags=["scope"], names=["top region"])) == []
    assert select_cases(loaded, tags=["nothing"]) == ()


# -- oxy validate ---------------------------------------------------------------------------


def _validate(*args: str):
    return CliRunner().invoke(app, ["validate", *args])


def test_oxy_validate_checks_test_files(root: Path) -> None:
    good = _validate(str(root))
    assert good.exit_code == 0, good.stderr
    # config.yml, two agents and the test file
    assert "4 file(s) checked: 0 error(s), 0 warning(s)" in good.stdout
    one = _validate(str(root / "agents" / "sales.agent.test.yml"))
    assert one.exit_code == 0 and "1 file(s) checked: 0 error(s)" in one.stdout

    test_file = root / "agents" / "sales.agent.test.yml"
    test_file.write_text(CASES.replace("tool: query_orders", "tool: query_order"), encoding="utf-8")
    bad = _validate(str(root))
    assert bad.exit_code == 2
    assert "sales.agent.test.yml:5:" in bad.stderr and "did you mean 'query_orders'" in bad.stderr
    assert "4 file(s) checked: 1 error(s)" in bad.stdout

    test_file.write_text("settings: {runs: 0}\n" + CASES, encoding="utf-8")
    schema = _validate(str(test_file), "--format", "json")
    assert schema.exit_code == 2
    assert "sales.agent.test.yml:1:" in schema.stderr and "settings.runs" in schema.stderr


def test_oxy_validate_with_a_broken_config_still_checks_the_test_files_schema(root: Path) -> None:
    (root / "config.yml").write_text("models: 3\n", encoding="utf-8")
    test_file = root / "agents" / "sales.agent.test.yml"
    test_file.write_text("cases:\n  - {prompt: hi}\n", encoding="utf-8")
    result = _validate(str(test_file))
    assert result.exit_code == 2
    assert "missing required key 'expected'" in result.stderr


def test_oxy_validate_loads_a_workflow_target_fully(root: Path) -> None:
    """Beyond its schema: the workflow stage's loader finds what only it checks."""
    (root / "flows").mkdir()
    flow = "tasks:\n  - {name: w, type: agent, agent_ref: agents/gone.agent.yml, prompt: x}\n"
    (root / "flows" / "f.workflow.yml").write_text(flow, encoding="utf-8")
    (root / "flows" / "f.workflow.test.yml").write_text(
        "cases:\n  - {prompt: a, expected: b}\n", encoding="utf-8"
    )
    assert _load(root, "flows/f.workflow.test.yml").target_kind == "workflow"  # schema only
    result = _validate(str(root / "flows" / "f.workflow.test.yml"))
    assert result.exit_code == 2
    assert "f.workflow.yml:2:" in result.stderr and "not found" in result.stderr


def test_the_shipped_example_loads() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    loaded = load_test_file(load_project(examples), examples / "agents" / "sales.agent.test.yml")
    assert loaded.target.name == "sales.agent.yml" and loaded.tools == {"query_orders"}
    assert 2 <= len(loaded.cases) <= 3
    assert any(c.tool == "query_orders" for c in loaded.cases)
    assert all(c.tags for c in loaded.cases) and all(c.named for c in loaded.cases)
    assert [c.name for c in select_cases(loaded, tags=["sql"])] == ["top region"]
