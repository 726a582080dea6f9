"""Autoblocks-style suites: Threshold's truth table, Evaluation.passed, sync and async fn
and evaluators, errors reported per test case, duplicate hashes refused, concurrency
limits respected (measured max in flight)."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass

import pytest

from oxyeval.testing import (
    BaseTestCase,
    BaseTestEvaluator,
    Evaluation,
    HasAllSubstrings,
    IsEqual,
    IsValidJson,
    Threshold,
    run_test_suite,
)


@dataclass
class Case(BaseTestCase):
    question: str
    expected: str

    def hash(self) -> str:
        return self.question


@pytest.mark.parametrize(
    ("bounds", "score", "holds"),
    [
        ({"lt": 0.5}, 0.4, True),
        ({"lt": 0.5}, 0.5, False),
        ({"lte": 0.5}, 0.5, True),
        ({"gt": 0.5}, 0.5, False),
        ({"gt": 0.5}, 0.6, True),
        ({"gte": 0.5}, 0.5, True),
        ({"gte": 0.5}, 0.49, False),
        ({"gt": 0.2, "lt": 0.8}, 0.5, True),
        ({"gt": 0.2, "lt": 0.8}, 0.8, False),
        ({"gte": 0.2, "lte": 0.2}, 0.2, True),
    ],
)
def test_threshold_truth_table(bounds: dict, score: float, holds: bool) -> None:
    assert Threshold(**bounds).holds(score) is holds
    assert Evaluation(score, Threshold(**bounds)).passed() is holds


def test_an_evaluation_without_threshold_has_no_pass_and_bad_values_are_refused() -> None:
    assert Evaluation(0.3).passed() is None
    assert Evaluation(0.3, Threshold()).passed() is None  # no bound: decides nothing
    assert Evaluation(7, Threshold(gte=5)).passed() is True  # any number is a score
    with pytest.raises(ValueError, match="NaN"):
        Evaluation(float("nan"))
    with pytest.raises(TypeError, match="must be a number"):
        Threshold(gte="high")  # type: ignore[arg-type]


def test_sync_and_async_fn_and_evaluators_with_errors_per_case() -> None:
    cases = [Case("capital of France", "Paris"), Case("capital of Italy", "Rome"), Case("boom", "")]

    async def fn(case: Case) -> str:
        if case.question == "boom":
            raise RuntimeError("the app crashed")
        await asyncio.sleep(0)
        return "Paris" if "France" in case.question else "Milan"

    class Length(BaseTestEvaluator):
        id = "length"

        async def evaluate_test_case(self, test_case: Case, output: str) -> Evaluation:
            return Evaluation(min(1.0, len(output) / 10))  # no threshold: undefined

    class Broken(BaseTestEvaluator):
        id = "broken"

        def evaluate_test_case(self, test_case: Case, output: str) -> Evaluation:
            raise ValueError("evaluator bug")

    result = run_test_suite(
        "capitals",
        cases,
        fn,
        [IsEqual("equal", lambda c: c.expected), Length(), Broken(), IsValidJson()],
        print_results=False,
    )
    france, italy, boom = result.outcomes
    assert france.evaluations["equal"].passed() is True  # type: ignore[union-attr]
    assert italy.evaluations["equal"].passed() is False  # type: ignore[union-attr]
    assert italy.evaluations["equal"].metadata == {"expected": "Rome", "got": "Milan"}  # type: ignore[union-attr]
    assert france.evaluations["length"].passed() is None  # type: ignore[union-attr]
    assert "evaluator bug" in france.evaluator_errors["broken"]
    assert boom.error == "RuntimeError: the app crashed" and boom.evaluations == {}
    assert not result.passed


def test_duplicate_hashes_and_evaluator_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="same hash 'q'"):
        run_test_suite("s", [Case("q", "a"), Case("q", "b")], lambda c: c, print_results=False)
    with pytest.raises(ValueError, match="two evaluators have the id 'x'"):
        run_test_suite(
            "s",
            [Case("q", "a")],
            lambda c: c,
            [IsValidJson("x"), IsValidJson("x")],
            print_results=False,
        )


def test_has_all_substrings_scores_the_share_found() -> None:
    result = run_test_suite(
        "s",
        [Case("q", "")],
        lambda c: "alpha and gamma",
        [HasAllSubstrings("subs", ["alpha", "beta", "gamma", "delta"])],
        print_results=False,
    )
    evaluation = result.outcomes[0].evaluations["subs"]
    assert evaluation is not None and evaluation.score == 0.5 and evaluation.passed() is False
    assert evaluation.metadata == {"missing": ["beta", "delta"]}


def test_concurrency_limits_are_respected() -> None:
    lock = threading.Lock()
    inflight = {"fn": 0, "fn_max": 0, "ev": 0, "ev_max": 0}

    def fn(case: Case) -> str:  # sync: run in worker threads
        with lock:
            inflight["fn"] += 1
            inflight["fn_max"] = max(inflight["fn_max"], inflight["fn"])
        time.sleep(0.02)
        with lock:
            inflight["fn"] -= 1
        return case.question

    class Slow(BaseTestEvaluator):
        id = "slow"
        max_concurrency = 2

        async def evaluate_test_case(self, test_case: Case, output: str) -> Evaluation:
            inflight["ev"] += 1
            inflight["ev_max"] = max(inflight["ev_max"], inflight["ev"])
            await asyncio.sleep(0.02)
            inflight["ev"] -= 1
            return Evaluation(1.0)

    cases = [Case(f"q{i}", "") for i in range(12)]
    run_test_suite("s", cases, fn, [Slow()], max_test_case_concurrency=3, print_results=False)
    assert inflight["fn_max"] == 3 and inflight["ev_max"] == 2


def test_runs_inside_a_running_event_loop() -> None:
    async def inside() -> bool:
        return run_test_suite(
            "s",
            [Case("q", "q")],
            lambda c: c.question,
            [IsEqual("e", lambda c: c.question)],
            print_results=False,
        ).passed

    assert asyncio.run(inside()) is True


def test_the_printed_table_names_scores_and_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    run_test_suite(
        "printed", [Case("q", "x")], lambda c: "y", [IsEqual("equal", lambda c: c.expected)]
    )
    out = capsys.readouterr().out
    assert "test suite printed" in out and "0.00 FAIL" in out and "equal: 0 passed, 1 failed" in out


def test_an_llm_judge_and_a_wrapped_metric_evaluate_through_the_projects_judge(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oxyeval.testing import GEval, LLMJudge, LLMTestCase, MetricEvaluator
    from tests.fakes import fake_openai, last_user_text

    def answer(request) -> str:  # type: ignore[no-untyped-def]
        prompt = last_user_text(request.body)
        wrong = "Milan" in prompt
        if "[Criterion]" in prompt:  # the LLM judge
            if wrong:
                return '{"reason": "Milan is not the capital.", "verdict": "FAIL"}'
            return '{"reason": "It is right.", "verdict": "PASS"}'
        return '{"reason": "Wrong.", "score": 1}' if wrong else '{"reason": "Correct.", "score": 9}'

    with fake_openai(answer) as server:
        (tmp_path / "config.yml").write_text(
            "models:\n  - name: judge\n    vendor: openai\n    model_ref: j\n"
            f"    api_url: {server.url}\n    max_retries: 0\n",
            encoding="utf-8",
        )
        monkeypatch.chdir(tmp_path)
        metric = GEval("correct", criteria="The answer names the capital", threshold=0.8)
        result = run_test_suite(
            "capitals",
            [Case("capital of France", "Paris"), Case("capital of Italy", "Rome")],
            lambda c: "Paris" if "France" in c.question else "Milan",
            [
                LLMJudge("judge", "The output names the capital city asked about"),
                MetricEvaluator(
                    metric, lambda c, out: LLMTestCase(input=c.question, actual_output=out)
                ),
            ],
            print_results=False,
        )
    france, italy = result.outcomes
    assert france.evaluations["judge"].passed() is True  # type: ignore[union-attr]
    assert italy.evaluations["judge"].passed() is False  # type: ignore[union-attr]
    assert italy.evaluations["judge"].metadata == {"reason": "Milan is not the capital."}  # type: ignore[union-attr]
    assert france.evaluations["correct [GEval]"].score == 0.9  # type: ignore[union-attr]
    assert france.evaluations["correct [GEval]"].passed() is True  # type: ignore[union-attr]
    assert italy.evaluations["correct [GEval]"].passed() is False  # type: ignore[union-attr]
