"""Who won an A/B run, and whether the win is more than noise: pure functions, no I/O.

The Testing API's five winner criteria rank every branch of one run (:func:`rank`); the Pareto
front says which branches no other beats on quality, latency and cost at once; over
iterations, :func:`significance` calls a winner only when its bootstrap interval is clear
of the runner-up's, and :func:`winner_distribution` counts who won each time. The engine,
the report and the CLI feed these plain numbers, so every rule here is testable on a
scripted table.

Rules every criterion shares:

- Errored branches rank last (control first, then by name) and never win; they are off
  the Pareto front (dominated by every branch that answered) and left out of the
  balanced score's normalisation (a failed call's latency says nothing about speed).
- A branch without the criterion's value (no quality score, no price, no latency) ranks
  after those with one, and a note says so; it cannot win.
- Ties on the criterion's value break as the Testing API says, control first, then by name
  (then id), except that a branch another tied branch dominates goes after the ones
  that are not dominated: so the winner is always on the Pareto front (with control
  first alone, a control would win ``fastest`` over a branch exactly as fast and of
  higher quality, which dominates it). The engine compares latencies to the millisecond,
  so identical configurations tie instead of ranking by timer noise.
- Every branch gets a distinct rank 1..n.

Pareto dominance with unknowns: A dominates B when both have the same metrics known, A
is at least as good on each of them and strictly better on one. A metric one of them
lacks (an unknown price) makes no claim either way: "dominated" is said only on figures
both have. Every criterion's order then puts a dominating branch ahead of (or, tied,
before) the branch it dominates, so the winner is always on the front
(tests/suites/ab/test_ranking.py checks this over random tables).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ...evaluation import Interval, bootstrap_interval, min_max_normalise

__all__ = [
    "BALANCED_WEIGHTS",
    "CRITERIA",
    "DEFAULT_CRITERIA",
    "MIN_SAMPLES",
    "BranchScore",
    "Ranking",
    "Significance",
    "dominates",
    "higher_is_better",
    "rank",
    "significance",
    "winner_distribution",
]

CRITERIA = ("best_quality", "fastest", "cheapest", "best_value", "balanced")
DEFAULT_CRITERIA = "best_quality"
#: balanced = 0.4 quality + 0.3 speed + 0.3 cost, each min-max normalised over the branches
#: that answered (speed and cost inverted, so 1.0 is the fastest and the cheapest).
BALANCED_WEIGHTS = {"quality": 0.4, "latency_ms": 0.3, "cost": 0.3}
#: Fewer scored iterations than this per branch and no win is called significant: below
#: it the percentile bootstrap interval is too narrow to trust (see bootstrap_interval).
MIN_SAMPLES = 5

_HIGHER_BETTER = {
    "best_quality": True,
    "fastest": False,
    "cheapest": False,
    "best_value": True,
    "balanced": True,
}
#: metric attribute -> (word in notes, higher is better)
_METRICS = {"quality": ("quality", True), "latency_ms": ("latency", False), "cost": ("cost", False)}
_PRIMARY = {"best_quality": "quality", "fastest": "latency_ms", "cheapest": "cost"}
_MISSING = {
    "quality": "no quality score",
    "latency_ms": "no latency",
    "cost": "no price",
}


@dataclass(frozen=True)
class BranchScore:
    """One branch's numbers in one run (or its means over iterations).

    ``ok`` is False when the call errored; ``quality`` is 0..1, ``latency_ms`` the full
    response time, ``cost`` USD with None for an unknown price (never 0: 0 means free).
    """

    branch_id: str
    name: str
    is_control: bool = False
    ok: bool = True
    quality: float | None = None
    latency_ms: float | None = None
    cost: float | None = None

    def __post_init__(self) -> None:
        for attr in _METRICS:
            value = getattr(self, attr)
            if value is None:
                continue
            if not math.isfinite(value):
                raise ValueError(f"branch {self.name!r}: {attr} must be a finite number")
            if value < 0:
                raise ValueError(f"branch {self.name!r}: {attr} cannot be negative ({value})")


@dataclass(frozen=True)
class Ranking:
    """The outcome of :func:`rank`.

    ``ranks`` 1 = best, every branch; ``scores`` the criterion's value each was ranked on
    (None: none, or errored; ``best_value`` of a free branch with some quality is
    ``math.inf``, which JSON cannot carry: write null or a word); ``pareto`` maps each
    branch to the ids (best rank first) of the branches that dominate it, empty for a
    branch on the front; ``errored`` the ids of branches whose call failed.
    """

    criteria: str
    ranks: dict[str, int]
    winner: str | None
    scores: dict[str, float | None]
    notes: list[str]
    pareto: dict[str, tuple[str, ...]]
    errored: frozenset[str] = field(default_factory=frozenset)

    @property
    def order(self) -> tuple[str, ...]:
        """Branch ids, best rank first."""
        return tuple(sorted(self.ranks, key=self.ranks.__getitem__))

    def pareto_optimal(self, branch_id: str) -> bool:
        """On the front: answered, and no other branch dominates it (JSON ``paretoOptimal``)."""
        return branch_id not in self.errored and not self.pareto[branch_id]


def higher_is_better(criteria: str) -> bool:
    """Whether a larger criterion score is better (for :func:`significance`)."""
    _check_criteria(criteria)
    return _HIGHER_BETTER[criteria]


def _check_criteria(criteria: str) -> None:
    if criteria not in CRITERIA:
        raise ValueError(
            f"unknown winner criteria {criteria!r}: choose one of {', '.join(CRITERIA)}"
        )


def _oriented(branch: BranchScore, metric: str) -> float | None:
    """The metric with higher always better (latency and cost negated), or None."""
    value = getattr(branch, metric)
    if value is None:
        return None
    return value if _METRICS[metric][1] else -value


def dominates(a: BranchScore, b: BranchScore) -> bool:
    """Whether ``a`` dominates ``b`` on quality, latency and cost (see the module notes on
    unknowns). Errored branches are not compared here: the caller decides (see rank)."""
    strict = False
    for metric in _METRICS:
        va, vb = _oriented(a, metric), _oriented(b, metric)
        if va is None and vb is None:
            continue
        if va is None or vb is None or va < vb:
            return False  # an unknown on either side: no claim
        strict = strict or va > vb
    return strict


def _metric_key(branch: BranchScore, metric: str) -> tuple[int, float]:
    value = _oriented(branch, metric)
    return (1, 0.0) if value is None else (0, -value)


def _layers(ok: Sequence[BranchScore]) -> dict[str, int]:
    """Each branch's Pareto layer: 0 for the front, 1 for the front once it is set aside,
    and so on; a branch's dominators are all in lower layers."""
    layers: dict[str, int] = {}
    remaining = list(ok)
    layer = 0
    while remaining:
        front = [b for b in remaining if not any(dominates(a, b) for a in remaining if a is not b)]
        for b in front:
            layers[b.branch_id] = layer
        remaining = [b for b in remaining if b.branch_id not in layers]
        layer += 1
    return layers


