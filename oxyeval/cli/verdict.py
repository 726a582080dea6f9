"""The end of ``oxy test`` and ``oxy report``: gate a ConsistencyRun, say why on stderr, print it.

Both commands end the same way, so a saved result re-gated with ``oxy report`` gets the
same exit code and the same messages as the run that produced it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from ..report.verdict import Gates, decide, gate_option_error
from .console import json_error, print_error

if TYPE_CHECKING:
    from rich.console import Console

    from ..suites.results import ConsistencyRun, DropResult, ThresholdResult

__all__ = ["Gates", "finish_run", "gate_option_error", "same_terminal"]


def finish_run(
    run: ConsistencyRun,
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
    from ..report.json import to_json, write_json
    from ..report.pretty import render_pretty
    from .console import stdout_console

    if not quiet:
        for warning in run.warnings + run.skipped:
            err.print(warning, style="yellow", markup=False, highlight=False)
    for line in run.history_errors:  # even with --quiet: results are missing from it
        err.print(f"warning: {line}", style="yellow", markup=False, highlight=False)
    verdict = decide(run, gates, error=error)
    threshold, drop, code = verdict.threshold, verdict.drop, verdict.code
    for warning in verdict.warnings:
        err.print(warning, style="yellow")
    if verdict.strict_note is not None:
        err.print(verdict.strict_note, style="red", markup=False)
    if verdict.empty is not None:
        err.print(f"error: {verdict.empty}", style="red", markup=False)
    if error is not None:
        print_error(err, error, debug)
    for line in verdict.unscored:  # every non-zero exit says why on stderr, in any format
        err.print(line, style="red", markup=False)
    if junit is not None:
        from ..report.junit import consistency_junit
        from .artifacts import write_report

        stopped = None if error is None else json_error(error)
        text = consistency_junit(run, verdict, error=stopped, timestamp=started)
        code = write_report("--junit", junit, text, err, code)
    if as_json:
        message = None if error is None else json_error(error)
        write_json(to_json(run, threshold, code=code, error=message, drop=drop), out)
    else:
        # The code the command ends with (a report that could not be written makes it 3).
        shown = verdict if code == verdict.code else replace(verdict, code=code)
        render_pretty(run, shown, stdout_console(), quiet=quiet)
    # Said on stderr for logs and pipes; not again when the pretty report, which already
    # ends with it (✗), is on the same terminal.
    if as_json or not same_terminal():
        if threshold is not None and not threshold.passed:
            err.print(threshold.message, style="red", markup=False)
        if drop is not None and not drop.passed:
            err.print(drop.message, style="red", markup=False)
    return code, threshold, drop


def same_terminal() -> bool:
    """stdout and stderr are one terminal (an interactive shell, not a log or a pipe)."""
    import os
    import sys

    try:
        if not (sys.stdout.isatty() and sys.stderr.isatty()):
            return False
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)
