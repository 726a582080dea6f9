"""Scorers: the one way a kind of test measures what it produced.

Two protocols, because there are two shapes of question:

* :class:`OutputScorer`: one output against what it should be (:class:`Expected`: an
  expected answer, a natural-language criterion). Exact match, similarity (lexical or an
  embedding model's) and a judge with a rubric (PASS/FAIL, a 1-5 scale) are scorers of
  this shape; a test case uses the first two, a judged pass/fail test the third, an SDK
  metric any of them.
* :class:`SetScorer`: several outputs of one subject together (consistency today, answer
  clusters later): the score belongs to the set, with a value per output.

Each returns :class:`~oxyeval.evaluation.Score` values, the shape results carry and the
history stores, so a new metric needs no new column, report field or decision rule.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .result import Score
from .similarity import lexical_similarity

if TYPE_CHECKING:
    from ..judge import Assessment, Comparison, Judge, JudgeResult

    #: A judge's verdict on two outputs (``Judge.comparer``).
    Compare = Callable[[str, str], Awaitable[JudgeResult]]

__all__ = [
    "Consistency",
    "ExactMatch",
    "Expected",
    "Judged",
    "OutputScorer",
    "SetScore",
    "SetScorer",
    "Similarity",
]


@dataclass(frozen=True)
class Expected:
    """What one output is scored against: an expected answer, a criterion in plain
    language, and the question it answered (shown to a judge when its rubric takes it)."""

    output: str | None = None
    criterion: str | None = None
    question: str | None = None


class OutputScorer(Protocol):
    """Scores one output; raises only for infrastructure (a provider down), never for a
    bad output (that is a low score)."""

    name: str

    async def score(self, output: str, expected: Expected) -> Score: ...


@dataclass
class SetScore:
    """A set's score, each output's share of it, and the scorer's own detail."""

    score: Score
    per_output: dict[int, float | None] = field(default_factory=dict)
    detail: Any = None


class SetScorer(Protocol):
    name: str

    async def score_set(self, outputs: Mapping[int, str]) -> SetScore: ...


class ExactMatch:
    """1.0 when the output equals the expected one after trimming surrounding whitespace
    (the Testing API's definition), else 0.0; no expected output: no value."""

    name = "exact_match"

    async def score(self, output: str, expected: Expected) -> Score:
        if expected.output is None:
            return Score(self.name, None)
        same = output.strip() == expected.output.strip()
        return Score(self.name, 1.0 if same else 0.0, passed=same)


#: ``(a, b) -> similarity``; may call an embedding model.
SimilarityFn = Callable[[str, str], Awaitable[float]]


async def _lexical(a: str, b: str) -> float:
    return lexical_similarity(a, b)


class Similarity:
    """Similarity to the expected output in [0, 1]: an embedding model's cosine, or the
    lexical stand-in (:func:`~oxyeval.evaluation.lexical_similarity`) by default.
    Equal texts score 1 without a call. A negative cosine counts as 0: "opposite" is not
    better than "unrelated" for a test. ``method`` names how, in the score's label, so a
    report never passes a lexical overlap off as semantic."""

    name = "similarity"

    def __init__(
        self,
        similarity: SimilarityFn | None = None,
        *,
        method: str = "lexical",
        threshold: float | None = None,
    ) -> None:
        self._similarity = similarity or _lexical
        self.method = method
        self.threshold = threshold

    async def score(self, output: str, expected: Expected) -> Score:
        if expected.output is None:
            return Score(self.name, None, label=self.method)
        if output.strip() == expected.output.strip():
            value = 1.0
        else:
            value = min(1.0, max(0.0, float(await self._similarity(output, expected.output))))
        passed = None if self.threshold is None else value >= self.threshold
        return Score(self.name, value, label=self.method, passed=passed, threshold=self.threshold)


class Judged:
    """A judge model's verdict on one output under its rubric (PASS/FAIL, a 1-5 scale):
    the label's value is the score. The criterion is ``expected.criterion``, else "matches
    the expected answer: ...". A judge that gives no verdict (after its one re-ask) is a
    score without a value, its reason saying why: never a pass."""

    def __init__(self, judge: Judge, *, threshold: float | None = None) -> None:
        self.judge = judge
        self.name = judge.rubric.name
        self.threshold = threshold

    async def score(self, output: str, expected: Expected) -> Score:
        criterion = expected.criterion
        if criterion is None and expected.output is not None:
            criterion = f"The answer matches this expected answer: {expected.output}"
        variables: dict[str, Any] = {"output": output, "criterion": criterion or ""}
        if expected.question is not None and "input" in self.judge.rubric.optional:
            variables["input"] = expected.question
        result = await self.judge.judge(variables)
        if result.choice is None:
            return Score(self.name, None, reason=result.error or "the judge gave no verdict")
        value = self.judge.rubric.values[result.choice]
        passed = None if self.threshold is None else value >= self.threshold
        return Score(
            self.name,
            value,
            label=result.choice,
            passed=passed,
            threshold=self.threshold,
            reason=result.reasoning or None,
        )


class Consistency:
    """How consistent a subject's outputs are with each other: pairs judged by a judge's
    ``compare`` (:func:`oxyeval.judge.assess`: identical texts are not sent, each pair in
    a canonical order, ``min_judged`` of the n runs' pairs needed for a score). The
    score is the accuracy; each output's value its share of consistent pairs; the detail
    the :class:`~oxyeval.judge.consistency.Assessment`."""

    name = "accuracy"

    def __init__(
        self,
        compare: Compare,
        *,
        n: int,
        pairing: str = "all",
        scores: dict[str, float] | None = None,
        min_judged: float | None = None,
        concurrency: int = 10,
        on_planned: Callable[[int], None] | None = None,
        on_done: Callable[[Comparison], None] | None = None,
        swap: bool = False,
    ) -> None:
        self.compare, self.n, self.pairing = compare, n, pairing
        self.swap = swap  # each pair in both orders (judge_swap)
        self.scores = scores if scores is not None else {"A": 1.0, "B": 0.0}
        self.min_judged, self.concurrency = min_judged, concurrency
        self.on_planned, self.on_done = on_planned, on_done

    async def score_set(self, outputs: Mapping[int, str]) -> SetScore:
        from ..judge import assess

        extra = {} if self.min_judged is None else {"min_judged": self.min_judged}
        assessment: Assessment = await assess(
            dict(outputs),
            self.compare,
            n=self.n,
            pairing=self.pairing,
            scores=self.scores,
            concurrency=self.concurrency,
            on_planned=self.on_planned,
            on_done=self.on_done,
            swap=self.swap,
            **extra,
        )
        return SetScore(
            Score(self.name, assessment.accuracy, reason=assessment.error),
            dict(assessment.score.per_run),
            assessment,
        )
