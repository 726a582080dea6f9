"""`oxy run` and `oxy compile`, and `oxy test` on workflow files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: m
    vendor: mock
    outputs: ["Sales were 40.", "Sales totalled 40.", "Sales were 99."]
  - name: judge
    vendor: mock
    rules:
      - {match: "99", output: "Different.\\nAnswer: B"}
      - {match: ".", output: "Same.\\nAnswer: A"}
  - name: broken
    vendor: mock
    rules:
      - {match: ".", error: "service unavailable"}
databases:
  - {name: shop, type: duckdb, dataset: data}
"""
FILES = {
    "data/sales.csv": "region,amount\nNorth,15\nSouth,25\n",
    "a.agent.yml": "model: m\nsystem_instructions: brief\n",
    "broken.agent.yml": "model: broken\nsystem_instructions: brief\n",
}
WORKFLOW = """\
variables:
  region: {type: string, default: North}
tasks:
  - {name: total, type: execute_sql, database: shop, sql_query: "SELECT SUM(amount) AS s FROM sales.csv WHERE region = '{{ region }}'"}
  - {name: say, type: agent, agent_ref: a.agent.yml, prompt: "Total for {{ region }}: {{ total.s[0] }}"}
  - {name: out, type: formatter, template: "{{ region }}={{ total.s[0] }}; {{ say }}"}
tests:
  - type: consistency
    task_ref: say
    n: 3
    model_ref: judge
"""


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def project(make_project: MakeProject) -> Path:
    return make_project(CONFIG, {**FILES, "w.workflow.yml": WORKFLOW})


def test_run_prints_final_output_and_progress(project: Path) -> None:
    result = invoke("run", str(project / "w.workflow.yml"), "--var", "region=South")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "South=25; Sales were 40.\n"
    assert "✓ total" in result.stderr and "✓ out" in result.stderr


