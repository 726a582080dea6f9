"""Scoring and reporting around the judge: min_judged, selection, JSON shape, headline."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.judge.consistency import (
    judge_comparisons,
    pair_count,
    plan_comparisons,
    plan_pairs,
    score_comparisons,
)
from oxyeval.judge.judge import JudgeResult
from oxyeval.project.config import JudgeSettings, load_project
from oxyeval.report import Gates, decide, render_pretty
from oxyeval.suites.consistency import run_tests
from oxyeval.suites.consistency.results import ConsistencyRun, ConsistencyTestResult, OutputRecord

from ..conftest import MakeProject
from ..fakes import fake_openai, judge_reply, openai_error

SCORES = {"A": 1.0, "B": 0.0}

# Ten distinct answers; the judge only answers for the pair (alpha, beta).
CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: [alpha, beta, gamma, delta, epsilon, zeta, eta, theta, iota, kappa]
  - name: judge
    vendor: mock
    rules:
      - match: "alpha[\\\\s\\\\S]*beta"
        output: "They differ.\\nAnswer: B"
      - match: "."
        error: "judge overloaded"
"""


def agent(extra: str = "", n: int = 10, pairing: str = "ring") -> str:
    return (
        "model: analyst\nsystem_instructions: hi\ntests:\n"
        f"  - type: consistency\n    name: t\n    n: {n}\n    pairing: {pairing}\n"
        f"    task_description: q\n    model_ref: judge\n    concurrency: 1\n{extra}"
    )


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


# -- min_judged (item 19) ---------------------------------------------------------------


def test_pair_count_matches_the_plan() -> None:
    for n in range(0, 12):
        for pairing in ("all", "ring"):
            assert pair_count(n, pairing) == len(plan_pairs(range(1, n + 1), pairing))


