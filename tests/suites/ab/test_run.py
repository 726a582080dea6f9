"""The A/B engine end to end on the offline mock vendor: every branch on the same
rendered prompt, measured, ranked, stored as it finishes, synced from YAML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.errors import ConfigError
from oxyeval.evaluation import decide_run
from oxyeval.store import open_store
from oxyeval.suites.ab import run_ab_test, run_ab_tests

from ...conftest import MakeProject
from .._helpers import UnderWay

CONFIG = """\
models:
  - {name: quick, vendor: mock, model_ref: mock-small, latency_ms: 5, outputs: [positive]}
  - {name: steady, vendor: mock, model_ref: mock-large, latency_ms: 120, outputs: ["The sentiment is clearly positive."]}
  - {name: broken, vendor: mock, rules: [{match: ".", error: "the server said no"}]}
pricing:
  mock-small: {input: 0.1, output: 0.4}
  mock-large: {input: 3.0, output: 15.0}
"""

PROMPT = """\
name: sentiment
model: quick
system: Label the sentiment.
template: "Feedback: {{ text }}"
similarity: lexical
branches:
  - {name: Quick, model: quick}
  - {name: Steady, model: steady, control: true}
cases:
  - {name: praise, input: {text: "I love it"}, expected_output: positive}
"""


def _project(make_project: MakeProject, prompt: str = PROMPT) -> Path:
    return make_project(CONFIG, {"sentiment.prompt.yml": prompt})


def test_every_branch_answers_the_same_prompt_and_is_measured_and_ranked(
    make_project: MakeProject,
) -> None:
    root = _project(make_project)
    run = run_ab_tests(project_dir=str(root), criteria="fastest")
    (result,) = run.results
    assert result.test_case_id == "sentiment::praise" and result.criteria == "fastest"
    quick, steady = result.branches  # by rank
    assert (quick.branch.name, quick.rank, steady.rank) == ("Quick", 1, 2)
    # One iteration cannot tell a lead from noise: Quick leads, and no winner is called.
    assert result.winner is None
    assert any(n.startswith("no winner: 'Quick' ranks first") for n in result.notes)
    # Measured, never invented: the scripted 120 ms shows, and the first token comes
    # after that latency, from the streamed answer.
    assert steady.latency_ms is not None and steady.latency_ms >= 120
    assert quick.latency_ms is not None and quick.latency_ms < steady.latency_ms
    assert steady.time_to_first_token is not None and steady.time_to_first_token >= 115
    # Quality: exact match 1.0; the verbose answer scores by word overlap, below 1.
    assert quick.quality_score == 1.0
    assert steady.quality_score is not None and steady.quality_score < 1.0
    # Cost from config.yml's pricing of the model ids and the answer's tokens.
    outcome = steady.outcomes[0]
    price = (outcome.input_tokens * 3.0 + outcome.output_tokens * 15.0) / 1_000_000
    assert outcome.estimated_cost == pytest.approx(price)
    assert outcome.clarity_score is not None and 0 <= outcome.clarity_score <= 1
    assert outcome.valid_json is False and len(outcome.consistency_hash or "") == 64
    assert decide_run(run).code == 0


def test_executions_are_stored_with_the_branches_aggregates(make_project: MakeProject) -> None:
    root = _project(make_project)
    run_ab_tests(project_dir=str(root))
    run_ab_tests(project_dir=str(root))
    with open_store(root / ".oxy" / "oxyeval.db") as store:
        quick = store.branches.get("sentiment::praise@Quick")
        steady = store.branches.get("sentiment::praise@Steady")
        assert quick is not None and steady is not None
        assert (quick.total_runs, steady.total_runs) == (2, 2)
        assert steady.is_control and not quick.is_control
        assert quick.pass_rate == 100.0 and quick.avg_quality_score == 1.0
        assert quick.consistency_score == 1.0  # the same answer twice
        executions = store.branches.executions(steady.id)
        assert len(executions) == 2
        assert all(e.status == "success" and e.latency_ms >= 120 for e in executions)
        assert {e.prompt_version for e in executions} == {1}
        # The results spine holds them as the core's "ab" kind, one run row per case.
        assert [r.kind for r in store.runs.list(kind="ab")] == ["ab", "ab"]


def test_an_errored_branch_ranks_last_never_wins_and_exits_3(make_project: MakeProject) -> None:
    prompt = PROMPT.replace(
        "  - {name: Steady, model: steady, control: true}\n",
        "  - {name: Steady, model: steady, control: true}\n  - {name: Broken, model: broken}\n",
    )
    root = _project(make_project, prompt)
    run = run_ab_tests(project_dir=str(root), criteria="fastest")
    (result,) = run.results
    assert [b.branch.name for b in result.branches] == ["Quick", "Steady", "Broken"]
    broken = result.branches[-1]
    assert broken.rank == 3 and not broken.ok
    assert "the server said no" in (broken.outcomes[0].error or "")
    assert result.winner is None  # one iteration: Quick leads, no winner is called
    assert decide_run(run).code == 3
    # the decision on the slim results (no answers, scores or details) is the same
    from oxyeval.evaluation import Gates, decide

    gates = Gates(min_pass_rate=0.9, strict=True)
    slim, whole = (
        decide(found, gates, kind="ab") for found in (run.decision_results(), run.as_results())
    )
    assert slim == whole and slim.unscored and slim.code == 3
    assert all(r.output is None and not r.scores for r in run.decision_results())


def test_iterations_give_a_distribution_and_a_significant_winner(make_project: MakeProject) -> None:
    root = _project(make_project)
    run = run_ab_tests(project_dir=str(root), criteria="best_quality", iterations=6)
    (result,) = run.results
    assert result.iterations == 6
    assert result.winner is not None and result.winner.branch.name == "Quick"
    assert result.winner_distribution == {"Quick": 6}
    assert result.significant is True  # 1.0 every time against a lower score every time
    assert len(result.winner.outcomes) == 6
    assert "qualityScore" in result.winner.intervals


def test_a_branch_removed_from_yaml_leaves_the_run_but_keeps_its_history(
    make_project: MakeProject,
) -> None:
    root = _project(make_project)
    run_ab_tests(project_dir=str(root))
    (root / "sentiment.prompt.yml").write_text(
        PROMPT.replace("  - {name: Quick, model: quick}\n", ""), encoding="utf-8"
    )
    run = run_ab_tests(project_dir=str(root))
    assert [b.branch.name for b in run.results[0].branches] == ["Steady"]
    with open_store(root / ".oxy" / "oxyeval.db") as store:
        gone = store.branches.get("sentiment::praise@Quick", include_deleted=True)
        assert gone is not None and gone.deleted_at is not None and gone.total_runs == 1


def test_run_ab_test_runs_the_named_branches_of_one_case(make_project: MakeProject) -> None:
    """The seed's runABTest(testCaseId, branchIds, winnerCriteria), with a branch made
    through the Python API beside the YAML ones."""
    root = _project(make_project)
    run_ab_tests(project_dir=str(root))  # syncs the case and its YAML branches
    with open_store(root / ".oxy" / "oxyeval.db") as store:
        made = store.branches.create("sentiment::praise", "Hot", model="quick", temperature=1.5)
    result = run_ab_test(
        "sentiment::praise",
        [made.id, "sentiment::praise@Steady"],
        winner_criteria="cheapest",
        project_dir=str(root),
    )
    assert [b.branch.id for b in result.branches] == [made.id, "sentiment::praise@Steady"]
    assert result.branches[0].branch.name == "Hot" and result.winner is None
    with pytest.raises(ConfigError, match="has no branch 'nope'"):
        run_ab_test("sentiment::praise", ["nope"], project_dir=str(root))


def test_bad_criteria_and_a_project_without_branches_are_bad_input(
    make_project: MakeProject,
) -> None:
    root = _project(make_project)
    with pytest.raises(ConfigError, match="unknown winner criteria 'fastest_ever'"):
        run_ab_tests(project_dir=str(root), criteria="fastest_ever")
    with pytest.raises(ConfigError, match="iterations must be between 1 and 1000"):
        run_ab_tests(project_dir=str(root), iterations=0)
    without = PROMPT.replace(
        "branches:\n  - {name: Quick, model: quick}\n  - {name: Steady, model: steady, control: true}\n",
        "",
    )
    root = _project(make_project, without)
    with pytest.raises(ConfigError, match="no test case has branches"):
        run_ab_tests(project_dir=str(root))


def test_the_cli_reports_json_lists_and_shows(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(make_project)
    monkeypatch.chdir(root)
    runner = CliRunner()
    result = runner.invoke(app, ["ab", "run", "--criteria", "fastest", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    (case,) = doc["cases"]
    assert case["testCaseId"] == "sentiment::praise" and case["criteria"] == "fastest"
    assert case["winner"] is None and case["branches"][0]["branchName"] == "Quick"
    first = case["branches"][0]
    for key in (
        "branchId",
        "branchName",
        "model",
        "execution",
        "qualityScore",
        "latencyMs",
        "timeToFirstToken",
        "estimatedCost",
        "tokensPerSecond",
        "rank",
        "paretoOptimal",
    ):
        assert key in first
    assert first["execution"]["status"] == "success" and first["execution"]["id"]
    listed = json.loads(runner.invoke(app, ["ab", "list", "--format", "json"]).stdout)
    assert {b["name"]: b["totalRuns"] for b in listed["testBranches"]} == {"Quick": 1, "Steady": 1}
    shown = runner.invoke(app, ["ab", "show", "Steady", "--format", "json"])
    assert shown.exit_code == 0, shown.stderr
    assert len(json.loads(shown.stdout)["testBranchExecutions"]) == 1
    missing = runner.invoke(app, ["ab", "show", "Stedy"])
    assert missing.exit_code == 2 and "did you mean" in missing.stderr
    pretty = runner.invoke(app, ["ab", "run"])
    assert pretty.exit_code == 0
    assert "No winner (best_quality): Quick ranks first, but not beyond the noise" in pretty.stdout


def test_a_quality_judge_grades_answers_and_is_priced_apart(make_project: MakeProject) -> None:
    """``quality_judge:``: quality is the judge's 1-5 grade (an exact match needs no call);
    its calls and their cost are counted apart from the branches' own cost."""
    config = CONFIG.replace(
        "pricing:\n",
        "  - name: grader\n    vendor: mock\n    model_ref: grader-model\n    rules:\n"
        "      - {match: 'clearly positive', output: \"Close, but wordy.\\nScore: 4\"}\n"
        "      - {match: '.', output: \"Wrong.\\nScore: 1\"}\n"
        "pricing:\n  grader-model: {input: 1.0, output: 2.0}\n",
    )
    prompt = PROMPT.replace("similarity: lexical\n", "similarity: lexical\nquality_judge: grader\n")
    root = make_project(config, {"sentiment.prompt.yml": prompt})
    run = run_ab_tests(project_dir=str(root))
    (result,) = run.results
    by_name = {b.branch.name: b for b in result.branches}
    assert by_name["Quick"].quality_score == 1.0  # exact: no judge call
    assert by_name["Quick"].outcomes[0].judge_calls == 0
    steady = by_name["Steady"].outcomes[0]
    assert steady.quality_score == 0.75 and steady.judge_calls == 1  # grade 4 of 5
    assert steady.similarity_score is not None and steady.similarity_score < 0.75
    assert steady.judge_cost is not None and steady.judge_cost > 0
    branch_only = (steady.input_tokens * 3.0 + steady.output_tokens * 15.0) / 1_000_000
    assert steady.estimated_cost == pytest.approx(branch_only)  # the judge's cost is apart
    assert run.judge_calls == 1 and run.judge_cost == steady.judge_cost


