"""From executions to a verdict: each branch's means, its rank, the winner, and whether
the winner is more than noise.

With one iteration the ranking is the seed's: each criterion on the one execution per
branch. With several, branches are ranked on their mean metrics (so the ranks, the
winner and the Pareto front agree with the table), every iteration is also ranked on
its own (the winner distribution), and the winner is called *significant* only when
the 95% bootstrap interval of its per-iteration criterion score does not overlap the
runner-up's: "no significant winner" rather than crowning noise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import TYPE_CHECKING

from ...evaluation import bootstrap_interval
from .ranking import BranchScore, rank
from .results import ABCaseResult, BranchOutcome, BranchSummary

if TYPE_CHECKING:
    from ...store import TestBranch

__all__ = ["summarise"]


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return fmean(known) if known else None


def _score(branch: TestBranch, outcomes: Sequence[BranchOutcome]) -> BranchScore:
    ok = [o for o in outcomes if o.ok]
    return BranchScore(
        branch_id=branch.id,
        name=branch.name,
        is_control=branch.is_control,
        ok=bool(ok),
        quality=_mean([o.quality_score for o in ok]),
        latency_ms=_mean([o.latency_ms for o in ok]),
        cost=_mean([o.estimated_cost for o in ok]),
    )


def summarise(
    result: ABCaseResult,
    branches: Sequence[TestBranch],
    outcomes: Mapping[str, Sequence[BranchOutcome]],
) -> None:
    """Fill ``result``'s branches (by rank), winner, distribution and significance."""
    runs = {b.id: sorted(outcomes.get(b.id, ()), key=lambda o: o.iteration) for b in branches}
    ranking = rank([_score(b, runs[b.id]) for b in branches], result.criteria)
    names = {b.id: b.name for b in branches}
    summaries = []
    for branch in branches:
        done = runs[branch.id]
        ok = [o for o in done if o.ok]
        dominated = ranking.pareto.get(branch.id, ())
        summaries.append(
            BranchSummary(
                branch=branch,
                outcomes=list(done),
                rank=ranking.ranks.get(branch.id, len(branches)),
                quality_score=_mean([o.quality_score for o in ok]),
                latency_ms=_mean([o.latency_ms for o in ok]),
                time_to_first_token=_mean([o.time_to_first_token for o in ok]),
                tokens_per_second=_mean([o.tokens_per_second for o in ok]),
                estimated_cost=_mean([o.estimated_cost for o in ok]),
                criterion_score=ranking.scores.get(branch.id),
                pareto_optimal=not dominated,
                dominated_by=tuple(names.get(d, d) for d in dominated),
            )
        )
    summaries.sort(key=lambda s: (s.rank, s.branch.name))
    result.branches = summaries
    result.winner = next((s for s in summaries if s.branch.id == ranking.winner), None)
    result.notes = list(ranking.notes)
    if result.iterations > 1:
        _iterations(result, branches, runs)


def _iterations(
    result: ABCaseResult,
    branches: Sequence[TestBranch],
    runs: Mapping[str, Sequence[BranchOutcome]],
) -> None:
    """Each iteration ranked on its own; intervals; the significance call."""
    done = sorted({o.iteration for outs in runs.values() for o in outs})
    per_branch: dict[str, list[float]] = {b.id: [] for b in branches}
    winners: list[str] = []
    for i in done:
        ranking = rank(
            [_score(b, [o for o in runs[b.id] if o.iteration == i]) for b in branches],
            result.criteria,
        )
        if ranking.winner is not None:
            winners.append(ranking.winner)
        for branch_id, value in ranking.scores.items():
            if value is not None:
                per_branch[branch_id].append(value)
    names = {b.id: b.name for b in branches}
    result.winner_distribution = {names[w]: n for w, n in Counter(winners).most_common()}
    for summary in result.branches:
        ok = [o for o in runs[summary.branch.id] if o.ok]
        for key, values in (
            ("criterion", per_branch[summary.branch.id]),
            ("qualityScore", [o.quality_score for o in ok if o.quality_score is not None]),
            ("latencyMs", [o.latency_ms for o in ok if o.latency_ms is not None]),
            ("estimatedCost", [o.estimated_cost for o in ok if o.estimated_cost is not None]),
        ):
            interval = bootstrap_interval(values)
            if interval is not None:
                summary.intervals[key] = interval
    winner, ranked = result.winner, [s for s in result.branches if s.ok]
    if winner is None or len(ranked) < 2:
        result.significant = None
        return
    runner_up = next(s for s in ranked if s is not winner)
    mine, theirs = winner.intervals.get("criterion"), runner_up.intervals.get("criterion")
    if mine is None or theirs is None:
        result.significant = False
        result.notes.append(
            f"no significant winner: '{runner_up.branch.name}' or '{winner.branch.name}' has "
            f"no {result.criteria} score to compare"
        )
        return
    result.significant = not mine.overlaps(theirs)
    if not result.significant:
        result.notes.append(
            f"no significant winner: the 95% intervals of '{winner.branch.name}' and "
            f"'{runner_up.branch.name}' on {result.criteria} overlap over "
            f"{len(done)} iterations; run more iterations to separate them"
        )
