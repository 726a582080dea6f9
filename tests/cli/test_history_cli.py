"""`oxy test` against its history (previous results, --fail-on-drop, --no-history), `oxy run`
stored, and `oxy history` listing every kind of run and one test over time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

from ..conftest import MakeProject
from ..suites.test_cases_run import PROMPT

CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: {outputs}
  - name: judge
    vendor: mock
    rules:
      - {match: "XYZ", output: "They differ.\\nAnswer: B"}
      - {match: ".", output: "Same.\\nAnswer: A"}
  - name: m
    vendor: mock
    rules:
      - {match: "love", output: "positive"}
      - {match: "hate", output: "Negative"}
      - {match: ".", output: "neutral"}
"""
SAME = '["Total: 42"]'
SPLIT = '["Total: 42", "Total is 42", "Total: 42.", "Total: 99 (XYZ)"]'  # accuracy 0.5 at n=4
AGENT = """\
model: analyst
system_instructions: Be brief.
tests:
  - {type: consistency, name: totals, n: 4, task_description: "total?", model_ref: judge}
"""
WORKFLOW = """\
tasks:
  - {name: ask, type: agent, agent_ref: a.agent.yml, prompt: "total?"}
"""


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def configure(root: Path, outputs: str) -> None:
    (root / "config.yml").write_text(CONFIG.replace("{outputs}", outputs))


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(
        CONFIG.replace("{outputs}", SAME),
        {"a.agent.yml": AGENT, "s.prompt.yml": PROMPT, "w.workflow.yml": WORKFLOW},
    )
    monkeypatch.chdir(project)
    monkeypatch.delenv("OXY_DB", raising=False)
    return project


def test_pretty_and_json_show_the_change_against_the_previous_run(root: Path) -> None:
    first = invoke("test", "a.agent.yml", "--format", "json")
    assert first.exit_code == 0, first.stderr
    doc = json.loads(first.stdout)
    assert doc["tests"][0]["previous"] is None  # the first run of this test
    (stored,) = doc["history"]
    assert stored["stored"] == 1 and stored["error"] is None
    configure(root, SPLIT)
    pretty = invoke("test", "a.agent.yml")
    assert pretty.exit_code == 0, pretty.stderr
    when = re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", pretty.stdout)
    assert when is not None  # to the minute, zone named: two runs of a day differ
    assert f"Accuracy: 50.00% (−50.0 pts vs {when.group(0)})" in pretty.stdout
    again = json.loads(invoke("test", "a.agent.yml", "--format", "json").stdout)
    previous = again["tests"][0]["previous"]
    assert previous["accuracy"] == 0.5 and previous["at"][:10] == when.group(0)[:10]
    assert previous["runId"] != stored["runId"]  # the latest run, not the first
    keys = list(again["tests"][0])
    assert keys.index("previous") == keys.index("accuracy") + 1


def test_fail_on_drop_exits_1_naming_the_tests_that_dropped(root: Path) -> None:
    no_previous = invoke("test", "a.agent.yml", "--fail-on-drop", "5")
    assert no_previous.exit_code == 0, no_previous.stderr  # nothing to compare with yet
    assert "no earlier run to compare with" in no_previous.stdout
    assert "✅" not in no_previous.stdout  # a first run proves nothing: no green tick
    configure(root, SPLIT)
    dropped = invoke("test", "a.agent.yml", "--fail-on-drop", "5", "--format", "json")
    assert dropped.exit_code == 1
    assert "1 test(s) dropped more than 5 pts: totals: 100.0% -> 50.0% (-50.0 pts vs" in (
        dropped.stderr
    )
    doc = json.loads(dropped.stdout)
    check = doc["decision"]["drop"]
    assert check["passed"] is False and check["dropped"][0]["name"] == "totals"
    assert check["dropped"][0]["change"] == -50.0 and doc["summary"]["exitCode"] == 1
    # 0.5 -> 0.5: no drop. A threshold that fails too gives 1 with both messages.
    assert invoke("test", "a.agent.yml", "--fail-on-drop", "5").exit_code == 0
    configure(root, SAME)
    assert invoke("test", "a.agent.yml", "--fail-on-drop", "0").exit_code == 0  # rose
    configure(root, SPLIT)
    both = invoke("test", "a.agent.yml", "--fail-on-drop", "60", "--min-accuracy", "0.9")
    assert both.exit_code == 1 and "below threshold" in both.stderr
    assert "dropped" not in both.stderr  # -50 pts is within 60