def test_names_are_shown_as_written_never_as_markup(make_project: MakeProject) -> None:
    import io

    from rich.console import Console

    from oxyeval.report import render_ab_run

    root = _project(make_project, PROMPT.replace("name: Quick,", "name: '[bold]Quick[/bold]',"))
    run = run_ab_tests(project_dir=str(root))
    console = Console(file=io.StringIO(), width=120)
    render_ab_run(run, console)
    assert "[bold]Quick[/bold]" in console.file.getvalue()
    with pytest.raises(ConfigError, match="has no version 0"):
        run_ab_tests(project_dir=str(root), prompt_version=0)


def test_cases_of_many_calls_start_a_window_at_a_time(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.suites import suite as suite_module

    monkeypatch.setattr(suite_module, "_WINDOW_RUNS", 12)
    cases = "".join(
        f"  - {{name: c{i}, input: {{text: 'case {i}'}}, expected_output: positive}}\n"
        for i in range(8)
    )
    prompt = PROMPT.split("cases:")[0] + "cases:\n" + cases
    quick = CONFIG.replace(", latency_ms: 120", "")  # 48 calls one at a time: no waits
    root = make_project(quick, {"sentiment.prompt.yml": prompt})
    sink = UnderWay(6)  # two branches, three iterations

    run = run_ab_tests(project_dir=str(root), iterations=3, concurrency=1, events=sink)
    assert sink.most == 2  # twelve calls under way: two cases of six
    assert len(run.results) == 8 and all(len(r.branches) == 2 for r in run.results)


def test_a_run_kept_on_disk_streams_its_results_and_writes_the_same_document(
    make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from oxyeval.report import Streamed, ab_run_json, write_json

    run = run_ab_tests(project_dir=str(_project(make_project)), iterations=3)

    def written() -> tuple[dict[str, object], object]:
        doc = ab_run_json(run, run.decision)
        out = io.StringIO()
        write_json(doc, out)
        return json.loads(out.getvalue()), doc["results"]

    whole, listed = written()
    monkeypatch.setenv("OXY_RESULTS_IN_MEMORY", "0")
    run.results = type(run.results)(run.results)  # the same results, now on disk
    streamed, lazy = written()
    assert isinstance(listed, list) and isinstance(lazy, Streamed) and len(lazy) == 6
    assert streamed == whole and len(whole["results"]) == 6  # type: ignore[arg-type]


def test_a_run_kept_on_disk_reports_as_one_held_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.report import ab_run_json

    prompt = PROMPT + "  - {name: blame, input: {text: 'I hate it'}, expected_output: negative}\n"

    def shown(root: Path) -> tuple[object, ...]:
        root.mkdir()
        (root / "config.yml").write_text(CONFIG)
        (root / "sentiment.prompt.yml").write_text(prompt)
        run = run_ab_tests(project_dir=str(root), iterations=2)
        doc = ab_run_json(run, run.decision)
        cases = [
            (
                c["testCaseId"],
                c["leader"],
                c["iterationsCompleted"],
                [b["branchName"] for b in c["branches"]],
            )
            for c in doc["cases"]
        ]
        results = [(r["subject"], r["status"], r["score"], r["outcome"]) for r in doc["results"]]
        return run.spilled, cases, results, doc["decision"], doc["summary"]

    held = shown(tmp_path / "held")
    monkeypatch.setenv("OXY_RESULTS_IN_MEMORY", "0")
    kept = shown(tmp_path / "kept")
    assert (held[0], kept[0]) == (False, True)
    assert kept[1:] == held[1:] and [c[0] for c in kept[1]] == [
        "sentiment::praise",
        "sentiment::blame",
    ]