def _tie_key(branch: BranchScore, layers: Mapping[str, int]) -> tuple[object, ...]:
    """After the criterion's value: the Pareto layer (a dominated branch after its
    dominators), then control first, then name, id."""
    return (layers.get(branch.branch_id, 0), not branch.is_control, branch.name, branch.branch_id)


def _value(branch: BranchScore) -> float | None:
    """best_value's quality / cost: inf when free with some quality, 0 when free with none."""
    if branch.quality is None or branch.cost is None:
        return None
    if branch.cost == 0:
        return math.inf if branch.quality > 0 else 0.0
    return branch.quality / branch.cost


def _names(branches: Sequence[BranchScore]) -> str:
    """Branch names for a note, alphabetical so the note reads the same whatever the order."""
    return ", ".join(sorted(b.name for b in branches))


def _count(n: int) -> str:
    return f"{n} branch has" if n == 1 else f"{n} branches have"


def _balanced(ok: Sequence[BranchScore], notes: list[str]) -> dict[str, float | None]:
    parts: dict[str, list[float | None]] = {}
    for metric, weight in BALANCED_WEIGHTS.items():
        values = [getattr(b, metric) for b in ok]
        parts[metric] = min_max_normalise(values, invert=not _METRICS[metric][1])
        word = _METRICS[metric][0]
        missing = [b for b, v in zip(ok, values, strict=True) if v is None]
        if missing:
            notes.append(
                f"balanced: {_names(missing)} {'has' if len(missing) == 1 else 'have'} "
                f"{_MISSING[metric]}; that part ({weight:g}) counts 0"
            )
        known = {v for v in values if v is not None}
        if len(ok) > 1 and len(known) == 1 and not missing:
            notes.append(f"balanced: every branch has the same {word}; each gets its {weight:g}")
    if len(ok) == 1:
        notes.append("balanced: one branch, nothing to compare: each metric it has counts fully")
    scores: dict[str, float | None] = {}
    for i, b in enumerate(ok):
        q, s, c = (parts[m][i] for m in BALANCED_WEIGHTS)
        if q is None and s is None and c is None:
            scores[b.branch_id] = None
            continue
        # one expression in one order, so a better branch never scores lower by rounding
        scores[b.branch_id] = (
            BALANCED_WEIGHTS["quality"] * (q or 0.0)
            + BALANCED_WEIGHTS["latency_ms"] * (s or 0.0)
            + BALANCED_WEIGHTS["cost"] * (c or 0.0)
        )
    return scores


