"""From executions to a verdict: each branch's means, its rank, the winner, and whether
the winner is more than noise.

With one iteration the ranking is the Testing API's: each criterion on the one execution per
branch. With several, branches are ranked on their mean metrics (so the ranks, the
winner and the Pareto front agree with the table), every iteration is also ranked on
its own (the winner distribution), and the winner is called *significant* only when
the 95% bootstrap interval of its per-iteration criterion score does not overlap the
runner-up's: "no significant winner" rather than crowning noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import TYPE_CHECKING

from ...evaluation import bootstrap_interval
from .ranking import (
    MIN_SAMPLES,
    BranchScore,
    higher_is_better,
    rank,
    significance,
    winner_distribution,
)
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
        latency_ms=_to_the_ms(_mean([o.latency_ms for o in ok])),
        cost=_mean([o.estimated_cost for o in ok]),
    )


def _to_the_ms(latency: float | None) -> float | None:
    """Latency as the ranking compares it: to the millisecond, so identical configurations
    tie (and the Testing API's tie rule, control first then name, decides) instead of ranking by
    a timer's sub-millisecond noise."""
    return None if latency is None else float(round(latency))


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
    unanswered = [b.name for b in branches if not runs[b.id]]
    if result.interrupted and unanswered:
        # Not errors: the run stopped before these answered.
        result.notes = [
            n
            for n in result.notes
            if " errored (" not in n and n != "every branch errored: no winner"
        ]
        errored = sorted(
            b.name for b in branches if runs[b.id] and not any(o.ok for o in runs[b.id])
        )
        if errored:
            result.notes.append(
                f"{len(errored)} branch(es) errored ({', '.join(errored)}): ranked last"
            )
        result.notes.append(
            f"interrupted before {', '.join(sorted(unanswered))} answered: ranked last, not errors"
        )
    if result.iterations > 1:
        _iterations(result, branches, runs)
    _only_beyond_noise(result)


def _only_beyond_noise(result: ABCaseResult) -> None:
    """No winner unless the lead is more than noise: with two branches or more answering,
    the leader wins only when the significance call says so (iterations > 1). One
    iteration cannot tell a gap from noise (a 0.0008 quality gap, 4 ms of latency), so
    it names the leader in a note and calls no winner."""
    result.leader = result.winner
    answered = [s for s in result.branches if s.ok]
    if result.winner is None or len(answered) < 2 or result.significant is True:
        return
    leader = result.winner.branch.name
    result.winner = None
    if result.iterations <= 1:
        result.notes.append(
            f"no winner: '{leader}' ranks first on {result.criteria}, but one iteration "
            f"cannot tell a difference from noise; run {MIN_SAMPLES} iterations or more "
            "(--iterations) for a winner"
        )
    elif not any(n.startswith("no significant winner") for n in result.notes):
        result.notes.append(f"no winner: '{leader}' ranks first, but not beyond the noise")


_WHY_NOT = {
    "overlap": "the 95% intervals of '{w}' and '{r}' on {c} overlap over {n} iterations; "
    "run more iterations to separate them",
    "too_few": "fewer than {m} scored iterations per branch: too few to tell '{w}' from "
    "'{r}' on {c}",
    "no_scores": "no branch has a {c} score in every iteration to compare",
}


def _iterations(
    result: ABCaseResult,
    branches: Sequence[TestBranch],
    runs: Mapping[str, Sequence[BranchOutcome]],
) -> None:
    """Each iteration ranked on its own (the winner distribution); 95% intervals of each
    branch's metrics; the significance call on the per-iteration criterion scores."""
    # Only iterations every branch finished: in one a run was interrupted in, a branch
    # that had not answered yet would lose by default.
    done = sorted(
        set.intersection(*({o.iteration for o in runs[b.id]} for b in branches))
        if branches
        else set()
    )
    result.iterations_done = len(done)
    if len(done) < result.iterations:
        result.notes.append(
            f"{len(done)} of {result.iterations} iterations finished for every branch; the "
            "distribution and the significance call count those only"
        )
    per_iteration: list[dict[str, float | None]] = []
    winners: list[str | None] = []
    for i in done:
        ranking = rank(
            [_score(b, [o for o in runs[b.id] if o.iteration == i]) for b in branches],
            result.criteria,
        )
        winners.append(ranking.winner)
        per_iteration.append(dict(ranking.scores))
    names = {b.id: b.name for b in branches}
    result.winner_distribution = {
        names[w]: n for w, n in winner_distribution(winners).items() if w in names
    }
    for summary in result.branches:
        ok = [o for o in runs[summary.branch.id] if o.ok]
        for key, values in (
            ("criterion", [s.get(summary.branch.id) for s in per_iteration]),
            ("qualityScore", [o.quality_score for o in ok]),
            ("latencyMs", [o.latency_ms for o in ok]),
            ("estimatedCost", [o.estimated_cost for o in ok]),
        ):
            finite = [v for v in values if v is not None and math.isfinite(v)]
            interval = bootstrap_interval(finite)
            if interval is not None:
                summary.intervals[key] = interval
    winner, ranked = result.winner, [s for s in result.branches if s.ok]
    if winner is None or len(ranked) < 2:
        result.significant = None  # one branch answered: nothing to be significant against
        return
    call = significance(
        per_iteration,
        higher_is_better(result.criteria),
        tie_order=[s.branch.id for s in result.branches],
    )
    same = call.winner == winner.branch.id
    result.significant = call.significant and same
    if result.significant:
        return
    runner_up = names.get(call.runner_up or "", "") or next(
        s.branch.name for s in ranked if s is not winner
    )
    if call.significant and not same:
        why = (
            f"'{names.get(call.winner or '', '?')}' has the best mean {result.criteria} score "
            f"per iteration while '{winner.branch.name}' ranks first on the mean metrics"
        )
    else:
        why = _WHY_NOT.get(call.reason, _WHY_NOT["overlap"]).format(
            w=winner.branch.name, r=runner_up, c=result.criteria, n=len(done), m=MIN_SAMPLES
        )
    result.notes.append(f"no significant winner: {why}")
