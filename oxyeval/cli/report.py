"""``oxy report``: gate a saved ``oxy test --format json`` result again, without a call.

Same gates, exit codes and messages as ``oxy test`` (see :mod:`oxyeval.cli.driver`):
change ``--min-accuracy`` or ``--threshold-mode`` after the fact, or add ``--strict`` or
``--fail-on-drop`` (against the previous results the document carries).
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import ConfigError, OxyError
from ..evaluation import decide
from ._app import (
    AllowEmptyOption,
    DebugOption,
    FailOnDropOption,
    Format,
    MinAccuracyOption,
    StrictOption,
    ThresholdMode,
    ThresholdModeOption,
    app,
)
from ._common import print_json
from .console import json_error, print_error, stderr_console, stdout_console

__all__ = ["report_command"]


@app.command("report")
def report_command(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE", help="A saved `oxy test --format json` document ('-': stdin)."
        ),
    ],
    min_accuracy: MinAccuracyOption = None,
    threshold_mode: ThresholdModeOption = ThresholdMode.average,
    strict: StrictOption = False,
    fail_on_drop: FailOnDropOption = None,
    allow_empty: AllowEmptyOption = False,
    format: Annotated[
        Format, typer.Option("--format", help="pretty, or json: one JSON document on stdout.")
    ] = Format.pretty,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No details.")] = False,
    debug: DebugOption = False,
) -> None:
    """Apply a threshold to a saved `oxy test --format json` result: no model is called.

    Exit codes as `oxy test`: 0 pass; 1 below --min-accuracy, a drop over --fail-on-drop,
    or a gate given with no test in it (--allow-empty: 0); 2 a file that is not such a document, or bad options; 3 a test in it
    could not be scored, or the run it records was interrupted.
    """
    from ..evaluation import Gates, gate_option_error
    from ..report import reporter
    from ..report.saved import load_saved_run
    from ..suites.consistency.results import ConsistencyRun
    from .driver import finish

    err = stderr_console()
    as_json = format is Format.json
    consistency = reporter("consistency")
    gates = Gates(min_accuracy, threshold_mode.value, strict, fail_on_drop, allow_empty=allow_empty)
    message = gate_option_error(gates)
    try:
        if message is not None:
            raise ConfigError(message)
        text = None
        if file == "-":
            import sys

            text = sys.stdin.read()
        saved = load_saved_run("<stdin>" if file == "-" else file, text)
    except OxyError as exc:
        decision = decide([], Gates(), error=exc, kind="consistency")
        print_error(err, exc, debug)
        if as_json:
            print_json(
                consistency.error_document(ConsistencyRun(), decision, error=json_error(exc))
            )
        raise typer.Exit(decision.code) from None
    run = saved.run
    if saved.error is not None and not run.tests:  # the saved run itself failed
        decision = decide([], Gates(), error=saved.failure(), kind="consistency")
        err.print(
            f"{file}: the saved run ended before any test finished (exit {decision.code}): "
            f"{saved.error}",
            style="red",
            markup=False,
        )
        if as_json:
            print_json(consistency.error_document(run, decision, error=saved.error))
        raise typer.Exit(decision.code)
    code = finish(
        consistency, run, gates, err=err, out=stdout_console(), as_json=as_json, quiet=quiet
    )
    raise typer.Exit(code)
