"""``oxy test``'s verdict for CI: ``--min-accuracy`` against a TestRun, and the exit code.

The one place that decides whether a consistency run passes, so a Python caller gating
its own pipeline gets the same answer as the CLI.
"""

from __future__ import annotations

from ..errors import EXIT_FAILED, EXIT_INFRA, EXIT_OK
from ..suites.results import TestRun, ThresholdResult

__all__ = ["check_threshold", "exit_code"]

_EPS = 1e-9


def check_threshold(
    run: TestRun, min_accuracy: float, mode: str = "average"
) -> ThresholdResult | None:
    """Apply ``--min-accuracy``; None when there is no accuracy to compare (a warning, exit 0)."""
    if mode not in ("average", "all"):
        raise ValueError(f"threshold mode must be 'average' or 'all', not {mode!r}")
    if not run.tests:
        return None
    labelled = [(run.label(t), t.accuracy) for t in run.tests]
    unscored = [(name, acc) for name, acc in labelled if acc is None]
    scored = [acc for _name, acc in labelled if acc is not None]

    def fmt(items: list[tuple[str, float | None]]) -> str:
        return ", ".join(f"{n}: {a:.4f}" if a is not None else f"{n}: no score" for n, a in items)

    if mode == "average":
        value = sum(scored) / len(scored) if scored else None
        passed = value is not None and value + _EPS >= min_accuracy and not unscored
        failing = [(n, a) for n, a in labelled if a is None or a + _EPS < min_accuracy]
        if value is None:
            message = (
                f"No test could be scored, threshold {min_accuracy:.4f} not met: {fmt(unscored)}"
            )
        else:
            verb = "meets" if value + _EPS >= min_accuracy else "below"
            message = f"Average accuracy {value:.4f} {verb} threshold {min_accuracy:.4f}"
            if unscored:
                message += f", but {len(unscored)} test(s) could not be scored: {fmt(unscored)}"
        return ThresholdResult(min_accuracy, mode, passed, value, failing, message)

    failing = [(n, a) for n, a in labelled if a is None or a + _EPS < min_accuracy]
    value = min(scored) if scored and not unscored else None
    passed = not failing
    if passed:
        message = f"All {len(labelled)} test(s) meet threshold {min_accuracy:.4f}"
    else:
        message = f"{len(failing)} test(s) below threshold {min_accuracy:.4f}: {fmt(failing)}"
    return ThresholdResult(min_accuracy, mode, passed, value, failing, message)


def exit_code(run: TestRun, threshold: ThresholdResult | None, *, strict: bool = False) -> int:
    """3 if anything could not be scored (or was interrupted), else 1 below threshold, else 0."""
    if run.interrupted or any(not t.ok for t in run.tests):
        return EXIT_INFRA
    if strict and any(t.run_errors or t.judge_errors for t in run.tests):
        return EXIT_INFRA
    if threshold is not None and not threshold.passed:
        return EXIT_FAILED
    return EXIT_OK