def test_fail_on_drop_options_and_a_history_that_cannot_be_read(root: Path, tmp_path: Path) -> None:
    no_history = invoke("test", "a.agent.yml", "--fail-on-drop", "5", "--no-history")
    assert no_history.exit_code == 2 and "--no-history" in no_history.stderr
    out_of_range = invoke("test", "a.agent.yml", "--fail-on-drop", "150", "--format", "json")
    assert out_of_range.exit_code == 2 and "percentage points" in out_of_range.stderr
    assert json.loads(out_of_range.stdout)["exitCode"] == 2
    # A folder is no database: the results are still printed, the history error is a
    # warning, and only a gate that needs the history turns the run red (exit 3).
    broken = invoke("test", "a.agent.yml", "--db", str(tmp_path), "--format", "json")
    assert broken.exit_code == 0
    assert f"warning: history not stored in {tmp_path}" in broken.stderr
    doc = json.loads(broken.stdout)
    assert doc["accuracy"] == 1.0 and "is a directory" in doc["history"][0]["error"]
    gated = invoke("test", "a.agent.yml", "--db", str(tmp_path), "--fail-on-drop", "5")
    assert gated.exit_code == 3
    assert "cannot compare with the previous runs" in gated.stderr


def test_no_history_writes_nothing(root: Path) -> None:
    result = invoke("test", "a.agent.yml", "--no-history", "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["history"] == [] and doc["tests"][0]["previous"] is None
    ran = invoke("run", "w.workflow.yml", "--no-history")
    assert ran.exit_code == 0 and ran.stdout.strip() == "Total: 42"
    assert not (root / ".oxy").exists()


def test_history_lists_test_case_and_workflow_runs(root: Path) -> None:
    assert invoke("cases", "run", "--case", "happy").exit_code == 0
    assert invoke("test", "a.agent.yml").exit_code == 0
    assert invoke("run", "w.workflow.yml", "-q").exit_code == 0
    runs = json.loads(invoke("history", "--json").stdout)["runs"]
    assert [r["kind"] for r in runs] == ["workflow", "consistency", "cases"]
    workflow, test, cases = runs
    for key in ("id", "promptId", "startedAt", "status", "total", "done", "passed", "regressions"):
        assert all(key in r for r in runs)  # the keys the seed's API always had
    assert cases["promptId"] == "sentiment" and cases["passed"] == 1 and "consistency" not in cases
    assert cases["subject"] == "s.prompt.yml"  # the prompt's file, in the project
    assert test["subject"] == "a.agent.yml" and test["status"] == "completed"
    assert test["consistency"] == {
        "tests": 1,
        "scored": 1,
        "errors": 0,
        "interrupted": 0,
        "averageAccuracy": 1.0,
    }
    assert workflow["subject"] == "w.workflow.yml" and workflow["done"] == 1
    pretty = invoke("history").stdout
    assert "kind" in pretty and "consistency" in pretty and "accuracy 100.0% (1 scored)" in pretty
    assert "sentiment v1" in pretty and "1 passed, 0 failed" in pretty
    only = json.loads(invoke("history", "--kind", "consistency", "--json").stdout)["runs"]
    assert [r["id"] for r in only] == [test["id"]]
    assert invoke("history", "--kind", "nope").exit_code == 2


def test_history_of_one_test_has_a_sparkline(root: Path) -> None:
    for outputs in (SAME, SPLIT, SAME):
        configure(root, outputs)
        assert invoke("test", "a.agent.yml").exit_code == 0
    pretty = invoke("history", "--test", "totals")
    assert pretty.exit_code == 0, pretty.stderr
    assert "a.agent.yml · totals" in pretty.stdout
    assert "accuracy over 3 run(s)" in pretty.stdout and "█▄█" in pretty.stdout
    assert "+50.0 pts" in pretty.stdout and "−50.0 pts" in pretty.stdout
    doc = json.loads(invoke("history", "--test", "totals", "--json").stdout)
    assert doc["test"] == {"file": "a.agent.yml", "name": "totals"}
    assert [r["accuracy"] for r in doc["results"]] == [1.0, 0.5, 1.0]  # newest first
    assert doc["results"][0]["judgeCalls"] == 0 and doc["results"][1]["pairsJudged"] == 6
    limited = json.loads(invoke("history", "--test", "totals", "--limit", "1", "--json").stdout)
    assert len(limited["results"]) == 1
    by_file = invoke("history", "--test", "totals", "--file", str(root / "a.agent.yml"))
    assert by_file.exit_code == 0 and "█▄█" in by_file.stdout


def test_history_of_a_test_name_that_is_unknown_or_ambiguous(root: Path) -> None:
    fresh = invoke("history", "--test", "totals")  # no history yet: a read creates none
    assert fresh.exit_code == 2 and "no test results are stored yet" in fresh.stderr
    assert not (root / ".oxy").exists()
    (root / "b.agent.yml").write_text(AGENT)
    assert invoke("test", "a.agent.yml", "b.agent.yml").exit_code == 0
    unknown = invoke("history", "--test", "nope", "--json")
    assert unknown.exit_code == 2 and "'totals' (a.agent.yml)" in unknown.stderr
    assert json.loads(unknown.stdout)["exitCode"] == 2
    ambiguous = invoke("history", "--test", "totals")
    assert ambiguous.exit_code == 2 and "a.agent.yml, b.agent.yml; pick one with --file" in (
        ambiguous.stderr
    )
    picked = json.loads(
        invoke("history", "--test", "totals", "--file", "b.agent.yml", "--json").stdout
    )
    assert picked["test"]["file"] == "b.agent.yml" and len(picked["results"]) == 1
    assert invoke("history", "--file", "a.agent.yml").exit_code == 2  # --file needs --test


def test_history_limit_has_a_maximum(make_project: MakeProject) -> None:
    from typer.testing import CliRunner

    from oxyeval.cli._app import app

    root = make_project()
    result = CliRunner().invoke(app, ["history", "--project", str(root), "--limit", "10001"])
    assert result.exit_code == 2 and "--limit" in result.output


def test_history_kind_test_is_the_kind_the_table_shows(make_project: MakeProject) -> None:
    from oxyeval.suites.history_queries import recent_runs

    assert recent_runs(None, kind="test").runs == []  # accepted: the table's name for it
    with pytest.raises(Exception, match=r"--kind must be one of .* \(or test\)"):
        recent_runs(None, kind="tests")


def test_a_stored_workflow_run_is_read_back(make_project: MakeProject) -> None:
    """the listing points at a stored workflow run, and --run shows its
    variables, tasks and output (pretty and JSON, one shape for its results)."""
    from ..suites.test_stored_results import WORKFLOW, WORKFLOW_CONFIG

    root = make_project(
        WORKFLOW_CONFIG,
        {"a.agent.yml": "model: m\nsystem_instructions: x\n", "w.workflow.yml": WORKFLOW},
    )
    project = str(root)
    ran = invoke("run", str(root / "w.workflow.yml"), "--var", "topic=costs", "--project", project)
    assert ran.exit_code == 0, ran.stderr
    listing = invoke("history", "--project", project, "--format", "json")
    run_id = json.loads(listing.stdout)["runs"][0]["id"]
    table = invoke("history", "--project", project)
    assert f"oxy history --run {run_id[:8]}" in table.stdout
    shown = invoke("history", "--project", project, "--run", run_id[:8])
    assert shown.exit_code == 0, shown.stderr
    assert '"topic": "costs"' in shown.stdout and "Report: answer" in shown.stdout
    assert " ask " in shown.stdout and " report " in shown.stdout
    doc = json.loads(invoke("history", "--project", project, "--run", run_id, "--json").stdout)
    assert doc["run"]["id"] == run_id and doc["workflow"]["variables"] == {"topic": "costs"}
    assert [t["path"] for t in doc["workflow"]["tasks"]] == ["ask", "report"]
    (result,) = doc["results"]
    assert (result["kind"], result["status"], result["runId"]) == ("workflow", "completed", run_id)
    unknown = invoke("history", "--project", project, "--run", "zzz")
    assert unknown.exit_code == 2 and "no run 'zzz'" in unknown.stderr
