"""The event stream of a run, as a subscriber sees it: the full sequence of a consistency
test, a test-cases run and a workflow run, first cold and then replayed from the cache,
and a subscriber that fails never fails the run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oxyeval.evaluation import (
    CacheServed,
    Event,
    ResultRecorded,
    RunFinished,
    RunStarted,
    SampleFinished,
    ScoreRecorded,
    StepsPlanned,
    SubjectStarted,
)
from oxyeval.suites.cases.run import run_cases
from oxyeval.suites.consistency import run_tests
from oxyeval.suites.workflows import run_workflow

from ..conftest import MakeProject

CONFIG = """\
models:
  - name: analyst
    vendor: mock
    outputs: ["Total: 42", "Total is 42", "Total: 99 (XYZ)"]
  - name: judge
    vendor: mock
    rules:
      - {match: "XYZ", output: "They differ.\\nAnswer: B"}
      - {match: ".", output: "Same.\\nAnswer: A"}
  - name: m
    vendor: mock
    rules:
      - {match: "love", output: "positive"}
      - {match: ".", output: "neutral"}
"""
AGENT = """\
model: analyst
system_instructions: Be brief.
tests:
  - {type: consistency, name: totals, n: 3, task_description: "total?", model_ref: judge}
"""
PROMPT = """\
name: mood
model: m
template: "Feedback: {{ text }}"
similarity: lexical
cases:
  - {name: happy, input: {text: "I love it"}, expected_output: positive}
  - {name: flat, input: {text: "It is a thing"}, expected_output: positive}
"""
WORKFLOW = """\
tasks:
  - {name: ask, type: agent, agent_ref: w.agent.yml, prompt: "about love"}
  - {name: report, type: formatter, template: "Report: {{ ask }}"}
