"""``oxy validate`` needs no secrets: a missing API key or header variable is a
warning there, and an error (exit 2, naming the variable) only for a command that calls
that model. Also oxy's semantic-typed workflow variables (``{{ dimensions.month }}``),
which oxy's own example project uses: a warning, not an error.

The project mirrors the situation of oxy's example project: models whose key_var and
header variables are unset, and one workflow with a real undefined reference, which must
be the one error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.suites.validate import validate_paths

from ..conftest import MOCK_CONFIG, MakeProject
from ..fakes import fake_openai

MISSING = ("OXY_T9_KEY", "OXY_T9_HEADER", "OXY_T9_EMBED_KEY", "ANTHROPIC_API_KEY")

CONFIG = """\
models:
  - name: local
    vendor: mock
    outputs: ["42"]
  - name: judge
    vendor: mock
    rules: [{{match: ".", output: "Same.\\nAnswer: A"}}]
  - name: hosted
    vendor: openai
    model_ref: gpt-4o-mini
    key_var: OXY_T9_KEY
  - name: hosted-too
    vendor: openai
    model_ref: gpt-4o
    key_var: OXY_T9_KEY
  - name: with-header
    vendor: openai
    model_ref: m
    api_url: {url}
    headers:
      X-Custom: plain
      X-Secret: {{env_var: OXY_T9_HEADER}}
  - name: claude
    vendor: anthropic
    model_ref: claude-3-5-haiku-latest
embeddings:
  - name: small
    vendor: openai
    key_var: OXY_T9_EMBED_KEY
"""

AGENT = """\
model: {model}
system_instructions: Be brief.
tests:
  - {{type: consistency, name: t, n: 2, task_description: "total?", model_ref: judge}}
"""

SEMANTIC = """\
variables:
  month: "{{ dimensions.month }}"
  platform: "{{ dimensions.platform }}"
tasks:
  - name: ask
    type: agent
    agent_ref: local.agent.yml
    prompt: "Users in {{ month }} on {{ platform }}"
"""

BROKEN = """\
tasks:
  - name: ask
    type: agent
    agent_ref: local.agent.yml
    prompt: "Report {{ table }}"
"""


@pytest.fixture
def project(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in MISSING:
        monkeypatch.delenv(name, raising=False)
    files = {
        f"{model}.agent.yml": AGENT.format(model=model)
        for model in ("local", "hosted", "with-header", "claude")
    }
    files["semantic.workflow.yml"] = SEMANTIC
    return make_project(CONFIG.format(url="http://127.0.0.1:9/v1"), files)


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_missing_secrets_are_warnings_one_per_variable(project: Path) -> None:
    report = validate_paths([str(project)])
    assert report.errors == []
    secret = [d for d in report.warnings if "environment variable" in d.message]
    by_variable = {d.message.split()[2]: d for d in secret}
    assert sorted(by_variable) == sorted(MISSING)
    key = by_variable["OXY_T9_KEY"]
    assert key.file.endswith("config.yml") and (key.key, key.line) == ("models[2].key_var", 11)
    assert "'hosted', 'hosted-too' cannot be called" in key.message
    header = by_variable["OXY_T9_HEADER"]
    assert (header.key, header.line) == ("models[4].headers.X-Secret.env_var", 22)
    assert by_variable["ANTHROPIC_API_KEY"].key == "models[5]"  # the vendor's default variable
    assert by_variable["OXY_T9_EMBED_KEY"].key == "embeddings[0].key_var"


def test_set_variables_give_no_warning(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in MISSING:
        monkeypatch.setenv(name, "set-in-ci-0123")
    report = validate_paths([str(project)])
    assert [d for d in report.warnings if "environment variable" in d.message] == []


def test_the_one_real_error_is_the_undefined_reference(project: Path) -> None:
    """As oxy's example project: secrets unset, semantic variables, one broken workflow."""
    (project / "export.workflow.yml").write_text(BROKEN, encoding="utf-8")
    result = invoke("validate", str(project), "--format", "json")
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert [(Path(e["file"]).name, e["key"]) for e in doc["errors"]] == [
        ("export.workflow.yml", "tasks[0].prompt")
    ]
    assert "unknown reference 'table'" in doc["errors"][0]["message"]
    semantic = [w for w in doc["warnings"] if "semantic layer" in w["message"]]
    assert [w["key"] for w in semantic] == ["variables.month", "variables.platform"]
    (project / "export.workflow.yml").unlink()
    clean = invoke("validate", str(project))
    assert clean.exit_code == 0, clean.output
    assert "0 error(s)" in clean.stdout and "OXY_T9_KEY is not set" in clean.stderr


