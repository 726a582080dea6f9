"""The SDK's runs on the one run pipeline: ``evaluate``, ``assert_test`` and
``run_test_suite`` are runs of kind ``sdk`` that tell their events, keep a run row and
its results in the history's ``results`` table, replay the judge's answers on a rerun
(a fake OpenAI server on 127.0.0.1 counts the requests), learn a refusal of structured
output once per run, and pass or fail only by the one decision."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import oxyeval.evaluation.decision as core
from oxyeval.evaluation import (
    CacheServed,
    Decision,
    Event,
    ResultRecorded,
    RunFinished,
    RunStarted,
    SampleFinished,
    ScoreRecorded,
    SubjectStarted,
)
from oxyeval.store import open_store
from oxyeval.suites import progress_events
from oxyeval.testing import (
    BaseMetric,
    BaseTestCase,
    ConsistencyMetric,
    ConversationalTestCase,
    ConversationRelevancyMetric,
    ErrorConfig,
    ExactMatchMetric,
    GEval,
    IsEqual,
    LLMJudge,
    LLMTestCase,
    MetricEvaluator,
    assert_test,
    evaluate,
    run_test_suite,
)
from oxyeval.testing import _pytest as plugin
from tests.fakes import RecordedRequest, judge_reply, last_user_text
from tests.testing.test_judged import fake_openai, project

MOCK = "models:\n  - {name: m, vendor: mock, outputs: [x]}\n"


def case(answer: str = "Paris", question: str = "capital of France?") -> LLMTestCase:
    return LLMTestCase(input=question, actual_output=answer, expected_output="Paris")


class Boom(BaseMetric):
    name = "Boom"

    async def _a_score(self, test_case: LLMTestCase) -> tuple[float, str | None]:
        raise RuntimeError("bug in the metric")


@dataclass
class Question(BaseTestCase):
    country: str
    capital: str

    def hash(self) -> str:
        return self.country


@pytest.fixture
def mock_project(here: Path) -> Path:
    (here / "config.yml").write_text(MOCK, encoding="utf-8")
    return here


def db(root: Path) -> Path:
    return root / ".oxy" / "oxyeval.db"


# -- events -----------------------------------------------------------------------------


def test_evaluate_tells_its_run_as_events(mock_project: Path) -> None:
    seen: list[Event] = []
    result = evaluate(
        [case("Paris"), case("Lyon", "capital again?")],
        [ExactMatchMetric(), Boom()],
        events=seen.append,
        print_results=False,
        error_config=ErrorConfig(ignore_errors=True),
    )
    assert {e.kind for e in seen} == {"sdk"}
    assert isinstance(seen[0], RunStarted) and seen[0].subjects == 2
    started = [e for e in seen if isinstance(e, SubjectStarted)]
    assert sorted(e.subject for e in started) == [
        "evaluate::capital again?",
        "evaluate::capital of France?",
    ]
    assert [e.steps for e in started] == [2, 2]  # one per metric: no output to produce
    scores = [
        (e.subject.split("::")[1], e.metric, e.value) for e in seen if isinstance(e, ScoreRecorded)
    ]
    assert sorted(scores, key=str) == sorted(
        [
            ("capital of France?", "Exact Match", 1.0),
            ("capital of France?", "Boom", None),
            ("capital again?", "Exact Match", 0.0),
            ("capital again?", "Boom", None),
        ],
        key=str,
    )
    recorded = [e.result for e in seen if isinstance(e, ResultRecorded)]
    assert sorted((r.subject, r.status, r.passed) for r in recorded) == [
        ("evaluate::capital again?::Boom", "error", None),
        ("evaluate::capital again?::Exact Match", "scored", False),
        ("evaluate::capital of France?::Boom", "error", None),
        ("evaluate::capital of France?::Exact Match", "scored", True),
    ]
    finished = seen[-1]
    assert isinstance(finished, RunFinished)
    # Metrics that could not score: the run did not do all its work, and its outcome is unknown.
    assert finished.status == "failed" and finished.results == 4
    assert finished.decision is result.decision and finished.decision.code == 3
    assert not result.success


def test_a_suite_tells_each_output_and_drives_a_progress_display(mock_project: Path) -> None:
    class Bars:
        def __init__(self) -> None:
            self.total: dict[str, int] = {}
            self.done: dict[str, int] = {}

        def start(self, key: str, label: str, total: int) -> None:
            self.total[key], self.done[key] = total, 0

        def add_total(self, key: str, amount: int) -> None:
            self.total[key] += amount

        def advance(self, key: str, amount: int = 1) -> None:
            self.done[key] += amount

    def app(q: Question) -> str:
        if q.country == "Atlantis":
            raise LookupError("no such country")
        return "Paris"

    bars, seen = Bars(), []
    run_test_suite(
        "capitals",
        [Question("France", "Paris"), Question("Italy", "Rome"), Question("Atlantis", "?")],
        app,
        [IsEqual("equal", lambda q: q.capital)],
        print_results=False,
        events=[seen.append, progress_events(bars)],
    )
    samples = {e.subject: e for e in seen if isinstance(e, SampleFinished)}
    assert sorted(samples) == ["capitals::Atlantis", "capitals::France", "capitals::Italy"]
    assert samples["capitals::Atlantis"].error == "LookupError: no such country"
    assert samples["capitals::France"].error is None
    assert samples["capitals::France"].latency_ms is not None
    assert bars.total == {k: 2 for k in samples}  # the output, then its one evaluator
    assert bars.done == bars.total


# -- the history ------------------------------------------------------------------------


def mixed_suite(root: Path) -> None:
    """2 passing test cases, 4 failing their evaluator, 2 whose fn fails (errors)."""
    cases = [Question(f"ok{i}", "Paris") for i in range(2)]
    cases += [Question(f"wrong{i}", "Rome") for i in range(4)]
    cases += [Question(f"boom{i}", "Paris") for i in range(2)]

    def app(q: Question) -> str:
        if q.country.startswith("boom"):
            raise RuntimeError("the app crashed")
        return "Paris"

    result = run_test_suite(
        "mixed", cases, app, [IsEqual("equal", lambda q: q.capital)], print_results=False
    )
    assert not result.passed and result.decision is not None and result.decision.code == 3
    assert [o.failed for o in result.outcomes] == [False] * 2 + [True] * 6


def test_a_suite_is_one_run_of_kind_sdk_with_its_results_in_the_results_table(
    mock_project: Path,
) -> None:
    mixed_suite(mock_project)
    with open_store(db(mock_project), read_only=True) as store:
        (run,) = store.runs.list(5, kind="sdk")
        assert run.subject == "mixed" and run.kind == "sdk"
        assert run.status == "failed"  # two test cases could not be tested: the one rule
        assert run.total == 8 and run.done == 8
        rows = store.results.for_run(run.id)
    assert sum(r.passed is True for r in rows) == 2
    assert sum(r.passed is False and r.status == "scored" for r in rows) == 4
    errors = [r for r in rows if r.status == "error"]
    assert len(errors) == 2 and {r.error for r in errors} == {"RuntimeError: the app crashed"}
    assert all(r.kind == "sdk" and r.subject.startswith("mixed::") for r in rows)


def test_the_run_row_counts_its_failures_and_errors(mock_project: Path) -> None:
    mixed_suite(mock_project)
    with open_store(db(mock_project), read_only=True) as store:
        (run,) = store.runs.list(5, kind="sdk")
    assert (run.passed, run.failed, run.errors) == (2, 4, 2)


# -- the judge's answers, replayed ------------------------------------------------------


def judge(request: RecordedRequest) -> object:
    """The project's judge: a consistency verdict, an LLM judge's PASS, or a grade."""
    prompt = last_user_text(request.body)
    if "[Submission 1]" in prompt:
        return judge_reply("A")(request)
    if "[Criterion]" in prompt:
        return '{"reason": "It names the capital.", "verdict": "PASS"}'
    return '{"reason": "Right.", "score": 8}'


def correctness() -> GEval:
    return GEval("Correctness", criteria="The answer is right.", threshold=0.5)


def outputs(*texts: str) -> ConversationalTestCase:
    return ConversationalTestCase([LLMTestCase(input="q", actual_output=t) for t in texts])


def test_a_rerun_of_an_unchanged_evaluate_asks_the_judge_nothing(here: Path) -> None:
    def run(served: list[Event]) -> list[float | None]:
        first = evaluate(
            [case("Paris"), case("It is Paris.", "capital?")],
            [correctness()],
            identifier="graded",
            print_results=False,
            events=served.append,
        )
        second = evaluate(
            [outputs("Paris", "It is Paris", "Paris, France")],
            [ConsistencyMetric()],
            identifier="consistent",
            print_results=False,
            events=served.append,
        )
        data = [*first.test_results, *second.test_results]
        return [d.score for t in data for d in t.metrics_data]

    with fake_openai(judge) as server:
        project(here, server)
        cold: list[Event] = []
        scores = run(cold)
        calls = len(server.requests)
        warm: list[Event] = []
        assert run(warm) == scores == [0.8, 0.8, 1.0]
        assert len(server.requests) == calls == 2 + 3  # 2 grades, 3 pairs of distinct outputs
    assert not [e for e in cold if isinstance(e, CacheServed)]
    replayed = [e for e in warm if isinstance(e, CacheServed)]
    assert sum(e.calls for e in replayed) == calls and {e.cache for e in replayed} == {"verdict"}


def test_a_rerun_of_a_suite_with_judges_asks_them_nothing_unless_told_not_to_cache(
    here: Path,
) -> None:
    def run(**options: object) -> list[float]:
        result = run_test_suite(
            "capitals",
            [Question("France", "Paris"), Question("Japan", "Tokyo")],
            lambda q: q.capital,
            [
                LLMJudge("judge", "The answer names the capital city asked about"),
                MetricEvaluator(
                    correctness(), lambda q, out: LLMTestCase(input=q.country, actual_output=out)
                ),
            ],
            print_results=False,
            **options,  # type: ignore[arg-type]
        )
        return [e.score for o in result.outcomes for e in o.evaluations.values() if e]

    with fake_openai(judge) as server:
        project(here, server)
        assert run() == [1.0, 0.8, 1.0, 0.8]
        assert len(server.requests) == 4
        assert run() == [1.0, 0.8, 1.0, 0.8]
        assert len(server.requests) == 4  # replayed from the history
        assert run(cache=False) == [1.0, 0.8, 1.0, 0.8]
        assert len(server.requests) == 8  # neither kept nor replayed: asked again


# -- one judge session per run ----------------------------------------------------------


def test_every_judge_of_a_run_learns_a_refusal_of_structured_output_once(
    here: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def answer(request: RecordedRequest) -> object:
        if "[Submission 1]" in last_user_text(request.body):
            return judge_reply("A")(request)
        return (
            '{"verdicts": [{"verdict": "yes", "reason": "r"}, {"verdict": "yes", "reason": "r"}]}'
        )

    conversation = outputs("Paris", "It is Paris")
    with (
        caplog.at_level(logging.WARNING, logger="oxyeval.judge"),
        fake_openai(answer, structured=False) as server,
    ):
        project(here, server)
        result = evaluate(
            [conversation],
            [ConversationRelevancyMetric(), ConsistencyMetric()],  # a JSON and a rubric judge
            concurrency=1,
            print_results=False,
        )
    assert [d.score for d in result.test_results[0].metrics_data] == [1.0, 1.0]
    asked = ["response_format" in r.body for r in server.requests]
    # The JSON judge's structured requests (one per form) are refused; after that the
    # run's rubric judge asks the same model in text at once.
    assert asked == [True, True, True, False, False]
    notes = [r for r in caplog.records if "refused the structured" in r.getMessage()]
    assert len(notes) == 1


# -- pass or fail: the decision's -------------------------------------------------------


@pytest.fixture(params=["pytest session", "own run"])
def where_asserted(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """assert_test inside this pytest session's run, or in a run of its own (a script)."""
    if request.param == "own run":
        monkeypatch.setattr(plugin, "_SESSIONS", [])
    return str(request.param)