def _criterion(
    criteria: str, ok: Sequence[BranchScore], notes: list[str], layers: Mapping[str, int]
) -> tuple[dict[str, float | None], dict[str, tuple[object, ...]]]:
    """Each answered branch's score and sort key (smaller sorts first) for ``criteria``."""
    if criteria in _PRIMARY:
        metric = _PRIMARY[criteria]
        scores = {b.branch_id: getattr(b, metric) for b in ok}
        keys = {b.branch_id: (*_metric_key(b, metric), *_tie_key(b, layers)) for b in ok}
        missing = [b for b in ok if scores[b.branch_id] is None]
        if missing:
            after = "priced" if metric == "cost" else "measured"
            notes.append(
                f"{criteria}: {_count(len(missing))} {_MISSING[metric]} "
                f"({_names(missing)}) and rank after the {after} ones"
            )
        return scores, keys
    if criteria == "best_value":
        scores = {b.branch_id: _value(b) for b in ok}
        keys = {}
        for b in ok:
            v = scores[b.branch_id]
            tier = 2 if v is None else (0 if v == math.inf else 1)
            # free branches by quality among themselves, the others by value
            second = -(b.quality or 0.0) if tier == 0 else (0.0 if v is None else -v)
            keys[b.branch_id] = (tier, second, *_tie_key(b, layers))
        unpriced = [b for b in ok if b.cost is None]
        if unpriced:
            notes.append(
                f"best_value: {_count(len(unpriced))} no price ({_names(unpriced)}) "
                "and rank after the priced ones"
            )
        unscored = [b for b in ok if b.cost is not None and b.quality is None]
        if unscored:
            notes.append(
                f"best_value: {_count(len(unscored))} no quality score ({_names(unscored)}) "
                "and rank after the ones with a value"
            )
        free = [b for b in ok if scores[b.branch_id] == math.inf]
        if free:
            notes.append(
                f"best_value: {_names(free)} cost{'s' if len(free) == 1 else ''} nothing: "
                "the best value, ranked by quality among the free ones"
            )
        return scores, keys
    scores = _balanced(ok, notes)
    keys = {}
    for b in ok:
        score = scores[b.branch_id]
        keys[b.branch_id] = ((1, 0.0) if score is None else (0, -score), *_tie_key(b, layers))
    return scores, keys


def _tie_note(
    criteria: str,
    first: BranchScore,
    second: BranchScore,
    score: float | None,
    dominated: frozenset[str],
) -> str:
    """Why ``first`` ranks above ``second`` when they tie on the criterion's score."""
    shown = "-" if score is None else f"{score:g}"
    if second.branch_id in dominated and first.branch_id not in dominated:
        why = f"{second.name} is dominated"
    elif first.is_control != second.is_control:
        why = "control first"
    else:
        why = "by name"
    return f"{criteria}: {first.name} and {second.name} tie at {shown}; {first.name} ranks first ({why})"


def rank(branches: Sequence[BranchScore], criteria: str = DEFAULT_CRITERIA) -> Ranking:
    """Rank one run's branches on ``criteria`` (one of :data:`CRITERIA`).

    - ``best_quality``: highest quality. ``fastest``: lowest latency. ``cheapest``:
      lowest cost; unpriced branches rank after every priced one.
    - ``best_value``: quality / cost. Free branches (cost 0) come first, ranked by
      quality among themselves (a free branch with quality 0 is worth 0, not infinite);
      branches without a price or a quality score have no value and rank after.
    - ``balanced``: ``0.4 q + 0.3 s + 0.3 c`` with each part min-max normalised over the
      branches that answered (speed and cost inverted). One branch: each metric it has
      counts 1.0. All equal on a metric: each gets that metric's full weight (no one is
      worse), so the metrics that differ decide. A missing metric counts 0 and a note
      names the branch; a branch with none of the three has no score.

    The winner is the branch ranked 1 when it answered and has a score; else there is
    none and a note says why. See the module docstring for ties, errors and the front.
    """
    _check_criteria(criteria)
    ids = [b.branch_id for b in branches]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"rank: branch ids appear twice: {', '.join(dup)}")
    notes: list[str] = []
    ok = [b for b in branches if b.ok]
    failed = sorted(
        (b for b in branches if not b.ok), key=lambda b: (not b.is_control, b.name, b.branch_id)
    )
    layers = _layers(ok)
    dominated = frozenset(i for i, layer in layers.items() if layer > 0)
    scores, keys = _criterion(criteria, ok, notes, layers)
    ordered = sorted(ok, key=lambda b: keys[b.branch_id]) + failed
    ranks = {b.branch_id: i for i, b in enumerate(ordered, start=1)}
    all_scores: dict[str, float | None] = {b.branch_id: scores.get(b.branch_id) for b in ordered}
    if failed:
        noun = "branch" if len(failed) == 1 else "branches"
        notes.append(f"{len(failed)} {noun} errored ({_names(failed)}): ranked last and cannot win")
    winner: str | None = None
    if not branches:
        notes.append("no branches: no winner")
    elif not ok:
        notes.append("every branch errored: no winner")
    elif scores[ordered[0].branch_id] is None:
        notes.append(f"{criteria}: no branch that answered has a score for it: no winner")
    else:
        winner = ordered[0].branch_id
        top = scores[winner]
        if len(ok) > 1 and scores[ordered[1].branch_id] == top:
            notes.append(_tie_note(criteria, ordered[0], ordered[1], top, dominated))
    pareto: dict[str, tuple[str, ...]] = {}
    for b in ordered:
        if b.ok:
            pareto[b.branch_id] = tuple(
                a.branch_id for a in ordered if a.ok and a is not b and dominates(a, b)
            )
        else:
            pareto[b.branch_id] = tuple(a.branch_id for a in ordered if a.ok)
    return Ranking(
        criteria=criteria,
        ranks=ranks,
        winner=winner,
        scores=all_scores,
        notes=notes,
        pareto=pareto,
        errored=frozenset(b.branch_id for b in failed),
    )


