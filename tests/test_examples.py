"""The shipped examples must run offline exactly as the README says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """A copy, so exports and caches never write into the repository."""
    target = tmp_path / "examples"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns("output", ".oxy"))
    return target


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_example_project_validates(examples: Path) -> None:
    result = invoke("validate", str(examples))
    assert result.exit_code == 0, result.stderr
    assert "0 error(s), 0 warning(s)" in result.stdout


def test_example_consistency_tests_score_as_documented(examples: Path) -> None:
    result = invoke("test", str(examples / "agents" / "users.agent.yml"), "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    everyone, ring = doc["tests"]
    # 12 runs over 6 scripted answers (5 agree, 1 says 1,240): 66 pairs, 6 identical,
    # 15 distinct pairs judged; the 20 pairs with the outlier are B -> 46/66.
    assert everyone["accuracy"] == pytest.approx(46 / 66, abs=1e-6)
    assert (everyone["pairs"], everyone["identicalPairs"], everyone["judgeCalls"]) == (66, 6, 15)
    assert everyone["selected"]["text"] == "We have 1,204 active users."
    # One cluster of the 10 runs that agree, one of the 2 that say 1,240.
    clusters = everyone["clusters"]
    assert [c["size"] for c in clusters["clusters"]] == [10, 2]
    assert clusters["majorityRate"] == pytest.approx(10 / 12, abs=1e-6)
    assert clusters["nontransitiveCount"] == 0 and clusters["unjudgedPairs"] == 0
    # Ring of 6 runs: pairs (5,6) and (6,1) involve the outlier -> 4/6.
    assert ring["accuracy"] == pytest.approx(4 / 6, abs=1e-6)
    assert sorted(tuple(c["runs"]) for c in ring["failingComparisons"]) == [(1, 6), (5, 6)]


def test_example_sql_agent_uses_its_tool(examples: Path) -> None:
    result = invoke(
        "run",
        str(examples / "agents" / "sales.agent.yml"),
        "--question",
        "Which region sells the most?",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["toolCalls"][0]["name"] == "query_orders"
    assert "South leads with 577.41" in doc["output"]


def test_example_workflow_report(examples: Path) -> None:
    workflow = examples / "workflows" / "monthly_report.workflow.yml"
    result = invoke("run", str(workflow), "--var", "month=2026-10", "--format", "json", "-q")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    tasks = {t["path"]: t for t in doc["tasks"]}
    assert tasks["by_region"]["output"]["rows"][0] == {
        "region": "South",
        "total": 507.93,
        "units": 13,
    }
    summary = tasks["summary"]["consistency"]
    assert summary["runs"] == 4 and summary["selectedRun"] == 1
    assert summary["score"] == pytest.approx(2 / 3)
    assert tasks["verdict"]["branch"] == 0  # 895.86 > 800
    assert (examples / "output" / "report-2026-10.txt").read_text() == doc["output"]
    assert "- South: 507.93" in doc["output"] and "Best seller: Widget" in doc["output"]
    # The two queries have no dependency on each other: they overlap in time.
    a, b = tasks["by_region"], tasks["top_products"]
    assert (
        a["startedS"] < b["startedS"] + b["durationS"]
        and b["startedS"] < a["startedS"] + a["durationS"]
    )


def test_example_prompt_cases(examples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(examples)
    monkeypatch.delenv("OXY_DB", raising=False)
    result = invoke("cases", "run", "prompts/sentiment.prompt.yml", "--format", "json")
    assert result.exit_code == 1  # one case fails on purpose
    doc = json.loads(result.stdout)
    by_name = {e["name"]: e for e in doc["executions"]}
    assert by_name["positive"]["exactMatch"] and by_name["positive"]["passed"]
    assert by_name["negative"]["passed"] and not by_name["negative"]["exactMatch"]  # "Negative."
    assert not by_name["subtle negative"]["passed"]
    assert {e["similarityMethod"] for e in doc["executions"]} == {"lexical"}
    assert (examples / ".oxy" / "oxyeval.db").is_file()


def test_example_ab_test_ranks_the_three_configurations(examples: Path) -> None:
    """README's A/B example: the small model is as right as the current one on three of
    four cases, faster and priced; the large one is right but wordy, slow and dear."""
    prompt = str(examples / "prompts" / "sentiment.prompt.yml")
    result = invoke("ab", "run", prompt, "--criteria", "balanced", "--format", "json")
    assert result.exit_code == 0, result.stderr
    cases = {c["caseName"]: c for c in json.loads(result.stdout)["cases"]}
    assert sorted(cases) == ["negative", "neutral", "positive", "subtle negative"]
    for case in cases.values():
        # One iteration: mini ranks first, and no winner is called over noise.
        assert case["branches"][0]["branchName"] == "mini" and case["winner"] is None
        by_name = {b["branchName"]: b for b in case["branches"]}
        assert by_name["current"]["estimatedCost"] is None  # no price: unknown, never 0
        assert by_name["large"]["latencyMs"] > by_name["mini"]["latencyMs"]
        assert by_name["large"]["timeToFirstToken"] < by_name["large"]["latencyMs"]
        assert by_name["large"]["tokensPerSecond"] > 0
    subtle = {b["branchName"]: b for b in cases["subtle negative"]["branches"]}
    assert subtle["large"]["qualityScore"] > subtle["mini"]["qualityScore"]
    assert subtle["large"]["paretoOptimal"] and subtle["mini"]["paretoOptimal"]


def test_example_sdk_tests_and_suite_run_offline(examples: Path) -> None:
    """README's SDK examples: the DeepEval-style file passes under pytest (repeated), the
    Autoblocks-style suite fails on the wrong capital, each offline."""
    import subprocess
    import sys

    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "sdk/test_deepeval_style.py", "--oxy-repeat", "2",
         "-q", "-p", "no:cacheprovider"],
        cwd=examples, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert (
        "4 passed" in tests.stdout and "Correctness [GEval]: 2 measured, 2 passed" in tests.stdout
    )
    suite = subprocess.run(
        [sys.executable, "sdk/suite.py"], cwd=examples, capture_output=True, text=True, timeout=120
    )
    assert suite.returncode == 1, suite.stderr
    assert "judge: 2 passed, 1 failed" in suite.stdout
