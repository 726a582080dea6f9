"""The ``oxy`` command: exit codes, pure-JSON stdout, one-paragraph errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..fakes import fake_openai

CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: ["Total: 42", "Total is 42", "Total: 99 (XYZ)"]
  - name: judge
    vendor: mock
    rules:
      - match: "XYZ"
        output: "They differ.\\nAnswer: B"
      - match: "."
        output: "Same.\\nAnswer: A"
"""

# n=3 all pairs: (1,2) A, (1,3) B, (2,3) B -> 1/3.   n=2: (1,2) A -> 1.0
AGENT = """\
model: analyst
system_instructions: Be brief.
tests:
  - type: consistency
    name: two runs
    n: 2
    task_description: total?
    model_ref: judge
  - type: consistency
    name: three runs
    n: 3
    task_description: total again?
    model_ref: judge
    concurrency: 1
"""


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner(env=env).invoke(app, list(args))


@pytest.fixture
def agent_file(make_project: MakeProject) -> Path:
    return make_project(CONFIG, {"a.agent.yml": AGENT}) / "a.agent.yml"


def test_pass_exit_0_and_pretty_accuracy(agent_file: Path) -> None:
    result = invoke("test", str(agent_file), "--min-accuracy", "0.3")
    assert result.exit_code == 0, result.stderr
    assert "Accuracy: 100.00%" in result.stdout
    assert "Accuracy: " in result.stdout
    assert "Average accuracy 66.67% meets threshold 30.00%" in result.stdout


