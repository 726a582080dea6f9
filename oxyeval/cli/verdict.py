"""The end of ``oxy test`` and ``oxy report``: gate a TestRun, say why on stderr, print it.

Both commands end the same way, so a saved result re-gated with ``oxy report`` gets the
same exit code and the same messages as the run that produced it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from ..errors import EXIT_INFRA, EXIT_OK, OxyError
from .console import json_error, print_error

if TYPE_CHECKING:
    from rich.console import Console

    from ..suites.results import DropResult, TestRun, ThresholdResult

__all__ = ["Gates", "finish_run", "gate_option_error"]


@dataclass(frozen=True)
class Gates:
    """What the run must meet: ``--min-accuracy``/``--threshold-mode``, ``--strict``,
    ``--fail-on-drop`` (points)."""

    min_accuracy: float | None = None
    threshold_mode: str = "average"
    strict: bool = False
    fail_on_drop: float | None = None


def gate_option_error(gates: Gates) -> str | None:
    """Why the gate options are unusable (exit 2), or None."""
    if gates.min_accuracy is not None and not 0.0 <= gates.min_accuracy <= 1.0:
        return (
            "--min-accuracy must be between 0 and 1 (a share, e.g. 0.8 for 80%), "
            f"got {gates.min_accuracy:g}"
        )
    if gates.fail_on_drop is not None and not 0.0 <= gates.fail_on_drop <= 100.0:
        return (
            "--fail-on-drop is in percentage points between 0 and 100 (e.g. 5 fails a test "
            f"that falls from 90% to under 85%), got {gates.fail_on_drop:g}"
        )
    return None


def finish_run(
    run: TestRun,
    gates: Gates,
    *,
    err: Console,
    out: TextIO,
    as_json: bool,
    quiet: bool = False,
    error: BaseException | None = None,
    debug: bool = False,
    junit: str | None = None,
    started: datetime | None = None,
) -> tuple[int, ThresholdResult | None, DropResult | None]:
    """Gate ``run``, print every reason for a non-zero exit on stderr (whatever the
    format), write the JUnit file when asked (``--junit``), then the report on ``out``;
    returns the exit code and the checks made. ``error`` is what stopped the run after
    some tests finished."""
    from ..redact import redact
    from ..report.json import to_json, write_json
    from ..report.pretty import render_pretty
    from ..report.threshold import check_drop, check_threshold, exit_code
    from .console import stdout_console

    if not quiet:
        for warning in run.warnings + run.skipped:
            err.print(warning, style="yellow", markup=False, highlight=False)
    for line in run.history_errors:  # even with --quiet: results are missing from it
        err.print(f"warning: {line}", style="yellow", markup=False, highlight=False)
    threshold = None
    if gates.min_accuracy is not None:
        threshold = check_threshold(run, gates.min_accuracy, gates.threshold_mode)
        if threshold is None:
            err.print(
                "warning: --min-accuracy given but no accuracy metrics were produced; not gating",
                style="yellow",
            )
    drop = None
    if gates.fail_on_drop is not None:
        unread = run.history_unread  # read but not written: earlier results still decide
        drop = check_drop(
            run, gates.fail_on_drop, history_ok=not unread, why="; ".join(unread) or None
        )
    strict = gates.strict
    code = exit_code(run, threshold, strict=strict, drop=drop)
    scored = all(t.ok for t in run.tests) and not run.interrupted
    if strict and code == EXIT_INFRA and scored and (drop is None or drop.checked):
        runs = sum(len(t.run_errors) for t in run.tests)
        judges = sum(len(t.judge_errors) for t in run.tests)
        err.print(
            f"strict: {runs} run error(s) and {judges} judge error(s) -> exit {EXIT_INFRA} "
            "(without --strict they are reported and the scores stand)",
            style="red",
            markup=False,
        )
    if error is not None:
        code = error.exit_code if isinstance(error, OxyError) else EXIT_INFRA
        print_error(err, error, debug)
    if code != EXIT_OK:  # every non-zero exit says why on stderr, in any format, once per test
        for test in run.tests:
            if not test.ok:
                what = "" if test.interrupted else "not scored: "  # its error says interrupted
                reason = redact(test.error or "no accuracy")
                err.print(f"{what}{run.label(test)}: {reason}", style="red", markup=False)
    if junit is not None:
        from ..report.junit import consistency_junit
        from .artifacts import write_report

        failures: dict[str, list[str]] = {}
        for name, accuracy, previous in drop.dropped if drop is not None else []:
            change = (accuracy - previous.accuracy) * 100
            failures.setdefault(name, []).append(
                f"accuracy fell {-change:.1f} points against its previous run "
                f"(--fail-on-drop {gates.fail_on_drop:g})"
            )
        stopped = None if error is None else str(error)
        text = consistency_junit(
            run,
            threshold,
            strict=gates.strict,
            code=code,
            error=stopped,
            failures=failures,
            timestamp=started,
        )
        code = write_report("--junit", junit, text, err, code)
    if as_json:
        message = None if error is None else json_error(error)
        write_json(to_json(run, threshold, code=code, error=message, drop=drop), out)
    else:
        render_pretty(run, threshold, stdout_console(), quiet=quiet, code=code, drop=drop)
    if threshold is not None and not threshold.passed:
        err.print(threshold.message, style="red", markup=False)
    if drop is not None and not drop.passed:
        err.print(drop.message, style="red", markup=False)
    return code, threshold, drop
