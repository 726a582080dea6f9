"""Consistency scoring: which pairs to judge, and what the verdicts add up to.

Pure functions over run outputs and verdicts, so the arithmetic (dedupe weights,
per-output scores, the tie-break) is tested without any model. The async part
only fans judge calls out under a concurrency limit.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

from .._tasks import gather_settled
from ..project.tests import DEFAULT_MIN_JUDGED  # the share of pairs that must be judged
from .cluster_pairing import ClusterPairing, judge_by_cluster
from .swap import judge_comparison

if TYPE_CHECKING:
    from .judge import JudgeResult

__all__ = [
    "DEFAULT_MIN_JUDGED",
    "Assessment",
    "Compare",
    "Comparison",
    "ConsistencyScore",
    "assess",
    "evaluate",
    "judge_comparisons",
    "normalize",
    "pair_count",
    "pair_order",
    "plan_comparisons",
    "plan_pairs",
    "score_comparisons",
]


def normalize(text: str) -> str:
    """Whitespace-insensitive form: outputs equal under it need no judge."""
    return " ".join(text.split())


def _text_rank(normalised: str) -> str:
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def pair_order(runs: tuple[int, int], norm: Mapping[int, str]) -> tuple[int, int]:
    """Two runs with different texts in the order the judge sees them: by a hash of the
    normalised texts, whichever run produced which. A rerun whose runs finish in the
    other order then renders the same judge prompt, and its verdict is served from the
    cache (no judge call). The hash, unlike the texts' own order, favours no kind of
    answer (shorter, or starting with a digit) with the first position. Equal texts
    (never judged) keep run order."""
    i, j = sorted(runs)
    rank_i, rank_j = _text_rank(norm[i]), _text_rank(norm[j])
    return (j, i) if rank_j < rank_i else (i, j)


def plan_pairs(runs: Sequence[int], pairing: str = "all") -> list[tuple[int, int]]:
    """Run pairs to compare. ``all``: every pair; ``ring``: oxy's n adjacent pairs;
    ``cluster``: every pair too, most of them inferred rather than judged
    (:mod:`.cluster_pairing`)."""
    runs = list(runs)
    if len(runs) < 2:
        return []
    if pairing == "ring":
        if len(runs) == 2:
            return [(runs[0], runs[1])]
        return [(runs[k], runs[(k + 1) % len(runs)]) for k in range(len(runs))]
    if pairing not in ("all", "cluster"):
        raise ValueError(f"unknown pairing {pairing!r}")
    return list(combinations(runs, 2))


def pair_count(n: int, pairing: str = "all") -> int:
    """How many run pairs :func:`plan_pairs` plans for n runs, without listing them."""
    if n < 2:
        return 0
    if pairing == "ring":
        return 1 if n == 2 else n
    return n * (n - 1) // 2


@dataclass
class Comparison:
    """One judgement that stands for every run pair with the same two texts."""

    runs: tuple[int, int]  # the first pair (in plan order) with these texts
    weight: int = 0  # run pairs this judgement stands for
    counts: dict[int, int] = field(default_factory=dict)  # run -> its pairs among them
    identical: bool = False
    choice: str | None = None  # "A", "B", or None (not judged yet / judge error)
    reasoning: str = ""
    error: str | None = None
    judge_calls: int = 0
    cached: bool = False  # the verdict was served from the cache (no judge call made)
    #: The judge sees ``runs[1]``'s text as submission 1 (:func:`pair_order`).
    swapped: bool = False
    #: ``pairing: cluster``: the verdict follows from the answer clusters, not a call.
    inferred: bool = False
    #: ``judge_swap``: judged in both orders (:mod:`.swap`); ``position_bias`` when the
    #: two orders disagreed (then a judge error, no verdict).
    swap_judged: bool = False
    position_bias: bool = False

    @property
    def judged_order(self) -> tuple[int, int]:
        """The runs in the order the judge sees their texts (submission 1, submission 2)."""
        return (self.runs[1], self.runs[0]) if self.swapped else self.runs

    def add_pair(self, i: int, j: int, times: int = 1) -> None:
        self.weight += times
        self.counts[i] = self.counts.get(i, 0) + times
        self.counts[j] = self.counts.get(j, 0) + times


_IDENTICAL = "identical outputs (after whitespace normalisation); not sent to the judge"


def _new(runs: tuple[int, int], identical: bool, norm: Mapping[int, str]) -> Comparison:
    runs = (min(runs), max(runs))
    comp = Comparison(runs=runs, identical=identical)
    if identical:
        comp.choice, comp.reasoning = "A", _IDENTICAL
    else:
        comp.swapped = pair_order(runs, norm) != runs
    return comp


def plan_comparisons(texts: dict[int, str], pairing: str = "all") -> list[Comparison]:
    """Group planned pairs by their (normalised) texts; identical texts are consistent.

    The judge sees each pair in canonical order (:func:`pair_order`,
    :attr:`Comparison.judged_order`), so the same outputs make the same judge prompts in
    any run; ``runs`` stays in run order for reports. For ``all`` the groups are built from text
    multiplicities in O(distinct²), not by listing n(n-1)/2 pairs, so n=200 costs no
    more than n=20.
    """
    norm = {run: normalize(text) for run, text in texts.items()}
    if pairing in ("all", "cluster"):
        by_text: dict[str, list[int]] = {}
        for run in sorted(texts):
            by_text.setdefault(norm[run], []).append(run)
        groups = list(by_text.values())  # in order of first appearance
        out: list[Comparison] = []
        for a, runs_a in enumerate(groups):
            if len(runs_a) > 1:
                comp = _new((runs_a[0], runs_a[1]), True, norm)
                m = len(runs_a)
                comp.weight = m * (m - 1) // 2
                comp.counts = dict.fromkeys(runs_a, m - 1)
                out.append(comp)
            for runs_b in groups[a + 1 :]:
                comp = _new((runs_a[0], runs_b[0]), False, norm)
                comp.weight = len(runs_a) * len(runs_b)
                comp.counts = {
                    **dict.fromkeys(runs_a, len(runs_b)),
                    **dict.fromkeys(runs_b, len(runs_a)),
                }
                out.append(comp)
        # Plan order: by the first pair each judgement stands for.
        return sorted(out, key=lambda c: c.runs)
    found: dict[tuple[str, str], Comparison] = {}
    for i, j in plan_pairs(sorted(texts), pairing):
        a, b = norm[i], norm[j]
        key = (a, b) if a <= b else (b, a)
        comp = found.get(key)
        if comp is None:
            comp = found[key] = _new((i, j), a == b, norm)
        comp.add_pair(i, j)
    return list(found.values())


async def judge_comparisons(
    comparisons: Sequence[Comparison],
    texts: dict[int, str],
    compare: Compare,
    *,
    concurrency: int = 10,
    on_done: Callable[[Comparison], None] | None = None,
    swap: bool = False,
) -> None:
    """Judge every non-identical comparison once (with ``swap``, in both orders)."""
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(comp: Comparison) -> None:
        await judge_comparison(comp, texts, compare, semaphore, swap=swap)
        if on_done is not None:
            on_done(comp)

    # Settled: when cancelled, no verdict arrives after the caller has kept the ones so far.
    await gather_settled(*(one(c) for c in comparisons if not c.identical))


@dataclass
class ConsistencyScore:
    accuracy: float | None  # mean of scores[verdict] over judged pairs; None if none judged
    pairs: int  # run pairs planned
    judged_pairs: int  # run pairs with a verdict (identical ones included)
    judge_calls: int
    per_run: dict[int, float | None]  # share of each run's comparisons judged consistent
    selected: int | None  # most consistent run; ties -> earliest run


def score_comparisons(
    comparisons: Sequence[Comparison],
    runs: Sequence[int],
    scores: dict[str, float],
) -> ConsistencyScore:
    total_weight = 0
    total_score = 0.0
    consistent: dict[int, int] = dict.fromkeys(runs, 0)
    compared: dict[int, int] = dict.fromkeys(runs, 0)
    for comp in comparisons:
        if comp.choice is None:
            continue
        value = scores.get(comp.choice, 0.0)
        total_weight += comp.weight
        total_score += value * comp.weight
        for run, count in comp.counts.items():
            compared[run] += count
            if comp.choice == "A":
                consistent[run] += count
    per_run = {run: (consistent[run] / compared[run] if compared[run] else None) for run in runs}
    judged = [c for c in comparisons if not c.identical]
    if judged and all(c.choice is None for c in judged):
        # Identical pairs alone would score 1.0 although the judge never spoke: no score,
        # and no "most consistent" output picked from the identical pairs alone either.
        total_weight = 0
        per_run = dict.fromkeys(runs)
    ranked = [run for run in runs if per_run[run] is not None]
    selected = None
    if ranked:
        # max() keeps the first of equal keys, so sorting by run gives the earliest on ties.
        selected = max(sorted(ranked), key=lambda r: per_run[r])  # type: ignore[arg-type,return-value]
    return ConsistencyScore(
        accuracy=total_score / total_weight if total_weight else None,
        pairs=sum(c.weight for c in comparisons),
        judged_pairs=total_weight,
        judge_calls=sum(c.judge_calls for c in comparisons),
        per_run=per_run,
        selected=selected,
    )


#: Judges two texts: what :meth:`oxyeval.judge.Judge.comparer` returns.
Compare = Callable[[str, str], Awaitable["JudgeResult"]]


async def evaluate(
    texts: dict[int, str],
    compare: Compare,
    *,
    pairing: str,
    scores: dict[str, float],
    concurrency: int,
    on_planned: Callable[[int], None] | None = None,
    on_done: Callable[[Comparison], None] | None = None,
    pairing_check: list[ClusterPairing] | None = None,
    swap: bool = False,
) -> tuple[list[Comparison], ConsistencyScore]:
    """Plan, judge and score: the one consistency routine for tests and workflow tasks.
    With ``pairing: cluster``, what the clustering judged and checked is appended to
    ``pairing_check``."""
    comparisons = plan_comparisons(texts, pairing)
    if pairing == "cluster":
        # Calls are not known ahead: the all-pairs count is the most there can be.
        if on_planned is not None:
            on_planned(sum(1 for c in comparisons if not c.identical))
        report = await judge_by_cluster(
            comparisons, texts, compare, concurrency=concurrency, on_done=on_done, swap=swap
        )
        if pairing_check is not None:
            pairing_check.append(report)
        return comparisons, score_comparisons(comparisons, sorted(texts), scores)
    if on_planned is not None:
        on_planned(sum(1 for c in comparisons if not c.identical))
    await judge_comparisons(
        comparisons, texts, compare, concurrency=concurrency, on_done=on_done, swap=swap
    )
    return comparisons, score_comparisons(comparisons, sorted(texts), scores)


@dataclass
class Assessment:
    """The outcome of judging one set of runs, with the reason when it has no accuracy."""

    comparisons: list[Comparison]
    score: ConsistencyScore
    total_pairs: int  # pairs all n runs would give: failed runs count against the share
    error: str | None  # why there is no accuracy; None when the runs were scored
    #: ``pairing: cluster``: calls made and saved, the check of the inferred verdicts.
    pairing_check: ClusterPairing | None = None

    @property
    def accuracy(self) -> float | None:
        return None if self.error is not None else self.score.accuracy

    @property
    def selected(self) -> int | None:
        """No "most consistent" output from runs that could not be scored."""
        return None if self.error is not None else self.score.selected


async def assess(
    texts: dict[int, str],
    compare: Compare,
    *,
    n: int,
    pairing: str = "all",
    scores: dict[str, float] | None = None,
    min_judged: float = DEFAULT_MIN_JUDGED,
    concurrency: int = 10,
    on_planned: Callable[[int], None] | None = None,
    on_done: Callable[[Comparison], None] | None = None,
    swap: bool = False,
) -> Assessment:
    """Judge the successful runs of n and decide whether the result is a score.

    The one rule for ``oxy test`` and a workflow task's ``consistency_run``: no accuracy
    without a verdict, and none from fewer than ``min_judged`` of the n runs' pairs
    (1 judged pair of 10 says little; failed runs count against the share).
    """
    checks: list[ClusterPairing] = []
    comparisons, score = await evaluate(
        texts,
        compare,
        pairing=pairing,
        scores=scores or {"A": 1.0, "B": 0.0},
        concurrency=concurrency,
        on_planned=on_planned,
        on_done=on_done,
        pairing_check=checks,
        swap=swap,
    )
    total = pair_count(n, pairing)
    errors = [c.error for c in comparisons if c.error]
    error = None
    if score.accuracy is None:
        error = (
            f"no valid verdicts: all {len(errors)} comparison(s) sent to the judge failed; "
            f"first: {errors[0]}"
            if errors
            else "no valid verdicts"
        )
    elif total and score.judged_pairs + 1e-9 < min_judged * total:
        failed = n - len(texts)
        why = [f"{failed} of {n} runs failed"] if failed else []
        if errors:
            why.append(f"{len(errors)} judge error(s), first: {errors[0]}")
        error = (
            f"only {score.judged_pairs} of {total} run pairs got a verdict "
            f"({score.judged_pairs / total:.0%}; min_judged is {min_judged:.0%}): "
            f"{'; '.join(why)}"
        )
    return Assessment(comparisons, score, total, error, checks[0] if checks else None)