def test_commands_that_do_not_call_the_model_need_no_secret(project: Path) -> None:
    result = invoke("test", str(project / "local.agent.yml"), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["accuracy"] == 1.0
    # A semantic-typed variable is given on the command line, as the warning says.
    run = invoke(
        "run",
        str(project / "semantic.workflow.yml"),
        "--var",
        "month=2026-10",
        "--var",
        "platform=web",
    )
    assert run.exit_code == 0, run.output
    missing = invoke("run", str(project / "semantic.workflow.yml"))
    assert missing.exit_code == 2 and "no value for variable(s) month, platform" in missing.stderr


@pytest.mark.parametrize(
    ("agent", "variable", "where"),
    [
        ("hosted", "OXY_T9_KEY", "config.yml:11:14: models[2].key_var"),
        ("with-header", "OXY_T9_HEADER", "config.yml:22:27: models[4].headers.X-Secret.env_var"),
        ("claude", "ANTHROPIC_API_KEY", "config.yml:23:5: models[5]"),
    ],
)
def test_a_command_that_calls_the_model_stops_naming_the_variable(
    project: Path, agent: str, variable: str, where: str
) -> None:
    result = invoke("test", str(project / f"{agent}.agent.yml"))
    assert result.exit_code == 2
    assert f"{where}: model '{agent}'" in result.stderr
    assert f"environment variable {variable}" in result.stderr
    assert "which is not set" in result.stderr


def test_a_header_variable_is_read_when_the_model_is_called(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OXY_T9_HEADER", raising=False)
    with fake_openai("42") as server:
        root = make_project(
            CONFIG.format(url=server.url),
            {"a.agent.yml": AGENT.format(model="with-header")},
        )
        monkeypatch.setenv("OXY_T9_HEADER", "header-secret-value")
        result = invoke("test", str(root / "a.agent.yml"), "--format", "json")
    assert result.exit_code == 0, result.output
    assert {r.headers.get("x-secret") for r in server.requests} == {"header-secret-value"}
    assert {r.headers.get("x-custom") for r in server.requests} == {"plain"}
    assert "header-secret-value" not in result.output  # registered as a secret


@pytest.mark.parametrize(
    ("history", "severity", "message"),
    [
        ("url: mysql://x/y", "error", "unsupported URL scheme 'mysql'"),
        ("url: postgresql://u:pw12345678@h/db", "error", "history.url contains a password"),
        (
            "{url: postgresql://u@h/db, password_var: OXY_TEST_UNSET_PW}",
            "warning",
            "OXY_TEST_UNSET_PW",
        ),
    ],
)
def test_validate_checks_the_history_entry_as_the_commands_do(
    make_project: MakeProject, history: str, severity: str, message: str
) -> None:
    from oxyeval.suites.validate import validate_paths

    root = make_project(
        MOCK_CONFIG + f"history: {history}\n"
        if history.startswith("{")
        else MOCK_CONFIG + f"history:\n  {history}\n"
    )
    report = validate_paths([], project_dir=str(root))
    found = [d for d in report.diagnostics if message in d.message]
    assert found and found[0].severity == severity, report.diagnostics
    assert found[0].line is not None and "pw12345678" not in found[0].format()