def spy_on_decide(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list, Decision]]:
    calls: list[tuple[list, Decision]] = []
    real = core.decide

    def spy(results, gates, **options):  # type: ignore[no-untyped-def]
        decision = real(results, gates, **options)
        calls.append((list(results), decision))
        return decision

    monkeypatch.setattr(core, "decide", spy)
    return calls


def test_assert_test_fails_with_the_decisions_reasons(
    where_asserted: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = spy_on_decide(monkeypatch)
    with pytest.raises(AssertionError) as info:
        assert_test(case("Lyon"), [ExactMatchMetric(), Boom()])
    results, decision = calls[-1]
    assert [(r.kind, r.status, r.passed) for r in results] == [
        ("sdk", "scored", False),
        ("sdk", "error", None),
    ]
    assert decision.code == 3  # a metric that could not score: the outcome is unknown
    assert not decision.passed and str(info.value) == (
        "Metrics: Exact Match (score: 0.0, threshold: 1.0, strict: False, error: None, "
        "reason: the output differs from the expected output), Boom (score: None, "
        "threshold: 0.5, strict: False, error: RuntimeError: bug in the metric, reason: "
        "None) failed."
    )


def forced(verdict: int) -> Callable[..., Decision]:
    return lambda results, gates, **options: Decision(code=verdict, failed=("forced",))


def test_nothing_but_the_decision_passes_or_fails(
    where_asserted: str, mock_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "decide", forced(1))
    with pytest.raises(AssertionError, match=r"^metrics failed: forced$"):
        assert_test(case("Paris"), [ExactMatchMetric()])  # the metric itself passed
    passing = evaluate([case("Paris")], [ExactMatchMetric()], print_results=False)
    assert passing.test_results[0].metrics_data[0].success is True  # the metric's own check
    assert not passing.success
    right = [IsEqual("e", lambda q: q.capital)]
    suite = run_test_suite("s", [Question("France", "Paris")], lambda q: "Paris", right)
    assert suite.outcomes[0].evaluations["e"].passed() is True  # type: ignore[union-attr]
    assert not suite.passed
    monkeypatch.setattr(core, "decide", forced(0))
    assert_test(case("Lyon"), [ExactMatchMetric()])  # the metric failed; the decision did not
    assert evaluate([case("Lyon")], [ExactMatchMetric()], print_results=False).success
