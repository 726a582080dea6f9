"""``oxy test``'s gates on a ConsistencyRun: the evaluation core's checks, applied to its tests.

The rule itself is :mod:`oxyeval.evaluation.decision`'s, shared by every kind of test;
these wrappers take a ConsistencyRun (a saved report re-gated by ``oxy report``, a Python caller
gating its own pipeline) and name the tests as its reports do.
"""

from __future__ import annotations

from .. import evaluation
from ..evaluation import DropResult, Gates, ThresholdResult
from ..suites.results import ConsistencyRun

__all__ = ["check_drop", "check_threshold", "exit_code"]


def check_threshold(
    run: ConsistencyRun, min_accuracy: float, mode: str = "average"
) -> ThresholdResult | None:
    """Apply ``--min-accuracy``; None when there is no accuracy to compare (a warning, exit 0)."""
    return evaluation.check_threshold(run.as_results(), min_accuracy, mode, kind="consistency")


def check_drop(
    run: ConsistencyRun, max_drop: float, *, history_ok: bool = True, why: str | None = None
) -> DropResult:
    """Apply ``--fail-on-drop`` (points, 0-100) against each test's previous run."""
    return evaluation.check_drop(
        run.as_results(), max_drop, history_ok=history_ok, why=why, kind="consistency"
    )


def exit_code(
    run: ConsistencyRun,
    threshold: ThresholdResult | None,
    *,
    strict: bool = False,
    drop: DropResult | None = None,
) -> int:
    """The exit code of ``run`` with gates already checked: the one decision's, given the
    checks instead of the options (3 unknown outcome, else 1 a gate failed, else 0)."""
    decision = evaluation.decide(
        run.as_results(), Gates(strict=strict), interrupted=run.interrupted
    )
    return evaluation.gated_code(decision.code, threshold, drop)
