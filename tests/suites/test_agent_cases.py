"""Test cases that target an agent (``agent:`` in a ``*.cases.yml``) render the agent's
system prompt as ``oxy run --question`` does: its variable defaults (short form and JSON
Schema form), its context files, then the case's values for the variables it declares.

The fake server answers with the system prompt it received and the question, so a
case's actual output shows exactly what the agent was sent."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from oxyeval.errors import LoadError
from oxyeval.suites.cases.run import run_cases
from oxyeval.suites.validate import validate_paths
from oxyeval.workflow.ask import ask_agent

from ..conftest import MakeProject
from ..fakes import FakeServer, RecordedRequest, fake_openai, last_user_text

AGENT = """\
model: m
system_instructions: "You work for {{ company }} in {{ unit }}."
variables:
  company: Acme                         # oxy's short form: the value is the default
  unit: {type: string, default: Sales}  # a JSON Schema with a default
"""

CASES = """\
agent: a.agent.yml
template: "{{ question }}"
similarity: lexical
cases:
  - name: defaults
    input: {question: "How many?"}
    expected_output: "You work for Acme in Sales. | How many?"
  - name: override
    input: {question: "And now?", company: Beta}
    expected_output: "You work for Beta in Sales. | And now?"
"""


def echo_system(request: RecordedRequest) -> str:
    messages: list[dict[str, Any]] = request.body["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    return f"{system} | {last_user_text(request.body)}"


@pytest.fixture
def server() -> Any:
    with fake_openai(echo_system) as fake:
        yield fake


def config(server: FakeServer) -> str:
    return f"models:\n  - {{name: m, vendor: openai, model_ref: x, api_url: '{server.url}'}}\n"


def test_a_case_renders_the_agents_defaults_like_oxy_run(
    make_project: MakeProject, server: FakeServer
) -> None:
    root = make_project(config(server), {"a.agent.yml": AGENT, "a.cases.yml": CASES})
    run = run_cases(project_dir=str(root))
    results = {r.name: r for r in run.results}
    assert [r.error for r in run.results] == [None, None]
    assert results["defaults"].actual_output == "You work for Acme in Sales. | How many?"
    assert results["defaults"].passed and results["defaults"].score == 1.0
    # A declared variable in the case's input overrides its default; the other stays.
    assert results["override"].actual_output == "You work for Beta in Sales. | And now?"
    assert results["override"].passed
    # `oxy run --question` (its library form) sends the very same system prompt.
    answer = asyncio.run(ask_agent(root / "a.agent.yml", "How many?"))
    assert answer.output == results["defaults"].actual_output


def test_validate_agrees_with_the_run(make_project: MakeProject, server: FakeServer) -> None:
    root = make_project(config(server), {"a.agent.yml": AGENT, "a.cases.yml": CASES})
    report = validate_paths([str(root)])
    assert report.errors == []


def test_a_variable_without_default_must_come_from_the_case(
    make_project: MakeProject, server: FakeServer
) -> None:
    agent = AGENT.replace("{{ unit }}.", "{{ unit }} ({{ team }}).") + "  team: {type: string}\n"
    cases = CASES.replace('"How many?"}', '"How many?", team: Red}')
    root = make_project(config(server), {"a.agent.yml": agent, "a.cases.yml": cases})
    # Load and validate name the one case that leaves `team` undefined, and the same way.
    with pytest.raises(LoadError) as caught:
        run_cases(project_dir=str(root))
    (error,) = caught.value.diagnostics
    assert error.message.startswith("case 'override': template error: 'team' is undefined")
    assert error.key == "cases[1].input" and error.line == 9
    report = validate_paths([str(root)])
    assert [d.message for d in report.errors] == [error.message]
    # Given by every case, it renders.
    fixed = cases.replace("company: Beta}", "company: Beta, team: Blue}")
    (root / "a.cases.yml").write_text(fixed, encoding="utf-8")
    run = run_cases(project_dir=str(root))
    assert [r.actual_output for r in run.results] == [
        "You work for Acme in Sales (Red). | How many?",
        "You work for Beta in Sales (Blue). | And now?",
    ]


def test_inputs_the_agent_does_not_declare_stay_out_of_its_system_prompt(
    make_project: MakeProject, server: FakeServer
) -> None:
    # `question` fills the question template only: as for `oxy run --question`, a system
    # prompt that reads it is an error, found at load.
    agent = 'model: m\nsystem_instructions: "Echo {{ question }}"\n'
    root = make_project(config(server), {"a.agent.yml": agent, "a.cases.yml": CASES})
    with pytest.raises(LoadError, match="uses 'question', which is not a variable of this agent"):
        run_cases(project_dir=str(root))
    with pytest.raises(LoadError, match="uses 'question', which is not a variable of this agent"):
        asyncio.run(ask_agent(root / "a.agent.yml", "How many?"))


def test_context_files_reach_a_cases_system_prompt(
    make_project: MakeProject, server: FakeServer
) -> None:
    agent = (
        "model: m\n"
        'system_instructions: "Schema: {{ context.schema }} for {{ company }}."\n'
        "context: [{name: schema, type: file, src: [schema.sql]}]\n"
        "variables: {company: Acme}\n"
    )
    cases = (
        "agent: a.agent.yml\nsimilarity: lexical\ncases:\n"
        "  - {name: c, input: {question: Q}, expected_output: 'Schema: T(id) for Acme. | Q'}\n"
    )
    root = make_project(
        config(server), {"a.agent.yml": agent, "a.cases.yml": cases, "schema.sql": "T(id)"}
    )
    (result,) = run_cases(project_dir=str(root)).results
    assert result.error is None and result.passed
    assert result.actual_output == "Schema: T(id) for Acme. | Q"


def test_the_examples_users_agent_can_back_a_cases_file(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    root = tmp_path / "examples"
    shutil.copytree(examples, root, ignore=shutil.ignore_patterns("output", ".oxy"))
    (root / "users.cases.yml").write_text(
        "agent: agents/users.agent.yml\nsimilarity: lexical\ncases:\n"
        "  - {name: active, input: {question: 'How many active users?'}, expected_output: '1,204'}\n",
        encoding="utf-8",
    )
    (result,) = run_cases([root / "users.cases.yml"]).results
    assert result.error is None and result.actual_output
    assert result.score is not None
