"""``oxy report``: gate a saved ``oxy test --format json`` result again, without a call.

Same gates, exit codes and messages as ``oxy test`` (see :mod:`oxyeval.cli.verdict`):
change ``--min-accuracy`` or ``--threshold-mode`` after the fact, or add ``--strict`` or
``--fail-on-drop`` (against the previous results the document carries).
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import EXIT_INFRA, EXIT_INPUT, OxyError
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
from .console import json_error, print_error, stderr_console, streams

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
    from ..report.json import to_json, write_json
    from ..report.saved import load_saved_run
    from ..suites.results import ConsistencyRun
    from .verdict import Gates, finish_run, gate_option_error

    err = stderr_console()
    out = streams().stdout
    as_json = format is Format.json
    gates = Gates(min_accuracy, threshold_mode.value, strict, fail_on_drop, allow_empty=allow_empty)
    message = gate_option_error(gates)
    if message is not None:
        err.print(f"error: {message}", style="red", markup=False)
        if as_json:
            write_json(to_json(ConsistencyRun(), code=EXIT_INPUT, error=message), out)
        raise typer.Exit(EXIT_INPUT)
    try:
        text = None
        if file == "-":
            import sys

            text = sys.stdin.read()
        saved = load_saved_run("<stdin>" if file == "-" else file, text)
    except OxyError as exc:
        print_error(err, exc, debug)
        if as_json:
            write_json(to_json(ConsistencyRun(), code=exc.exit_code, error=json_error(exc)), out)
        raise typer.Exit(exc.exit_code) from None
    run = saved.run
    if saved.error is not None and not run.tests:  # the saved run itself failed
        code = saved.code if saved.code is not None else EXIT_INFRA
        err.print(
            f"{file}: the saved run ended before any test finished (exit {code}): {saved.error}",
            style="red",
            markup=False,
        )
        if as_json:
            write_json(to_json(run, code=code, error=saved.error), out)
        raise typer.Exit(code)
    code, _threshold, _drop = finish_run(
        run, gates, err=err, out=out, as_json=as_json, quiet=quiet, debug=debug
    )
    raise typer.Exit(code)
