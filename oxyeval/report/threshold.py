"""``oxy test``'s verdict for CI: ``--min-accuracy`` and ``--fail-on-drop`` against a
TestRun, and the exit code.

The one place that decides whether a consistency run passes, so a Python caller gating
its own pipeline (or ``oxy report`` re-gating a saved result) gets the same answer as the
CLI. Precedence: 3 when anything could not be scored, the run was interrupted, or a drop
check was asked for but the history could not be read (one that is read but not written
still decides); else 1 when below the threshold or a test dropped; else 0.
"""

from __future__ import annotations

from ..errors import EXIT_FAILED, EXIT_INFRA, EXIT_OK
from ..suites.results import DropResult, Previous, TestRun, ThresholdResult

__all__ = ["check_drop", "check_threshold", "exit_code"]

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


def check_drop(
    run: TestRun, max_drop: float, *, history_ok: bool = True, why: str | None = None
) -> DropResult:
    """Apply ``--fail-on-drop``: fail the tests whose accuracy is more than ``max_drop``
    points (0-100) below their previous run's. A test with no previous scored run, or
    without an accuracy now (reported as not scored anyway), never counts as a drop.
    ``history_ok=False``: the earlier results could not be read (``why``), so drops
    cannot be ruled out. A history read but not written still decides."""
    if not 0.0 <= max_drop <= 100.0:
        raise ValueError(f"a drop is in points between 0 and 100, not {max_drop!r}")
    dropped: list[tuple[str, float, Previous]] = []
    compared = 0
    for t in run.tests:
        if t.accuracy is None or t.previous is None or t.interrupted:
            continue
        compared += 1
        if (t.previous.accuracy - t.accuracy) * 100 > max_drop + _EPS:
            dropped.append((run.label(t), t.accuracy, t.previous))
    if not history_ok:
        message = (
            f"--fail-on-drop {max_drop:g}: cannot compare with the previous runs, the history "
            "could not be read" + (f" ({why})" if why else "")
        )
        return DropResult(max_drop, False, dropped, False, message)
    if dropped:
        shown = ", ".join(
            f"{name}: {prev.accuracy * 100:.1f}% -> {acc * 100:.1f}% "
            f"({(acc - prev.accuracy) * 100:+.1f} pts vs {prev.at[:10]})"
            for name, acc, prev in dropped
        )
        message = f"{len(dropped)} test(s) dropped more than {max_drop:g} pts: {shown}"
    elif compared:
        message = f"No test dropped more than {max_drop:g} pts ({compared} compared)"
    else:
        message = f"--fail-on-drop {max_drop:g}: no earlier run to compare with; nothing dropped"
    return DropResult(max_drop, not dropped, dropped, True, message)


def exit_code(
    run: TestRun,
    threshold: ThresholdResult | None,
    *,
    strict: bool = False,
    drop: DropResult | None = None,
) -> int:
    """3 if anything could not be scored (or was interrupted, or a drop check could not be
    made), else 1 below threshold or on a drop, else 0."""
    if run.interrupted or any(not t.ok for t in run.tests):
        return EXIT_INFRA
    if strict and any(t.run_errors or t.judge_errors for t in run.tests):
        return EXIT_INFRA
    if drop is not None and not drop.checked:
        return EXIT_INFRA
    if threshold is not None and not threshold.passed:
        return EXIT_FAILED
    if drop is not None and not drop.passed:
        return EXIT_FAILED
    return EXIT_OK
