"""run_test_suite as Autoblocks defines it: its argument order, an empty suite refused,
scores outside 0..1, repeated test cases, the before-evaluators hook, grid search, retries
of a function that could not connect, and the verdicts compared with Autoblocks' own
Evaluation.passed (the table below is what autoblocksai 0.0.137 answers)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from oxyeval.testing import (
    BaseTestCase,
    BaseTestEvaluator,
    Evaluation,
    GridSearchResult,
    TestCaseConfig,
    Threshold,
    grid_search_ctx,
    md5,
    run_test_suite,
)


@dataclass
class Topic(BaseTestCase):
    name: str
    expected: list[str] = field(default_factory=list)
    test_case_config: TestCaseConfig | None = None

    def hash(self) -> str:
        return md5(self.name)


class Mentions(BaseTestEvaluator):
    id = "mentions"

    def evaluate_test_case(self, test_case: Topic, output: str) -> Evaluation:
        found = sum(1 for word in test_case.expected if word in output)
        return Evaluation(score=found, threshold=Threshold(gte=len(test_case.expected)))


def test_md5_is_the_hex_digest_autoblocks_hashes_with() -> None:
    assert md5("a") == "0cc175b9c0f1b6a831c399e269772661"  # RFC 1321's test suite
    assert md5("é") == "66ddcd97cfdeabb2f6fb8a999b4bc76f"  # UTF-8, as Autoblocks encodes


# Autoblocks 0.0.137's Evaluation(score, Threshold(...)).passed() for these rows.
@pytest.mark.parametrize(
    ("score", "bounds", "verdict"),
    [
        (7, {"gte": 5}, True),
        (-1, {"gte": 0}, False),
        (42, {"lt": 10}, False),
        (1.5, {"gt": 1, "lte": 2}, True),
        (0.3, {}, None),  # a threshold with no bound decides nothing
        (100, None, None),
    ],
)
def test_scores_outside_zero_to_one_pass_by_their_threshold_as_autoblocks_says(
    score: float, bounds: dict[str, float] | None, verdict: bool | None
) -> None:
    threshold = None if bounds is None else Threshold(**bounds)
    assert Evaluation(score, threshold).passed() is verdict


def test_autoblocks_positional_order_and_keywords_both_work(here: Path) -> None:
    cases = [Topic("calculus", ["limits"])]
    by_position = run_test_suite("order", cases, lambda t: "limits", [Mentions()])
    by_keyword = run_test_suite(
        id="order",
        test_cases=cases,
        evaluators=[Mentions()],
        fn=lambda t: "no",
        print_results=False,
    )
    assert by_position.passed and not by_keyword.passed  # type: ignore[union-attr]


def test_the_old_order_and_an_empty_suite_are_clear_errors(here: Path) -> None:
    with pytest.raises(TypeError, match=r"fn= and evaluators= by keyword"):
        run_test_suite("old", [Topic("a")], [Mentions()], lambda t: "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"run_test_suite 'empty': no test cases given"):
        run_test_suite("empty", [], lambda t: "x", [Mentions()])
    with pytest.raises(ValueError, match=r"grid_search_params\['model'\] has no value"):
        run_test_suite("g", [Topic("a")], lambda t: "x", grid_search_params={"model": []})


def test_a_score_outside_zero_to_one_is_reported_and_decides_by_its_threshold(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [Topic("calculus", ["limits", "series", "derivatives"]), Topic("algebra", ["rings"])]
    result = run_test_suite("counts", cases, lambda t: "limits and series and rings", [Mentions()])
    calculus, algebra = result.outcomes  # type: ignore[union-attr]
    assert calculus.evaluations["mentions"].score == 2  # type: ignore[union-attr]
    assert calculus.failed and not algebra.failed and not result.passed
    assert result.decision is not None and result.decision.code == 1  # type: ignore[union-attr]
    assert result.decision.reasons == [f"{md5('calculus')} / mentions: score 2 < threshold 3"]  # type: ignore[union-attr]
    assert "2.00 FAIL" in capsys.readouterr().out


def test_repeated_test_cases_and_the_hook_reach_every_evaluator(here: Path) -> None:
    seen: list[tuple[str, Any]] = []
    lock = threading.Lock()
    calls = {"n": 0}

    def fn(topic: Topic) -> str:
        with lock:
            calls["n"] += 1
            return f"answer {calls['n']}"

    def hook(topic: Topic, output: str) -> dict[str, int]:
        return {"length": len(output)}

    class UsesHook(BaseTestEvaluator):
        id = "uses-hook"

        def evaluate_test_case(
            self, test_case: Topic, output: str, hook_results: dict[str, int]
        ) -> Evaluation:
            seen.append((test_case.name, hook_results))
            return Evaluation(1, Threshold(gte=1))

    cases = [Topic("flaky", test_case_config=TestCaseConfig(repeat_num_times=3)), Topic("once")]
    result = run_test_suite(
        "repeat", cases, fn, [UsesHook()], before_evaluators_hook=hook, print_results=False
    )
    keys = [o.hash for o in result.outcomes]  # type: ignore[union-attr]
    assert keys == [f"{md5('flaky')}-{i}" for i in range(3)] + [md5("once")]
    assert calls["n"] == 4 and len(seen) == 4
    assert all(hook_results == {"length": len("answer 1")} for _, hook_results in seen)
    with pytest.raises(ValueError, match="repeat_num_times"):
        TestCaseConfig(repeat_num_times=0)


def test_a_grid_search_is_one_run_per_combination_reported_per_combination(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def fn(topic: Topic) -> str:
        combo = grid_search_ctx()
        assert combo is not None
        return f"{combo['model']} at {combo['temperature']}"

    class PrefersSmall(BaseTestEvaluator):
        id = "prefers-small"

        async def evaluate_test_case(self, test_case: Topic, output: str) -> Evaluation:
            combo = grid_search_ctx()  # the evaluators see it too
            assert combo is not None and output.startswith(combo["model"])
            return Evaluation(1 if "small" in output else 0, Threshold(gte=1))

    result = run_test_suite(
        "grid",
        [Topic("a"), Topic("b")],
        fn,
        [PrefersSmall()],
        grid_search_params={"model": ["small", "large"], "temperature": [0, 1]},
    )
    assert isinstance(result, GridSearchResult) and not result.passed
    assert [r.params for r in result.runs] == [
        {"model": "small", "temperature": 0},
        {"model": "small", "temperature": 1},
        {"model": "large", "temperature": 0},
        {"model": "large", "temperature": 1},
    ]
    assert [r.passed for r in result.runs] == [True, True, False, False]
    assert result.runs[3].outcomes[0].output == "large at 1"
    out = capsys.readouterr().out
    assert "test suite grid [model='large', temperature=1]" in out
    assert grid_search_ctx() is None


def test_retry_count_tries_a_function_that_could_not_connect_again(here: Path) -> None:
    attempts = {"n": 0}

    def fn(topic: Topic) -> str:
        attempts["n"] += 1
        if attempts["n"] < 3:
            raise httpx.ConnectError("connection refused")
        return "ok"

    result = run_test_suite("retry", [Topic("a")], fn, retry_count=2, print_results=False)
    assert result.outcomes[0].output == "ok" and attempts["n"] == 3  # type: ignore[union-attr]
    attempts["n"] = 0
    failed = run_test_suite("retry", [Topic("a")], fn, retry_count=1, print_results=False)
    assert failed.outcomes[0].error == "ConnectError: connection refused"  # type: ignore[union-attr]
    assert attempts["n"] == 2