def test_one_judged_pair_of_ten_is_an_error_not_a_score(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": agent()})
    (test,) = run_tests([root / "a.agent.yml"]).tests
    assert test.accuracy is None and not test.ok
    assert (test.judged_pairs, test.total_pairs) == (1, 10)
    assert test.error is not None
    assert test.error.startswith("only 1 of 10 run pairs got a verdict (10%; min_judged is 50%)")
    assert "9 judge error(s)" in test.error and "judge overloaded" in test.error
    assert test.selected is None


def test_min_judged_can_be_lowered_per_test(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": agent("    min_judged: 0.1\n")})
    (test,) = run_tests([root / "a.agent.yml"]).tests
    assert test.ok and test.accuracy == 0.0 and test.min_judged == 0.1


@pytest.mark.parametrize(("failures", "scored"), [(1, True), (2, False)])
def test_failed_runs_count_against_the_share(
    make_project: MakeProject, failures: int, scored: bool
) -> None:
    # n=4, all pairs: 6 pairs. Identical answers need no judge, so only failed runs
    # lower the share: 1 failure leaves 3 of 6 pairs (50%), 2 leave 1 of 6.
    with fake_openai("same answer") as server:
        config = (
            f"models:\n  - name: analyst\n    vendor: openai\n    model_ref: x\n"
            f"    api_url: {server.url}\n    max_retries: 0\n"
        )
        spec = agent(n=4, pairing="all").replace("    model_ref: judge\n", "")
        root = make_project(config, {"a.agent.yml": spec})
        for _ in range(failures):
            server.enqueue((400, openai_error("bad request")))
        (test,) = run_tests([root / "a.agent.yml"]).tests
    assert test.total_pairs == 6
    assert test.ok is scored
    if not scored:
        assert test.accuracy is None
        assert test.error == (
            "only 1 of 6 run pairs got a verdict (17%; min_judged is 50%): 2 of 4 runs failed"
        )


def test_cli_exit_3_and_reason_on_stderr_in_json(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": agent()})
    result = invoke("test", str(root / "a.agent.yml"), "--format", "json")
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    (test,) = doc["tests"]
    assert test["accuracy"] is None and test["status"] == "error"
    assert (test["judgedPairs"], test["totalPairs"], test["minJudged"]) == (1, 10, 0.5)
    assert "not scored: t: only 1 of 10 run pairs got a verdict" in result.stderr


def test_pretty_header_shows_judged_of_total_pairs(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": agent("    min_judged: 0.1\n")})
    result = invoke("test", str(root / "a.agent.yml"))
    assert result.exit_code == 0
    assert "1/10 pairs judged" in result.stdout


def test_min_judged_is_validated(make_project: MakeProject) -> None:
    root = make_project(CONFIG, {"a.agent.yml": agent("    min_judged: 1.5\n")})
    result = invoke("validate", str(root / "a.agent.yml"))
    assert result.exit_code == 2
    assert "min_judged" in result.stderr + result.stdout
    assert "a.agent.yml:" in result.stderr + result.stdout


# -- no selection without verdicts (item 12) --------------------------------------------


def test_all_judge_errors_select_nothing_even_with_identical_pairs() -> None:
    texts = {1: "same", 2: "same", 3: "other"}
    comps = plan_comparisons(texts)

    async def compare(_s1: str, _s2: str):
        return JudgeResult(None, "", "", 1, "judge down")

    asyncio.run(judge_comparisons(comps, texts, compare))
    score = score_comparisons(comps, [1, 2, 3], SCORES)
    assert score.accuracy is None
    assert score.selected is None
    assert set(score.per_run.values()) == {None}


def test_pretty_says_no_output_could_be_selected(make_project: MakeProject) -> None:
    config = CONFIG.replace("[alpha, beta, gamma", "[alpha, alpha, gamma")
    root = make_project(config, {"a.agent.yml": agent(n=3, pairing="all")})
    pretty = invoke("test", str(root / "a.agent.yml"))
    as_json = invoke("test", str(root / "a.agent.yml"), "--format", "json")
    assert pretty.exit_code == as_json.exit_code == 3
    assert "Most consistent output" not in pretty.stdout
    assert "No output could be selected: no comparison got a verdict" in pretty.stdout
    (test,) = json.loads(as_json.stdout)["tests"]
    assert test["selected"] is None
    assert all(o["consistency"] is None for o in test["outputs"])


# -- JSON shape (item 23) ---------------------------------------------------------------


def test_json_lists_every_comparison_and_keeps_output_keys(make_project: MakeProject) -> None:
    config = """\
models:
  - name: analyst
    vendor: mock
    outputs: ["Total: 42", "Total: 42", "Total: 99 (XYZ)", "Total is 42"]
    rules:
      - match: "explode"
        error: "boom"
  - name: judge
    vendor: mock
    rules:
      - match: "XYZ"
        output: "They differ.\\nAnswer: B"
      - match: "."
        output: "Same.\\nAnswer: A"
"""
    root = make_project(config, {"a.agent.yml": agent(n=4, pairing="all")})
    result = invoke("test", str(root / "a.agent.yml"), "--format", "json")
    (test,) = json.loads(result.stdout)["tests"]
    keys = {"run", "text", "error", "group", "consistency", "latencyS", "inputTokens"}
    assert all(keys <= set(o) for o in test["outputs"])
    groups = {o["run"]: o["group"] for o in test["outputs"]}
    assert groups == {1: 1, 2: 1, 3: 2, 4: 3}
    comps = test["comparisons"]
    # 3 distinct texts: one identical group (1,2) plus 3 judged text pairs.
    assert len(comps) == 4
    assert sum(c["weight"] for c in comps) == test["pairs"] == 6
    assert {(tuple(c["groups"]), c["verdict"]) for c in comps} == {
        ((1, 1), "A"),
        ((1, 2), "B"),
        ((1, 3), "A"),
        ((2, 3), "B"),
    }
    assert all(c["groups"] == [groups[c["runs"][0]], groups[c["runs"][1]]] for c in comps)
    # failingComparisons keeps its old shape: the B verdicts, without groups.
    assert {tuple(c["runs"]) for c in test["failingComparisons"]} == {(1, 3), (3, 4)}
    assert all("groups" not in c for c in test["failingComparisons"])


def test_failed_run_has_text_null() -> None:
    failed = OutputRecord(run=2, text=None, error="timeout").to_dict()
    assert failed["text"] is None and failed["error"] == "timeout"
    ok = OutputRecord(run=1, text="42").to_dict()
    assert ok["text"] == "42" and ok["error"] is None
    assert set(failed) == set(ok)


# -- the headline (items 14 and 19) -----------------------------------------------------


def _result(accuracy: float | None, **kw) -> ConsistencyTestResult:
    return ConsistencyTestResult(
        name="t",
        file="a.agent.yml",
        index=0,
        task_description="q",
        n=3,
        pairing="all",
        agent_model="m",
        judge_model="j",
        scores=dict(SCORES),
        accuracy=accuracy,
        error=None if accuracy is not None else "no valid verdicts",
        **kw,
    )


def _headline(run: ConsistencyRun, min_accuracy: float | None = None, strict: bool = False) -> str:
    console = Console(file=io.StringIO(), width=200)
    decision = decide(run, Gates(min_accuracy=min_accuracy, strict=strict))
    render_pretty(run, decision, console, quiet=True)
    return console.file.getvalue().splitlines()[0]


def test_no_green_tick_without_a_passed_threshold() -> None:
    run = ConsistencyRun(tests=[_result(0.4667)])
    assert "✅" not in _headline(run)
    assert _headline(run).startswith("Eval finished with metrics (no --min-accuracy")
    assert _headline(run, 0.4).startswith("✅")
    assert _headline(run, 0.9).startswith("❌") and "below the threshold" in _headline(run, 0.9)


def test_strict_exit_3_has_no_green_tick() -> None:
    failed_run = OutputRecord(run=3, text=None, error="timeout")
    run = ConsistencyRun(tests=[_result(1.0, outputs=[failed_run])])
    line = _headline(run, 0.5, strict=True)
    assert "✅" not in line and line.startswith("❌") and "--strict" in line
    assert _headline(run, 0.5).startswith("✅")  # without --strict the score stands


def test_cli_strict_headline(make_project: MakeProject) -> None:
    config = CONFIG.replace('error: "judge overloaded"', 'output: "Answer: A"').replace(
        "[alpha, beta", '["alpha", "beta"'
    )
    root = make_project(config, {"a.agent.yml": agent(n=3, pairing="all")})
    ok = invoke("test", str(root / "a.agent.yml"), "--min-accuracy", "0.1")
    assert ok.exit_code == 0 and ok.stdout.startswith("✅ Eval finished")
    plain = invoke("test", str(root / "a.agent.yml"))
    assert plain.exit_code == 0 and "✅" not in plain.stdout


# -- judge settings in config.yml ------------------------------------------------------


@pytest.mark.parametrize(
    ("yaml_value", "expected"),
    [("off", "off"), ("on", "on"), ("auto", "auto"), ('"off"', "off")],
)
def test_judge_structured_setting_loads(
    make_project: MakeProject, yaml_value: str, expected: str
) -> None:
    config = CONFIG + f"judge:\n  structured: {yaml_value}\n  max_tokens: 300\n"
    root = make_project(config, {"a.agent.yml": agent()})
    project = load_project(root / "a.agent.yml")
    assert project.judge == JudgeSettings(structured=expected, max_tokens=300)


def test_judge_setting_typo_is_a_validation_error(make_project: MakeProject) -> None:
    root = make_project(CONFIG + "judge:\n  structured: sometimes\n", {"a.agent.yml": agent()})
    result = invoke("validate", str(root / "a.agent.yml"))
    assert result.exit_code == 2
    text = result.stderr + result.stdout
    assert "config.yml:" in text and "structured" in text


@pytest.mark.parametrize(
    ("setting", "structured"), [("", True), ("judge:\n  structured: off\n", False)]
)
def test_oxy_test_judges_with_the_project_settings(
    make_project: MakeProject, setting: str, structured: bool
) -> None:
    with fake_openai(judge_reply("B", "42 vs 41.")) as server:
        config = (
            "models:\n  - name: analyst\n    vendor: mock\n    outputs: [alpha, beta]\n"
            f"  - name: judge\n    vendor: openai\n    model_ref: j\n    api_url: {server.url}\n"
            + setting
        )
        root = make_project(config, {"a.agent.yml": agent(n=2, pairing="all")})
        result = invoke("test", str(root / "a.agent.yml"), "--format", "json")
        (request,) = server.requests
    assert result.exit_code == 0
    (test,) = json.loads(result.stdout)["tests"]
    assert test["accuracy"] == 0.0
    assert test["comparisons"][0]["reasoning"] == "42 vs 41."
    assert ("response_format" in request.body) is structured
    assert request.body["max_tokens"] == 512