@dataclass(frozen=True)
class Significance:
    """Whether the best branch over iterations is more than noise.

    ``winner`` has the best mean score, ``runner_up`` the next; ``intervals`` each scored
    branch's bootstrap interval of its mean; ``samples`` how many iterations gave it a
    score. ``significant`` only when both have at least ``min_samples`` scores and the
    intervals do not overlap. ``reason``: ``"significant"``, ``"overlap"``, ``"too_few"``
    (fewer than ``min_samples`` scores), ``"one_branch"`` (nothing to beat) or
    ``"no_scores"``, for the report to word.
    """

    winner: str | None
    runner_up: str | None
    intervals: dict[str, Interval]
    significant: bool
    samples: dict[str, int] = field(default_factory=dict)
    reason: str = "no_scores"


def significance(
    per_iteration: Sequence[Mapping[str, float | None]],
    criteria_higher_better: bool,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    min_samples: int = MIN_SAMPLES,
    tie_order: Sequence[str] = (),
) -> Significance:
    """Bootstrap each branch's mean criterion score over iterations; call the winner
    significant when its interval does not overlap the runner-up's.

    ``per_iteration`` holds each iteration's :attr:`Ranking.scores`; None (errored, or no
    score) is skipped, so a branch's mean is over the iterations that scored it. Equal
    means are broken by ``tie_order`` (ids, e.g. the ranking order: control first, then
    name), then id. Deterministic for ``seed``.

    Non-overlap of two 95% intervals is stricter than a 5% test for large samples, but
    small samples make the percentile bootstrap too narrow, hence ``min_samples``.
    Measured on two branches with the same normal noise (300 trials each, min_samples
    off): called significant in 5.7% of trials at 5 iterations, 1.7% at 10, 0.3% at 20.
    A true gap of one standard deviation is called in 28%, 42% and 64% of trials: few
    iterations say "no significant winner" often, which is the honest answer.
    """
    values: dict[str, list[float]] = {}
    for scores in per_iteration:
        for branch_id, score in scores.items():
            bucket = values.setdefault(branch_id, [])
            if score is not None:
                bucket.append(score)
    intervals: dict[str, Interval] = {}
    for branch_id, sample in values.items():
        iv = bootstrap_interval(sample, confidence=confidence, resamples=resamples, seed=seed)
        if iv is not None:
            intervals[branch_id] = iv
    samples = {i: len(values[i]) for i in intervals}
    position = {branch_id: i for i, branch_id in enumerate(tie_order)}
    sign = -1.0 if criteria_higher_better else 1.0
    best = sorted(
        intervals,
        key=lambda i: (sign * intervals[i].mean, position.get(i, len(position)), i),
    )
    if not best:
        return Significance(None, None, intervals, False, samples, "no_scores")
    winner = best[0]
    if len(best) == 1:
        return Significance(winner, None, intervals, False, samples, "one_branch")
    runner_up = best[1]
    if min(samples[winner], samples[runner_up]) < min_samples:
        reason, significant = "too_few", False
    elif intervals[winner].overlaps(intervals[runner_up]):
        reason, significant = "overlap", False
    else:
        reason, significant = "significant", True
    return Significance(winner, runner_up, intervals, significant, samples, reason)


def winner_distribution(winners: Sequence[str | None]) -> dict[str, int]:
    """How many iterations each branch won, most wins first (ties in order of first win).

    Iterations without a winner (every branch failed, no scores) are not counted: the
    counts then sum to less than the iterations, and the difference is the no-winner runs.
    """
    return dict(Counter(w for w in winners if w is not None).most_common())
