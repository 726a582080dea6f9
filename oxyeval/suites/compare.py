"""Two runs side by side: per subject, what the score was and is, and what changed.

The question after a prompt change is rarely "what is the pass rate" but "which tests
did this break, which did it fix, and how do the answers differ". Results of the two runs
are paired by what they tested (subject, and the repeat when a run has several per
subject), so it works for every kind in the history's results table: test cases, consistency
tests, A/B branches, judged pass/fail tests and SDK suites.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..store import NotFoundError
from .cases.scoring import output_diff

if TYPE_CHECKING:
    from ..store import Run, Store, StoredResult

__all__ = ["CHANGES", "ResultChange", "RunComparison", "compare_runs", "result_key"]

#: A score move smaller than this is noise, not a change (scores are 0..1).
SCORE_EPSILON = 0.01
CHANGES = ("regressed", "fixed", "improved", "worsened", "unchanged", "added", "removed")
#: Outputs longer than this are not diffed (the diff is quadratic at worst).
_MAX_DIFFED = 20_000


@dataclass(frozen=True)
class ResultChange:
    key: str
    subject: str
    change: str
    before: StoredResult | None
    after: StoredResult | None
    score_delta: float | None
    output_diff: list[dict[str, str]] | None


@dataclass
class RunComparison:
    base: Run
    head: Run
    changes: list[ResultChange] = field(default_factory=list)

    def count(self, change: str) -> int:
        return sum(1 for c in self.changes if c.change == change)


def result_key(result: StoredResult) -> str:
    """What a result is paired by: its subject, and its repeat when there are several."""
    return result.subject if not result.repeat else f"{result.subject}#{result.repeat}"


def _failed(r: StoredResult) -> bool:
    """Failed its own check, or its outcome is unknown (an error, by its kind's statuses,
    as stored with it: the same rule the run's counts use)."""
    return r.outcome in ("failed", "unknown")


def _errored(r: StoredResult) -> bool:
    return r.outcome == "unknown"


def _classify(before: StoredResult | None, after: StoredResult | None) -> tuple[str, float | None]:
    if before is None:
        return "added", None
    if after is None:
        return "removed", None
    delta = None
    if before.score is not None and after.score is not None:
        delta = round(after.score - before.score, 6)
    if _failed(after) and not _failed(before) and before.passed is not None:
        return "regressed", delta
    if _failed(before) and not _failed(after) and after.passed is not None:
        return "fixed", delta
    if _errored(after) and not _errored(before):
        return "regressed", delta
    if _errored(before) and not _errored(after):
        return "fixed", delta
    if delta is not None and delta > SCORE_EPSILON:
        return "improved", delta
    if delta is not None and delta < -SCORE_EPSILON:
        return "worsened", delta
    return "unchanged", delta


def _diff(before: StoredResult | None, after: StoredResult | None) -> list[dict[str, str]] | None:
    """The outputs diffed, when both exist and differ (and are not too long to diff)."""
    old = None if before is None else before.output
    new = None if after is None else after.output
    if old is None or new is None or old == new or len(old) + len(new) > _MAX_DIFFED:
        return None
    return output_diff(old, new)


def compare_runs(store: Store, base_run_id: str, head_run_id: str) -> RunComparison:
    """Pair the results of two stored runs; NotFoundError names a run that is not there."""
    runs: list[Any] = []
    for run_id in (base_run_id, head_run_id):
        run = store.runs.get(run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id!r} in {store.path}", path=store.path)
        runs.append(run)
    if runs[0].kind != runs[1].kind:
        raise ConfigError(
            f"run {base_run_id!r} is a {runs[0].kind} run and {head_run_id!r} a "
            f"{runs[1].kind} run: compare two runs of one kind"
        )
    before = {result_key(r): r for r in store.results.for_run(base_run_id)}
    after = {result_key(r): r for r in store.results.for_run(head_run_id)}
    comparison = RunComparison(base=runs[0], head=runs[1])
    for key in [*before, *(k for k in after if k not in before)]:
        b, a = before.get(key), after.get(key)
        change, delta = _classify(b, a)
        comparison.changes.append(
            ResultChange(
                key=key,
                subject=(a or b).subject,  # type: ignore[union-attr]
                change=change,
                before=b,
                after=a,
                score_delta=delta,
                output_diff=_diff(b, a),
            )
        )
    order = {c: i for i, c in enumerate(CHANGES)}
    comparison.changes.sort(key=lambda c: order[c.change])
    return comparison
