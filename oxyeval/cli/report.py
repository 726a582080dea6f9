"""``oxy report``: decide again on a saved run document of any kind, without a call; or,
``--run-group ID``, decide once on every shard of a sharded run, as kept in the history.

Same gates, exit codes and messages as the run's own command (see
:mod:`oxyeval.cli.driver`): with no gate options the run's own gates (its document's
``decision.gates``) give the run's exit code again; change ``--min-accuracy`` or
``--threshold-mode`` after the fact, or add ``--strict``, ``--fail-on-drop`` (against the
previous results the document carries) or ``--fail-on-regression``. A run group with a
shard missing is exit 3 (its outcome is unknown), never a pass.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import ConfigError, OxyError
from ..evaluation import Gates, decide
from ._app import (
    AllowEmptyOption,
    DebugOption,
    FailOnDropOption,
    FailOnRegressionOption,
    Format,
    Inconclusive,
    InconclusiveOption,
    MinAccuracyOption,
    MinPassRateOption,
    ProjectOption,
    StrictOption,
    ThresholdMode,
    ThresholdModeOption,
    app,
    gates,
)
from ._common import DbOption, print_json
from .artifacts import JunitOption
from .console import json_error, print_error, stderr_console, stdout_console

__all__ = ["report_command"]


@app.command("report")
def report_command(
    file: Annotated[
        str | None,
        typer.Argument(
            metavar="[FILE]",
            help="A saved run document (any --format json run; '-': stdin); or --run-group.",
        ),
    ] = None,
    min_accuracy: MinAccuracyOption = None,
    threshold_mode: ThresholdModeOption = ThresholdMode.average,
    min_pass_rate: MinPassRateOption = None,
    strict: StrictOption = False,
    fail_on_drop: FailOnDropOption = None,
    fail_on_regression: FailOnRegressionOption = False,
    inconclusive: InconclusiveOption = Inconclusive.passes,
    allow_empty: AllowEmptyOption = False,
    format: Annotated[
        Format, typer.Option("--format", help="pretty, or json: one JSON document on stdout.")
    ] = Format.pretty,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No details.")] = False,
    run_group: Annotated[
        str | None,
        typer.Option(
            "--run-group",
            metavar="ID",
            help="Decide on every shard kept under run group ID in the history (the "
            "shards' --run-group), merged; a missing shard is exit 3.",
        ),
    ] = None,
    db: DbOption = None,
    project: ProjectOption = None,
    junit: JunitOption = None,
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

    With --run-group ID (instead of FILE), every shard of a sharded run (`--shard I/N
    --run-group ID`) is read from the history (--db, OXY_DB or config.yml's history:)
    and decided on as one run; a shard that has not kept its outcome is exit 3, and so
    is one that stopped on a provider failure (2 if it stopped on bad input).
    """
    from ..evaluation import gate_option_error
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
        inconclusive=inconclusive,
    )
    message = gate_option_error(given)
    if message is None and (file is None) == (run_group is None):
        message = (
            "oxy report takes a saved run document (FILE, or '-' for stdin) or --run-group "
            "ID, not both"
            if file is not None
            else "oxy report needs a saved run document (FILE, or '-' for stdin) or "
            "--run-group ID (the shards' run group)"
        )
    if message is None and junit is not None:
        from .artifacts import report_path_problem

        message = report_path_problem("--junit", junit)
    if run_group is not None and message is None:
        from ..suites import sharding_problem

        message = sharding_problem(None, run_group)  # an id no shard could have kept
    if run_group is not None and message is None:
        raise typer.Exit(
            _report_group(
                run_group, given, project, db, junit, as_json=as_json, quiet=quiet, debug=debug
            )
        )
    try:
        if message is not None:
            raise ConfigError(message)
        assert file is not None
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
        junit=junit,
        debug=debug,
        # What stopped the run after some results finished decides its code, as it did.
        error=None if saved.error is None else saved.failure(),
    )
    raise typer.Exit(code)


def _report_group(
    group: str,
    given: Gates,
    project: str | None,
    db: str | None,
    junit: str | None,
    *,
    as_json: bool,
    quiet: bool,
    debug: bool,
) -> int:
    """Merge the shards kept under ``group`` and decide on them; the exit code."""
    from ..evaluation import Gates
    from ..report import error_document, merge_shards, saved_reporter
    from ..suites import open_named_history
    from .driver import finish

    err = stderr_console()
    try:
        location, store = open_named_history(project, db)
        rows = []
        if store is not None:
            with store:
                rows = store.run_groups.shards(group)
        merged = merge_shards(rows, group, location.display, gates_given=given != Gates())
        failure = merged.error if merged.run is None else None  # no shard kept anything
    except OxyError as exc:
        failure = exc
    if failure is not None:
        code = decide([], Gates(), error=failure, kind="consistency").code
        print_error(err, failure, debug)
        if junit is not None:  # a CI system that reads the report finds the error there
            from ..report import error_junit
            from .artifacts import write_report

            text = error_junit(f"oxy report --run-group {group}", str(failure))
            code = write_report("--junit", junit, text, err, code)
        if as_json:
            print_json(error_document(json_error(failure), code))
        return code
    assert merged.run is not None
    run = merged.run
    err.print(
        f"run group {group}: shard(s) {', '.join(map(str, merged.found))} of "
        f"{merged.shards} kept in {location.display}, {len(run.results)} result(s)",
        style="dim",
        markup=False,
        highlight=False,
    )
    held = given if given != Gates() else (run.gates or Gates())
    return finish(
        saved_reporter(run),
        run,
        held,
        err=err,
        out=stdout_console(),
        as_json=as_json,
        quiet=quiet,
        junit=junit,
        debug=debug,
        error=merged.error,
    )