def test_json_stdout_is_one_document(agent_file: Path) -> None:
    result = invoke("test", str(agent_file), "--format", "json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)  # nothing but JSON on stdout
    assert isinstance(doc["accuracy"], list) and len(doc["accuracy"]) == 2
    first, second = doc["tests"]
    assert doc["accuracy"] == [first["accuracy"], second["accuracy"]]
    assert second["accuracy"] == pytest.approx(1 / 3, abs=1e-6)
    assert second["pairs"] == 3 and second["judgeCalls"] == 3
    assert second["selected"]["run"] == 1
    assert {tuple(c["runs"]) for c in second["failingComparisons"]} == {(1, 3), (2, 3)}
    assert all(c["reasoning"] == "They differ." for c in second["failingComparisons"])
    assert doc["decision"]["threshold"] is None and doc["decision"]["drop"] is None  # always
    assert doc["warnings"] == [] and doc["error"] is None


def test_single_test_accuracy_is_a_number(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG, {"a.agent.yml": AGENT.split("  - type: consistency\n    name: three")[0]}
    )
    doc = json.loads(invoke("test", str(root / "a.agent.yml"), "--format", "json").stdout)
    assert doc["accuracy"] == 1.0


def test_below_threshold_average_exit_1(agent_file: Path) -> None:
    result = invoke("test", str(agent_file), "--format", "json", "--min-accuracy", "0.8")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["decision"]["threshold"]["passed"] is False
    assert doc["decision"]["threshold"]["value"] == pytest.approx(2 / 3, abs=1e-6)
    assert "Average accuracy 66.67% below threshold 80.00%" in result.stderr


def test_threshold_all_lists_failing_tests(agent_file: Path) -> None:
    result = invoke(
        "test", str(agent_file), "--min-accuracy", "0.5", "--threshold-mode", "all", "-q"
    )
    assert result.exit_code == 1
    assert "1 test(s) below threshold 50.00%: three runs: 33.33%" in result.stdout
    assert "two runs" not in result.stdout.split("below threshold")[1]


def test_min_accuracy_out_of_range_is_exit_2(agent_file: Path) -> None:
    result = invoke("test", str(agent_file), "--min-accuracy", "1.5", "--format", "json")
    assert result.exit_code == 2
    assert "--min-accuracy must be between 0 and 1" in result.stderr
    assert json.loads(result.stdout)["error"].endswith("got 1.5")


def test_bad_yaml_exit_2_with_file_line(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": "model: analyst\nsystem_instructions: [unclosed\n"})
    result = invoke("test", str(root / "a.agent.yml"), "--format", "json")
    assert result.exit_code == 2
    assert "a.agent.yml:3:1: YAML syntax error" in result.stderr or "a.agent.yml:" in result.stderr
    assert "Traceback" not in result.stderr
    doc = json.loads(result.stdout)
    assert doc["document"] == "error" and "YAML syntax error" in doc["error"]


def test_schema_error_exit_2_names_key(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT.replace("    n: 2\n", "    n: two\n")})
    result = invoke("test", str(root / "a.agent.yml"))
    assert result.exit_code == 2
    assert "a.agent.yml:6:8: tests[0].n: expected an integer, got string 'two'" in result.stderr


def test_missing_file_exit_2() -> None:
    result = invoke("test", "does/not/exist.agent.yml")
    assert result.exit_code == 2
    assert "file not found" in result.stderr


def test_missing_key_var_exit_2(make_project: MakeProject) -> None:
    config = (
        CONFIG
        + "  - name: remote\n    vendor: openai\n    model_ref: m\n    key_var: OXY_CLI_TEST_KEY\n"
    )
    root = make_project(config, {"a.agent.yml": AGENT.replace("model: analyst", "model: remote")})
    env = {k: v for k, v in os.environ.items() if k != "OXY_CLI_TEST_KEY"}
    result = invoke("test", str(root / "a.agent.yml"), env={**env, "OXY_CLI_TEST_KEY": ""})
    assert result.exit_code == 2
    assert "OXY_CLI_TEST_KEY" in result.stderr


def test_unscorable_test_exit_3(make_project: MakeProject) -> None:
    config = CONFIG.replace(
        'outputs: ["Total: 42", "Total is 42", "Total: 99 (XYZ)"]',
        'rules:\n      - match: "."\n        error: "provider down"',
    )
    root = make_project(config, {"a.agent.yml": AGENT})
    result = invoke("test", str(root / "a.agent.yml"), "--format", "json", "--min-accuracy", "0.1")
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert doc["accuracy"] == [None, None]
    assert all(t["status"] == "error" for t in doc["tests"])
    assert doc["tests"][0]["failedRuns"][0]["error"].endswith("(mock): provider down")
    assert doc["decision"]["threshold"]["passed"] is False  # an unscored test never passes


def test_strict_turns_partial_failures_into_exit_3(make_project: MakeProject) -> None:
    config = CONFIG.replace(
        '      - match: "XYZ"\n        output: "They differ.\\nAnswer: B"',
        '      - match: "XYZ"\n        error: "judge overloaded"',
    )
    # 1 of the 3 pairs judged: below the default min_judged (50%), so lowered here to
    # test --strict alone (test_judge_scoring.py tests min_judged itself).
    agent = AGENT.replace("    concurrency: 1\n", "    concurrency: 1\n    min_judged: 0.3\n")
    root = make_project(config, {"a.agent.yml": agent})
    assert invoke("test", str(root / "a.agent.yml"), "-q").exit_code == 0
    result = invoke("test", str(root / "a.agent.yml"), "-q", "--strict")
    assert result.exit_code == 3


def test_a_gate_with_nothing_to_gate_fails_unless_allowed(make_project: MakeProject) -> None:
    """An empty selection in CI must not be a green build."""
    root = make_project(CONFIG, {"a.agent.yml": "model: analyst\nsystem_instructions: hi\n"})
    agent = str(root / "a.agent.yml")
    result = invoke("test", agent, "--min-accuracy", "0.9", "--format", "json")
    assert result.exit_code == 1
    assert "nothing was tested" in result.stderr and "--allow-empty" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["accuracy"] == [] and doc["summary"]["exitCode"] == 1
    pretty = invoke("test", agent, "--fail-on-drop", "5")
    assert pretty.exit_code == 1 and "No consistency tests found" in pretty.stdout
    assert "error: nothing was tested, so the gates (--fail-on-drop 5)" in pretty.stderr
    allowed = invoke("test", agent, "--min-accuracy", "0.9", "--allow-empty", "--format", "json")
    assert allowed.exit_code == 0
    assert "no accuracy metrics" in allowed.stderr
    assert invoke("test", agent).exit_code == 0  # no gate: nothing to fail
    saved = root / "empty.json"
    saved.write_text(allowed.stdout)
    assert invoke("report", str(saved), "--min-accuracy", "0.5").exit_code == 1
    assert invoke("report", str(saved), "--min-accuracy", "0.5", "--allow-empty").exit_code == 0


def test_validate_exit_codes(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": AGENT})
    ok = invoke("validate", str(root))
    assert ok.exit_code == 0, ok.stderr
    assert "2 file(s) checked: 0 error(s)" in ok.stdout
    (root / "b.agent.yml").write_text("model: analyst\nsystem_instrutions: x\npublic: true\n")
    bad = invoke("validate", str(root), "--format", "json")
    assert bad.exit_code == 2
    doc = json.loads(bad.stdout)
    assert doc["valid"] is False
    keys = {(e["key"], e["line"]) for e in doc["errors"]}
    assert ("system_instrutions", 2) in keys
    assert [w["key"] for w in doc["warnings"]] == ["public"]


def test_schema_command() -> None:
    result = invoke("schema", "agent")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["title"].startswith("oxyeval agent")
    path = invoke("schema", "config", "--path").stdout.strip()
    assert Path(path).is_file()
    assert invoke("schema", "nope").exit_code == 2


def _oxy(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oxyeval", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_real_process_against_openai_compatible_server(make_project: MakeProject) -> None:
    """The whole path a user takes: a project pointing at a local OpenAI-style server."""
    answers = iter(["The total is 42.", "Total: 42", "The total is 42."] * 10)

    def answer(request) -> str:
        last = request.body["messages"][-1]["content"]
        if "[Submission 1]" in last:  # the built-in judge prompt
            return "Both state a total of 42.\n**Answer:** A"
        return next(answers)

    with fake_openai(answer) as server:
        config = (
            "models:\n  - name: local\n    vendor: openai\n    model_ref: llama3\n"
            f"    api_url: {server.url}\n    key_var: OXY_E2E_KEY\n"
        )
        agent = (
            "model: local\nsystem_instructions: Answer briefly.\ntests:\n"
            "  - type: consistency\n    n: 3\n    task_description: What is the total?\n"
        )
        root = make_project(config, {"agents/sum.agent.yml": agent})
        proc = _oxy(
            "test",
            "agents/sum.agent.yml",
            "--format",
            "json",
            "--min-accuracy",
            "0.9",
            cwd=root,
            env={"OXY_E2E_KEY": "sk-e2e-secret-value"},
        )
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["accuracy"] == 1.0
    assert doc["tests"][0]["judgeCalls"] == 1  # two distinct texts -> one judge call
    assert len(requests) == 4
    assert all(r.headers["authorization"] == "Bearer sk-e2e-secret-value" for r in requests)
    assert requests[0].body["messages"][0] == {"role": "system", "content": "Answer briefly."}
    assert "sk-e2e-secret-value" not in proc.stdout + proc.stderr


def test_real_process_401_is_exit_3_without_key_or_traceback(make_project: MakeProject) -> None:
    with fake_openai(api_key="sk-the-right-one") as server:
        config = (
            "models:\n  - name: hosted\n    vendor: openai\n    model_ref: gpt-x\n"
            f"    api_url: {server.url}\n    key_var: OXY_E2E_KEY\n"
        )
        agent = "model: hosted\nsystem_instructions: hi\ntests:\n  - type: consistency\n    n: 2\n    task_description: q\n"
        root = make_project(config, {"a.agent.yml": agent})
        proc = _oxy("test", "a.agent.yml", cwd=root, env={"OXY_E2E_KEY": "sk-wrong-key-12345"})
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr
    assert "HTTP 401" in proc.stdout + proc.stderr
    assert "OXY_E2E_KEY" in proc.stdout + proc.stderr
    assert "sk-wrong-key-12345" not in proc.stdout + proc.stderr


def test_validate_checks_agents_even_when_config_is_broken(make_project: MakeProject) -> None:
    root = make_project(
        "models:\n  - name: a\n    vendor: mock\n    outputs: [x]\n    colour: red\n",
        {"a.agent.yml": "model: a\nsystem_instructions: hi\nmodle: x\n"},
    )
    result = invoke("validate", str(root), "--format", "json")
    assert result.exit_code == 2
    keys = {(Path(e["file"]).name, e["key"]) for e in json.loads(result.stdout)["errors"]}
    assert keys == {("config.yml", "models[0].colour"), ("a.agent.yml", "modle")}


def test_routing_agent_validates_with_warning_but_cannot_be_tested(
    make_project: MakeProject,
) -> None:
    agent = (
        "model: analyst\ntype: routing\nroutes: ['*.sql']\ntests:\n"
        "  - type: consistency\n    n: 2\n    task_description: q\n"
    )
    root = make_project(CONFIG, {"r.agent.yml": agent})
    checked = invoke("validate", str(root / "r.agent.yml"))
    assert checked.exit_code == 0
    assert "routing agents are not supported" in checked.stderr
    tested = invoke("test", str(root / "r.agent.yml"))
    assert tested.exit_code == 2
    assert (
        "routing agents are not supported by oxyeval yet, so their tests cannot run"
        in tested.stderr
    )


def test_line_100_is_not_an_emoji(make_project: MakeProject) -> None:
    padding = "".join(f"# line {k}\n" for k in range(99))
    root = make_project(
        CONFIG, {"a.agent.yml": padding + "public: true\nmodel: analyst\nsystem_instructions: hi\n"}
    )
    result = invoke("validate", str(root / "a.agent.yml"))
    assert "a.agent.yml:100:1: public" in result.stderr


def test_validate_checks_prompt_and_cases_files(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"p.prompt.yml": "model: analyst\ntemplat: x\n"})
    result = invoke("validate", str(root), "--format", "json")
    assert result.exit_code == 2
    keys = {(Path(e["file"]).name, e["key"]) for e in json.loads(result.stdout)["errors"]}
    assert ("p.prompt.yml", "templat") in keys


def test_validate_with_a_missing_project_folder_checks_nothing_else(tmp_path: Path) -> None:
    # A typo in --project must not fall back to the parent folder ('/': the whole disk).
    result = invoke("validate", "--project", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert f"--project {tmp_path / 'nope'}: no such folder" in result.output


def test_the_threshold_line_is_said_once_on_one_terminal(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """on a terminal the report already ends with the failed gate (✗);
    in logs and pipes stderr says it too."""
    from oxyeval.cli import driver as verdict

    root = make_project(CONFIG, {"a.agent.yml": AGENT})
    piped = invoke("test", str(root / "a.agent.yml"), "--min-accuracy", "1.01")
    assert piped.exit_code == 2  # out of range: bad input
    monkeypatch.setattr(verdict, "same_terminal", lambda: False)
    logged = invoke("test", str(root / "a.agent.yml"), "--min-accuracy", "0.99", "--no-history")
    line = next(x for x in logged.stdout.splitlines() if x.startswith("✗"))
    assert line[2:] in logged.stderr
    monkeypatch.setattr(verdict, "same_terminal", lambda: True)
    screen = invoke("test", str(root / "a.agent.yml"), "--min-accuracy", "0.99", "--no-history")
    assert screen.exit_code == logged.exit_code == 1
    assert line[2:] not in screen.stderr and line in screen.stdout
