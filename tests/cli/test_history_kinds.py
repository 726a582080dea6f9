"""``oxy history --kind`` offers and accepts the store's run kinds (``store.kinds``), which
are exactly the kinds the commands write."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oxyeval.cli._app import app
from oxyeval.store.kinds import RESERVED_RUN_KINDS, RUN_KIND_ALIASES, RUN_KINDS

from ..conftest import MakeProject
from ..suites.test_cases_run import PROMPT
from .test_history_cli import AGENT, CONFIG, SAME, WORKFLOW


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def root(make_project: MakeProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = make_project(
        CONFIG.replace("{outputs}", SAME),
        {
            "a.agent.yml": AGENT,
            "s.prompt.yml": PROMPT,
            "w.workflow.yml": WORKFLOW,
            "ab.cases.yml": "prompt: s.prompt.yml\ncases:\n  - name: compared\n"
            "    input: {text: hi}\n    branches: [{name: A, model: m}, {name: B, model: analyst}]\n",
            "ct/prompts/p.json": '{"key": "p", "prompt": "hi", "models": ["bot"], '
            '"tests": ["it greets"], "testModel": "grader"}',
            "ct/models/bot.json": '{"key": "bot", "url": "mock:", "outputs": ["hello"]}',
            "ct/models/grader.json": '{"key": "grader", "url": "mock:", '
            '"outputs": ["Fine.\\nVerdict: PASS"]}',
        },
    )
    monkeypatch.chdir(project)
    monkeypatch.delenv("OXY_DB", raising=False)
    return project


def _one_run_of_each_kind() -> None:
    """Every writer the tool has, through its own command or call."""
    assert invoke("cases", "run", "--case", "happy").exit_code == 0
    assert invoke("test", "a.agent.yml").exit_code == 0
    assert invoke("run", "w.workflow.yml", "-q").exit_code == 0
    assert invoke("run", "a.agent.yml", "--question", "Hi?", "-q").exit_code == 0
    assert invoke("ab", "run", "--case", "compared", "-q").exit_code == 0
    assert invoke("chattest", "ct", "-q").exit_code == 0
    from oxyeval.testing import ExactMatchMetric, LLMTestCase, evaluate

    case = LLMTestCase(input="hi", actual_output="hello", expected_output="hello")
    evaluate([case], [ExactMatchMetric()], print_results=False)


def test_the_kinds_offered_are_the_kinds_the_commands_write(root: Path) -> None:
    _one_run_of_each_kind()
    every = json.loads(invoke("history", "--json").stdout)["runs"]
    assert sorted(r["kind"] for r in every) == sorted(RUN_KINDS)  # one run of each
    for kind in RUN_KINDS:
        only = invoke("history", "--kind", kind, "--json")
        assert only.exit_code == 0, only.stderr
        assert [r["kind"] for r in json.loads(only.stdout)["runs"]] == [kind]
    for alias, kind in RUN_KIND_ALIASES.items():
        aliased = json.loads(invoke("history", "--kind", alias, "--json").stdout)["runs"]
        assert [r["kind"] for r in aliased] == [kind]


@pytest.mark.parametrize("kind", [*RESERVED_RUN_KINDS, "nope"])
def test_a_kind_no_command_writes_is_bad_input_naming_the_kinds(root: Path, kind: str) -> None:
    result = invoke("history", "--kind", kind, "--json")
    assert result.exit_code == 2
    message = json.loads(result.stdout)["error"]
    assert f"--kind must be one of {', '.join(RUN_KINDS)} (or test), not '{kind}'" in message
    assert not (root / ".oxy").exists()  # checked before any history is opened or made


def test_the_help_lists_the_kinds_from_the_store(root: Path) -> None:
    result = invoke("history", "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    match = re.search(r"Only runs of this kind: (.*?) \((.*?)\)\.", text)
    assert match, text
    assert match.group(1).split(", ") == list(RUN_KINDS)
    assert match.group(2) == ", ".join(f"{a}: {k}" for a, k in RUN_KIND_ALIASES.items())
    for reserved in RESERVED_RUN_KINDS:
        assert reserved not in match.group(0)


def test_every_kinds_run_is_counted_from_the_results_it_stored(root: Path) -> None:
    """Each writer stores its results, and the list counts them by one rule: what each
    result counts as (``--run`` shows it), whatever the kind."""
    _one_run_of_each_kind()
    every = json.loads(invoke("history", "--json").stdout)["runs"]
    for run in every:
        detail = json.loads(invoke("history", "--run", run["id"], "--json").stdout)
        outcomes = Counter(r["outcome"] for r in detail["results"])
        assert run["results"] == len(detail["results"]) >= 1, run["kind"]
        counted = (run["passed"], run["failed"], run["errors"], run["pending"])
        expected = (
            outcomes["passed"],
            outcomes["failed"],
            outcomes["unknown"],
            outcomes["neutral"],
        )
        assert counted == expected, run["kind"]
    by_kind = {r["kind"]: r for r in every}
    for kind in ("cases", "passfail", "sdk"):
        assert by_kind[kind]["passed"] == 1, kind
    assert by_kind["ab"]["results"] == 2  # one per branch; no expected output: unjudged
    assert (
        by_kind["consistency"]["averageScore"]
        == by_kind["consistency"]["consistency"]["averageAccuracy"]
    )


def test_an_sdk_suite_with_failures_and_errors_shows_them(root: Path) -> None:
    from oxyeval.testing import BaseMetric, LLMTestCase, MetricError, evaluate

    class Grader(BaseMetric):
        async def _a_score(self, test_case: LLMTestCase) -> tuple[float, str]:
            if test_case.input.startswith("bad"):
                raise RuntimeError("the grader is down")
            return 0.1, "too short"

    cases = [LLMTestCase(input=f"ok {k}", actual_output="x") for k in range(4)]
    cases += [LLMTestCase(input=f"bad {k}", actual_output="x") for k in range(2)]
    # As DeepEval does, evaluate raises on a metric that could not score, once the run
    # is kept: the history still shows it whole.
    with pytest.raises(MetricError, match="the grader is down"):
        evaluate(cases, [Grader()], print_results=False)
    (run,) = json.loads(invoke("history", "--kind", "sdk", "--json").stdout)["runs"]
    assert (run["results"], run["passed"], run["failed"], run["errors"]) == (6, 0, 4, 2)
    assert run["averageScore"] == pytest.approx(0.1)  # the errors' missing scores left out
    table = " ".join(invoke("history", "--kind", "sdk").stdout.split())
    assert "0 passed, 4 failed, 2 error(s)" in table


def test_compare_counts_a_consistency_run_as_the_list_does(root: Path) -> None:
    assert invoke("test", "a.agent.yml").exit_code == 0
    assert invoke("test", "a.agent.yml").exit_code == 0
    head, base = json.loads(invoke("history", "--kind", "test", "--json").stdout)["runs"]
    assert base["consistency"]["tests"] == 1 and base["consistency"]["averageAccuracy"] is not None
    result = invoke("history", "--compare", base["id"][:8], head["id"][:8], "--format", "json")
    assert result.exit_code == 0, result.stderr
    compared = json.loads(result.stdout)
    for side, listed in (("base", base), ("head", head)):
        assert compared[side]["consistency"] == listed["consistency"]
        assert compared[side]["results"] == 1
        assert compared[side]["averageScore"] == listed["averageScore"]