"""


@pytest.fixture
def root(make_project: MakeProject) -> Path:
    return make_project(
        CONFIG,
        {
            "a.agent.yml": AGENT,
            "w.agent.yml": "model: m\nsystem_instructions: x\n",
            "mood.prompt.yml": PROMPT,
            "w.workflow.yml": WORKFLOW,
        },
    )


def _names(events: list[Event]) -> list[str]:
    return [type(e).__name__ for e in events]


def _check_frame(events: list[Event], kind: str, results: int, status: str) -> None:
    """Every run: RunStarted first, RunFinished last, each once; every event of the run's
    kind, in time order."""
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert _names(events).count("RunStarted") == _names(events).count("RunFinished") == 1
    assert {e.kind for e in events} == {kind}
    assert [e.at for e in events] == sorted(e.at for e in events)
    assert events[-1].status == status and events[-1].results == results  # type: ignore[attr-defined]
    assert sum(isinstance(e, ResultRecorded) for e in events) == results


def test_a_consistency_test_tells_its_whole_run_then_its_cache_hits(root: Path) -> None:
    cold: list[Event] = []
    run = run_tests([root / "a.agent.yml"], cache=True, events=cold.append)
    assert run.tests[0].accuracy == pytest.approx(1 / 3)
    _check_frame(cold, "consistency", 1, "completed")
    assert cold[0].subjects == 1  # type: ignore[attr-defined]
    (started,) = [e for e in cold if isinstance(e, SubjectStarted)]
    assert started.steps == 3 and "totals" in started.label
    samples = [e for e in cold if isinstance(e, SampleFinished)]
    assert sorted(s.index for s in samples) == [1, 2, 3]
    assert not any(s.cached for s in samples) and all(s.error is None for s in samples)
    planned = [e for e in cold if isinstance(e, StepsPlanned)]
    verdicts = [e for e in cold if isinstance(e, ScoreRecorded)]
    assert sum(p.steps for p in planned) == len(verdicts) == 3  # three pairs judged
    assert sorted(v.label or "" for v in verdicts) == ["A", "B", "B"]
    # Samples come before the verdicts on them, and the result after both.
    names = _names(cold)
    assert names.index("ScoreRecorded") > max(
        i for i, n in enumerate(names) if n == "SampleFinished"
    )
    (result,) = [e.result for e in cold if isinstance(e, ResultRecorded)]
    assert result.kind == "consistency" and result.subject == "a.agent.yml::totals"
    assert result.score == pytest.approx(1 / 3)
    assert names.index("ResultRecorded") > names.index("ScoreRecorded")
    assert not any(isinstance(e, CacheServed) for e in cold)

    warm: list[Event] = []
    again = run_tests([root / "a.agent.yml"], cache=True, events=warm.append)
    assert again.cached_calls == 6  # three answers and three verdicts, no model call
    _check_frame(warm, "consistency", 1, "completed")
    served = [e for e in warm if isinstance(e, CacheServed)]
    assert sum(e.calls for e in served if e.cache == "answer") == 3
    assert sum(e.calls for e in served if e.cache == "verdict") == 3
    assert all(s.cached for s in warm if isinstance(s, SampleFinished))


def test_a_cases_run_tells_each_case_and_its_scores(root: Path) -> None:
    cold: list[Event] = []
    run = run_cases([root / "mood.prompt.yml"], cache=True, events=cold.append)
    assert sorted((r.name, r.passed) for r in run.results) == [("flat", False), ("happy", True)]
    _check_frame(cold, "cases", 2, "completed")  # a failed case: the run still completed
    assert cold[0].subjects == 2  # type: ignore[attr-defined]
    by_case: dict[str, list[str]] = {}
    for e in cold[1:-1]:
        subject = e.result.subject if isinstance(e, ResultRecorded) else getattr(e, "subject", "")
        by_case.setdefault(subject, []).append(type(e).__name__)
    assert set(by_case) == {"mood::happy", "mood::flat"}
    for names in by_case.values():  # each case: its answer, its scores, its result
        assert names[0] == "SampleFinished" and names[-1] == "ResultRecorded"
        assert set(names[1:-1]) == {"ScoreRecorded"}
    happy = [e for e in cold if isinstance(e, ScoreRecorded) and e.subject == "mood::happy"]
    assert ("score", 1.0) in [(s.metric, s.value) for s in happy]
    results = {e.result.subject: e.result for e in cold if isinstance(e, ResultRecorded)}
    assert results["mood::happy"].passed is True and results["mood::flat"].passed is False

    warm: list[Event] = []
    run_cases([root / "mood.prompt.yml"], cache=True, events=warm.append)
    _check_frame(warm, "cases", 2, "completed")
    served = [e for e in warm if isinstance(e, CacheServed)]
    assert [(e.cache, e.calls) for e in served] == [("answer", 1), ("answer", 1)]
    assert all(e.cached for e in warm if isinstance(e, SampleFinished))


def test_a_workflow_run_tells_each_task_and_its_result(root: Path) -> None:
    cold: list[Event] = []
    out = asyncio.run(run_workflow(root / "w.workflow.yml", cache=True, events=cold.append))
    assert out.output == "Report: positive"
    _check_frame(cold, "workflow", 1, "completed")
    assert _names(cold)[:2] == ["RunStarted", "SubjectStarted"]
    tasks = [e for e in cold if isinstance(e, SampleFinished)]
    assert len(tasks) == 2 and not any(t.cached or t.error for t in tasks)
    (result,) = [e.result for e in cold if isinstance(e, ResultRecorded)]
    assert (result.kind, result.status, result.output) == (
        "workflow",
        "completed",
        "Report: positive",
    )

    warm: list[Event] = []
    asyncio.run(run_workflow(root / "w.workflow.yml", cache=True, events=warm.append))
    _check_frame(warm, "workflow", 1, "completed")
    assert [(e.cache, e.calls) for e in warm if isinstance(e, CacheServed)] == [("answer", 1)]


def test_a_failing_subscriber_is_dropped_and_the_run_goes_on(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[Event] = []

    def broken(event: Event) -> None:
        seen.append(event)
        raise RuntimeError("subscriber bug")

    run = run_tests([root / "a.agent.yml"], events=broken, history=False)
    assert run.tests[0].accuracy == pytest.approx(1 / 3)
    assert len(seen) == 1  # told once, then dropped
    assert "event subscriber failed" in caplog.text


def test_a_run_stopped_by_its_checks_tells_nothing(root: Path) -> None:
    (root / "bad.agent.yml").write_text(
        "model: nowhere\nsystem_instructions: x\ntests:\n"
        "  - {type: consistency, name: t, n: 2, task_description: q}\n"
    )
    seen: list[Event] = []
    with pytest.raises(Exception):  # noqa: B017  (bad input: the model is not defined)
        run_tests([root / "bad.agent.yml"], events=seen.append)
    assert seen == [] and not (root / ".oxy").exists()


def test_cost_and_tokens_reach_the_result_and_the_history(make_project: MakeProject) -> None:
    """A priced model (config.yml pricing:, USD per million tokens): each case's result
    and its row in the history's results carry the cost of its call; an unpriced one, none."""
    from oxyeval.store import open_store

    from ..fakes import fake_openai, openai_chat_response

    body = openai_chat_response("positive", prompt_tokens=1200, completion_tokens=300)
    with fake_openai(lambda _request: body) as server:
        root = make_project(
            "models:\n"
            f"  - {{name: m, vendor: openai, model_ref: priced-1, api_url: {server.url}, "
            "api_key: k, max_retries: 0}\n"
            f"  - {{name: free, vendor: openai, model_ref: unknown-9, api_url: {server.url}, "
            "api_key: k, max_retries: 0}\n"
            "pricing:\n  priced-1: {input: 2, output: 10}\n",
            {
                "mood.prompt.yml": PROMPT,
                "other.prompt.yml": PROMPT.replace("mood", "other").replace(
                    "model: m", "model: free"
                ),
            },
        )
        seen: list[Event] = []
        run_cases([root], project_dir=str(root), events=seen.append)
    results = {e.result.subject: e.result for e in seen if isinstance(e, ResultRecorded)}
    expected = (1200 * 2 + 300 * 10) / 1_000_000
    assert results["mood::happy"].cost_usd == pytest.approx(expected)
    assert results["mood::happy"].input_tokens == 1200
    assert results["other::happy"].cost_usd is None  # unknown price: null, never 0
    with open_store(root / ".oxy" / "oxyeval.db", read_only=True) as store:
        (stored,) = store.results.history("cases", "mood::happy")
        (daily,) = store.results.daily("cases", "mood::happy")
        (unpriced,) = store.results.history("cases", "other::happy")
    assert stored.cost_usd == pytest.approx(expected) and unpriced.cost_usd is None
    assert (daily.cost_n, daily.cost_sum) == (1, pytest.approx(expected))


