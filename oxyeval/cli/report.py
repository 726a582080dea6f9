"""``oxy report``: decide again on a saved run document of any kind, without a call.

Same gates, exit codes and messages as the run's own command (see
:mod:`oxyeval.cli.driver`): with no gate options the run's own gates (its document's
``decision.gates``) give the run's exit code again; change ``--min-accuracy`` or
``--threshold-mode`` after the fact, or add ``--strict``, ``--fail-on-drop`` (against the
previous results the document carries) or ``--fail-on-regression``.
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
    MinPassRateOption,
    StrictOption,
    ThresholdMode,
    ThresholdModeOption,
    app,
    gates,
)
from ._common import print_json
from .console import json_error, print_error, stderr_console, stdout_console

__all__ = ["report_command"]


@app.command("report")
def report_command(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE", help="A saved run document (any --format json run; '-': stdin)."
        ),
    ],
    min_accuracy: MinAccuracyOption = None,
    threshold_mode: ThresholdModeOption = ThresholdMode.average,
    min_pass_rate: MinPassRateOption = None,
    strict: StrictOption = False,
    fail_on_drop: FailOnDropOption = None,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="Exit 1 on a regression too.")
    ] = False,
    allow_empty: AllowEmptyOption = False,
    format: Annotated[
        Format, typer.Option("--format", help="pretty, or json: one JSON document on stdout.")
    ] = Format.pretty,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No details.")] = False,
    debug: DebugOption = False,
) -> None:
    """Decide again on a saved run (`oxy test`, `oxy cases run`, `oxy ab run`, `oxy
    chattest`, `oxy run` with --format json): no model is called.

    Without gate options, the gates the run ran under apply, so the exit code is the
    run's; gate options given replace them. Exit codes as the run's: 0 pass; 1 a gate
    failed (below --min-accuracy, a drop over --fail-on-drop, a result that failed its
    check, a gate given with nothing in it: --allow-empty gives 0); 2 a file that is not
    such a document, or bad options; 3 a result in it could not be scored, or the run
    was interrupted.
    """
    from ..evaluation import Gates, gate_option_error
    from ..report import error_document, load_saved_run, saved_reporter
    from .driver import finish

    err = stderr_console()
    as_json = format is Format.json
    given = gates(
        min_accuracy,
        threshold_mode,
        min_pass_rate,
        strict,
        fail_on_drop,
        allow_empty,
        fail_on_regression=fail_on_regression,
    )
    message = gate_option_error(given)
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
            print_json(error_document(json_error(exc), decision.code))
        raise typer.Exit(decision.code) from None
    if saved.error is not None and not saved.results:  # the saved run itself failed
        decision = decide([], Gates(), error=saved.failure(), kind=saved.kind)
        err.print(
            f"{file}: the saved run ended before any result finished (exit {decision.code}): "
            f"{saved.error}",
            style="red",
            markup=False,
        )
        if as_json:
            print_json(error_document(saved.error, decision.code))
        raise typer.Exit(decision.code)
    held = given if given != Gates() else (saved.gates or Gates())
    code = finish(
        saved_reporter(saved),
        saved,
        held,
        err=err,
        out=stdout_console(),
        as_json=as_json,
        quiet=quiet,
        # What stopped the run after some results finished decides its code, as it did.
        error=None if saved.error is None else saved.failure(),
    )
    raise typer.Exit(code)
