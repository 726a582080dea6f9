"""ConsistencyMetric: do repeated answers to one input agree?

The outputs come as a :class:`ConversationalTestCase` whose turns all share one
``input`` (one turn per run of the app), so the metric works in ``evaluate`` and
``assert_test`` with no extra argument and every output keeps its own record.

It is the core's consistency scorer (:class:`oxyeval.evaluation.Consistency`, what
``oxy test`` scores with), judged by the project's judge under the consistency rubric:
over the n(n-1)/2 pairs of outputs, score = consistent pairs / judged pairs (one output:
1.0). Outputs equal once whitespace is normalised are consistent without asking; each
pair of distinct texts is judged once, in a canonical order (so a rerun replays its
verdicts from the cache), and counts as often as it occurs. Judge errors leave their
pairs out of the score; with fewer than half the pairs judged there is no score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._cases import ConversationalTestCase
from ._judge import JudgeError, judge_context, rubric_judge
from ._metric import BaseConversationalMetric

if TYPE_CHECKING:
    from ..judge import Assessment

__all__ = ["MAX_DISTINCT_OUTPUTS", "ConsistencyMetric"]

#: Distinct outputs one measure compares: their pairs are a judge call each.
MAX_DISTINCT_OUTPUTS = 20


def _reason(assessment: Assessment) -> str:
    comparisons = assessment.comparisons
    score = assessment.score
    consistent = sum(c.weight for c in comparisons if c.choice == "A")
    reason = f"{consistent} of {score.pairs} pairs of outputs are consistent"
    bad = [
        f"outputs {c.runs[0]} and {c.runs[1]}: {' '.join(c.reasoning.split())}"
        for c in comparisons
        if c.choice == "B"
    ]
    if bad:
        reason += "; inconsistent: " + "; ".join(bad[:5]) + ("; ..." if len(bad) > 5 else "")
    errors = [c for c in comparisons if c.error]
    if errors:
        reason += f"; {len(errors)} pair(s) not judged: {errors[0].error}"
    return reason


class ConsistencyMetric(BaseConversationalMetric):
    """Agreement of several outputs of one input, given as the turns of a
    :class:`ConversationalTestCase` that all share their ``input``: the core's
    consistency scorer (see the module docstring). At most
    :data:`MAX_DISTINCT_OUTPUTS` distinct outputs.
    """

    name = "Consistency"

    def _check(self, test_case: object) -> None:
        super()._check(test_case)
        assert isinstance(test_case, ConversationalTestCase)
        turns = test_case.exchanges()
        first = turns[0].input
        for i, turn in enumerate(turns):
            if turn.input != first:
                raise ValueError(
                    f"{self.__name__} compares outputs of one input, but turns[{i}].input "
                    "differs from turns[0].input"
                )
        from ..judge import normalize

        distinct = {normalize(t.actual_output or "") for t in turns}
        if len(distinct) > MAX_DISTINCT_OUTPUTS:
            raise ValueError(
                f"{self.__name__} compares at most {MAX_DISTINCT_OUTPUTS} distinct outputs, "
                f"got {len(distinct)}"
            )

    async def _a_score(self, test_case: ConversationalTestCase) -> tuple[float, str | None]:
        from ..evaluation import Consistency
        from ..judge import normalize

        turns = test_case.exchanges()
        texts = {k: turn.actual_output or "" for k, turn in enumerate(turns, start=1)}
        if len(texts) < 2:
            return 1.0, "one output: nothing to compare"
        if len({normalize(t) for t in texts.values()}) == 1:
            return 1.0, f"all {len(texts)} outputs are identical"
        context = await judge_context()
        judge = rubric_judge(context, self.model)
        scorer = Consistency(judge.comparer(turns[0].input), n=len(texts))
        found = await scorer.score_set(texts)
        assessment: Assessment = found.detail
        if found.score.value is None:
            raise JudgeError(assessment.error or "the judge gave no verdict")
        return found.score.value, _reason(assessment)