def test_a_scoped_suite_run_forgets_the_secrets_it_registered() -> None:
    """A long-lived process (a server) runs many projects: with ``scope_secrets`` the
    secrets a run registers are scrubbed during it and forgotten after it."""
    from oxyeval.redact import redact, register_secret
    from oxyeval.suites import SuiteRun

    secret = "sk-scoped-" + "z" * 20

    async def run() -> str:
        async with SuiteRun("consistency", history=False, scope_secrets=True):
            register_secret(secret)
            return redact(f"key {secret}")

    inside = asyncio.run(run())
    assert secret not in inside
    assert secret in redact(f"key {secret}")  # forgotten once the run ended


class Bars:
    """A progress display that keeps each bar as [label, total, done]."""

    def __init__(self) -> None:
        self.bars: dict[str, list[object]] = {}

    def start(self, key: str, label: str, total: int) -> None:
        self.bars[key] = [label, total, 0]

    def add_total(self, key: str, amount: int) -> None:
        self.bars[key][1] += amount  # type: ignore[operator]

    def advance(self, key: str, amount: int = 1) -> None:
        self.bars[key][2] += amount  # type: ignore[operator]


def test_a_cases_run_moves_one_bar_for_all_its_cases(root: Path) -> None:
    from oxyeval.suites import progress_events

    bars = Bars()
    run_cases([root / "mood.prompt.yml"], events=progress_events(bars))
    assert list(bars.bars.values()) == [["test cases", 2, 2]]


def test_the_progress_bar_says_what_it_counts(root: Path) -> None:
    """runs and judge calls on bars of their own, each labelled."""
    from oxyeval.suites import progress_events

    bars = Bars()
    run_tests([root / "a.agent.yml"], history=False, events=progress_events(bars))
    (judge, runs) = sorted(bars.bars.values(), key=lambda b: str(b[0]))
    assert str(judge[0]).endswith("totals · judge") and judge[1:] == [3, 3]
    assert str(runs[0]).endswith("totals · runs") and runs[1:] == [3, 3]


def test_a_workflow_test_shows_its_task_as_the_runs_were_asked(make_project: MakeProject) -> None:
    """the tested task's prompt as its runs rendered it: with the workflow's default
    variables, and with another task's output (never the template as written)."""
    workflow = """\
variables:
  month: {type: string, default: "2026-10"}
tasks:
  - {name: ask, type: agent, agent_ref: w.agent.yml, prompt: "Summarise {{ month }}, with love"}
  - {name: again, type: agent, agent_ref: w.agent.yml, prompt: "Shorter: {{ ask }}"}
tests:
  - {type: consistency, name: asked, n: 2, task_ref: ask, model_ref: judge}
  - {type: consistency, name: chained, n: 2, task_ref: again, model_ref: judge}
"""
    root = make_project(
        CONFIG, {"w.agent.yml": "model: m\nsystem_instructions: x\n", "r.workflow.yml": workflow}
    )
    run = run_tests([root / "r.workflow.yml"], history=False)
    tasks = {t.name: t.task_description for t in run.tests}
    assert tasks["asked"] == "Summarise 2026-10, with love"
    assert tasks["chained"] == "Shorter: positive"
