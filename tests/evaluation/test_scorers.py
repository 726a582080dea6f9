"""Scorers: one output against what it should be (exact, similarity, a judge's rubric) and
a set of outputs together (consistency), each giving the Score the results carry."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from oxyeval.evaluation import (
    Consistency,
    ExactMatch,
    Expected,
    Judged,
    OutputScorer,
    SetScorer,
    Similarity,
    lexical_similarity,
)
from oxyeval.judge import PASS_FAIL, SCALE_1_5, Judge, JudgeResult
from oxyeval.providers import Model, ModelSpec
from oxyeval.providers.mock import MockAPI


def _score(scorer: OutputScorer, output: str, expected: Expected) -> Any:
    return asyncio.run(scorer.score(output, expected))


def _mock(rules: list[dict[str, Any]]) -> Model:
    return Model(MockAPI(ModelSpec(name="j", vendor="mock", options={"rules": rules})))


def test_exact_match_trims_and_has_no_value_without_an_expected_answer() -> None:
    exact = ExactMatch()
    assert _score(exact, "  positive\n", Expected("positive")).value == 1.0
    hit = _score(exact, "Positive", Expected("positive"))
    assert (hit.value, hit.passed) == (0.0, False)
    assert _score(exact, "x", Expected()).value is None


def test_similarity_calls_its_model_only_for_different_texts_and_clamps() -> None:
    calls: list[tuple[str, str]] = []

    async def cosine(a: str, b: str) -> float:
        calls.append((a, b))
        return -0.4 if "opposite" in a else 0.83

    scorer = Similarity(cosine, method="embedding:e", threshold=0.8)
    same = _score(scorer, "positive ", Expected("positive"))
    assert (same.value, same.label, calls) == (1.0, "embedding:e", [])
    close = _score(scorer, "rather positive", Expected("positive"))
    assert (close.value, close.passed, close.threshold) == (0.83, True, 0.8)
    assert _score(scorer, "the opposite", Expected("positive")).value == 0.0
    assert len(calls) == 2
    lexical = _score(Similarity(), "the total is 42", Expected("total: 42"))
    assert lexical.label == "lexical"
    assert lexical.value == pytest.approx(lexical_similarity("the total is 42", "total: 42"))


def test_a_judged_scorer_turns_a_rubric_label_into_its_value() -> None:
    judge = Judge(
        _mock([{"match": ".", "output": "Names Paris.\nVerdict: PASS"}]), rubric=PASS_FAIL
    )
    score = _score(Judged(judge, threshold=1.0), "Paris", Expected(criterion="names Paris"))
    assert (score.metric, score.value, score.label, score.passed) == (
        "pass_fail",
        1.0,
        "PASS",
        True,
    )
    assert score.reason == "Names Paris."
    graded = Judge(_mock([{"match": "Lyon", "output": "Wrong city.\nScore: 2"}]), rubric=SCALE_1_5)
    low = _score(Judged(graded), "Lyon", Expected(output="Paris"))
    assert (low.value, low.label, low.passed) == (0.25, "2", None)


def test_a_judge_without_a_verdict_is_no_score_and_never_a_pass() -> None:
    judge = Judge(_mock([{"match": ".", "output": "I cannot decide."}]), rubric=PASS_FAIL)
    score = _score(Judged(judge, threshold=0.5), "Paris", Expected(criterion="names Paris"))
    assert score.value is None and score.passed is None
    assert score.reason and "verdict" in score.reason


def test_consistency_scores_a_set_and_each_output() -> None:
    asked: list[tuple[str, str]] = []

    async def compare(a: str, b: str) -> JudgeResult:
        asked.append((a, b))
        same = ("99" in a) == ("99" in b)
        return JudgeResult("A" if same else "B", "", "", 1)

    scorer: SetScorer = Consistency(compare, n=4)
    texts = {1: "Total: 42", 2: "Total is 42", 3: "Total: 42", 4: "Total: 99"}
    result = asyncio.run(scorer.score_set(texts))
    # Six run pairs, three distinct texts: each pair of texts judged once and weighted;
    # (1,3) identical counts consistent unasked; (1,2), (2,3) A; the three with run 4 B.
    assert len(asked) == 3
    assert result.score.metric == "accuracy" and result.score.value == pytest.approx(0.5)
    assert result.per_output[4] == 0.0 and result.per_output[1] == pytest.approx(2 / 3)
    assert result.detail.selected in (1, 3)