def test_run_json_has_every_task(project: Path, tmp_path: Path) -> None:
    vars_file = tmp_path / "vars.yml"
    vars_file.write_text("region: North\n")
    result = invoke(
        "run", str(project / "w.workflow.yml"), "--vars", str(vars_file), "--format", "json", "-q"
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["status"] == "succeeded" and doc["summary"]["exitCode"] == 0
    assert doc["output"] == "North=15; Sales were 40."
    tasks = {t["path"]: t for t in doc["tasks"]}
    assert tasks["total"]["output"] == {"columns": ["s"], "rows": [{"s": 15}]}
    assert all(t["status"] == "succeeded" and t["durationS"] >= 0 for t in tasks.values())
    assert result.stderr == ""  # -q: no progress


def test_run_failure_exit_3_with_summary_and_json(make_project: MakeProject) -> None:
    workflow = """\
    tasks:
      - {name: ask, type: agent, agent_ref: broken.agent.yml, prompt: hi}
      - {name: after, type: formatter, template: "{{ ask }}"}
      - {name: other, type: formatter, template: "fine"}
    """
    root = make_project(CONFIG, {**FILES, "w.workflow.yml": workflow})
    result = invoke("run", str(root / "w.workflow.yml"), "--format", "json")
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert doc["status"] == "failed" and doc["summary"]["exitCode"] == 3
    assert doc["failedTasks"][0]["task"] == "ask"
    statuses = {t["path"]: t["status"] for t in doc["tasks"]}
    assert statuses == {"ask": "failed", "after": "skipped", "other": "succeeded"}
    assert "task 'ask' failed" in result.stderr and "service unavailable" in result.stderr


def test_run_bad_variable_is_exit_2(project: Path) -> None:
    result = invoke("run", str(project / "w.workflow.yml"), "--var", "regio=South")
    assert result.exit_code == 2
    assert "unknown variable(s) regio" in result.stderr
    result = invoke("run", str(project / "w.workflow.yml"), "--var", "oops")
    assert result.exit_code == 2
    assert "expected NAME=VALUE" in result.stderr


def test_run_agent_with_question(project: Path) -> None:
    result = invoke("run", str(project / "a.agent.yml"), "--question", "Total?", "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["output"] == "Sales were 40." and doc["toolCalls"] == []
    missing = invoke("run", str(project / "a.agent.yml"))
    assert missing.exit_code == 2 and "--question" in missing.stderr


def test_compile_text_and_mermaid(project: Path) -> None:
    text = invoke("compile", str(project / "w.workflow.yml"))
    assert text.exit_code == 0
    assert "level 1: total (execute_sql)" in text.stdout
    assert "out <- say, total" in text.stdout
    chart = invoke("compile", str(project / "w.workflow.yml"), "--mermaid")
    assert "total --> say" in chart.stdout


def test_compile_cycle_is_exit_2(make_project: MakeProject) -> None:
    workflow = "tasks:\n  - {name: a, type: formatter, template: '{{ b }}'}\n  - {name: b, type: formatter, template: '{{ a }}'}\n"
    root = make_project(CONFIG, {**FILES, "w.workflow.yml": workflow})
    result = invoke("compile", str(root / "w.workflow.yml"))
    assert result.exit_code == 2
    assert (
        "dependency cycle: a --> b --> a" in result.stderr
        or "dependency cycle: b --> a --> b" in result.stderr
    )


def test_oxy_test_on_a_workflow(project: Path) -> None:
    result = invoke("test", str(project / "w.workflow.yml"), "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    (test,) = doc["tests"]
    # The three workflow runs (concurrent, so in any order) get the agent's three scripted answers.
    texts = sorted(o["text"] for o in test["outputs"])
    assert texts == ["Sales totalled 40.", "Sales were 40.", "Sales were 99."]
    assert test["accuracy"] == pytest.approx(1 / 3, abs=1e-6)
    assert test["model"] == "workflow"
    assert "Total for" in test["taskDescription"]  # the agent task's prompt, as oxy does


def test_oxy_test_workflow_task_ref_must_exist(make_project: MakeProject) -> None:
    root = make_project(
        CONFIG, {**FILES, "w.workflow.yml": WORKFLOW.replace("task_ref: say", "task_ref: sya")}
    )
    result = invoke("test", str(root / "w.workflow.yml"))
    assert result.exit_code == 2
    assert "unknown task 'sya'; did you mean 'say'?" in result.stderr


def test_validate_compiles_workflows(make_project: MakeProject) -> None:
    workflow = "tasks:\n  - {name: a, type: formatter, template: '{{ totl }}'}\n  - {name: total, type: formatter, template: x}\n"
    root = make_project(CONFIG, {**FILES, "w.workflow.yml": workflow})
    result = invoke("validate", str(root / "w.workflow.yml"))
    assert result.exit_code == 2
    assert "unknown reference 'totl'" in result.stderr and "did you mean 'total'?" in result.stderr


def test_a_run_that_used_duckdb_ends_with_a_clean_stderr(make_project: MakeProject) -> None:
    """The process-exit shortcut (gc.freeze) must not make DuckDB's bindings report its
    live objects as leaks: 40 lines of noise after every README example."""
    import os
    import subprocess
    import sys

    root = make_project(
        "models:\n  - {name: m, vendor: mock, outputs: [x]}\n"
        "databases:\n  - {name: db, type: duckdb, dataset: data}\n",
        {
            "data/t.csv": "a\n1\n",
            "w.workflow.yml": "tasks:\n  - {name: q, type: execute_sql, database: db, "
            "sql_query: \"SELECT a FROM 't.csv'\"}\n",
        },
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [sys.executable, "-m", "oxyeval", "run", "w.workflow.yml", "-q", "--no-history"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "leaked" not in proc.stderr and "nanobind" not in proc.stderr


def test_run_prints_a_models_escape_sequences_as_text(make_project: MakeProject) -> None:
    root = make_project(
        'models:\n  - {name: m, vendor: mock, outputs: ["\\e]0;PWNED\\a\\e[2Jcleared"]}\n',
        {"a.agent.yml": "model: m\nsystem_instructions: hi\n"},
    )
    result = invoke("run", str(root / "a.agent.yml"), "--question", "hi", "--no-history")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\\x1b]0;PWNED\\x07\\x1b[2Jcleared" in result.stdout
    as_json = invoke(
        "run", str(root / "a.agent.yml"), "--question", "hi", "--no-history", "--format", "json"
    )
    assert json.loads(as_json.stdout)["output"] == "\x1b]0;PWNED\x07\x1b[2Jcleared"
