"""``oxy test``: run the consistency tests of agent and workflow files, gate CI on accuracy."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from datetime import datetime, timezone
from typing import Annotated

import typer

from ..errors import EXIT_INFRA, EXIT_INPUT, OxyError
from ._app import (
    AllowEmptyOption,
    CacheOption,
    DbOption,
    DebugOption,
    FailOnDropOption,
    Format,
    MinAccuracyOption,
    ProjectOption,
    RichProgress,
    StrictOption,
    ThresholdMode,
    ThresholdModeOption,
    app,
    no_history_conflict,
    setup_logging,
)
from .artifacts import JunitOption, report_path_problem, write_report
from .console import json_error, print_error, stderr_console, streams

__all__ = ["test_command"]


@app.command("test")
def test_command(
    files: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="FILE...",
            help="Agent or workflow files (or folders) whose tests to run, or *.test.yml "
            "files (default: every *.test.yml of the project).",
        ),
    ] = None,
    format: Annotated[
        Format, typer.Option("--format", help="pretty, or json: one JSON document on stdout.")
    ] = Format.pretty,
    min_accuracy: MinAccuracyOption = None,
    threshold_mode: ThresholdModeOption = ThresholdMode.average,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar and no details.")
    ] = False,
    project: ProjectOption = None,
    strict: StrictOption = False,
    fail_on_drop: FailOnDropOption = None,
    allow_empty: AllowEmptyOption = False,
    no_history: Annotated[
        bool,
        typer.Option(
            "--no-history",
            help="Do not store the results, nor read earlier ones or cached verdicts.",
        ),
    ] = False,
    db: DbOption = None,
    junit: JunitOption = None,
    cache: CacheOption = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", metavar="TAG", help="*.test.yml: only cases with this tag (repeatable)."
        ),
    ] = None,
    case: Annotated[
        list[str] | None,
        typer.Option("--case", metavar="NAME", help="*.test.yml: only this case (repeatable)."),
    ] = None,
    adaptive: Annotated[
        bool,
        typer.Option(
            "--adaptive",
            help="*.test.yml: runs is a maximum; stop a case once its verdict is "
            "statistically settled (anytime-valid, wrong decisions at most 5%).",
        ),
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Run the consistency tests declared in agent and workflow files, or oxy's judged
    pass/fail *.test.yml files; gate CI on accuracy.

    *.test.yml files (given, or all of the project's when no file is given) run each case
    `runs` times and judge each answer against its expected one (PASS, FLKY, FAIL); the
    score is the mean pass rate. Agent and workflow files run their consistency tests.

    Every result is stored in the project's history (--no-history: not), and each test's
    accuracy is shown against its previous run.

    Exit codes: 0 pass; 1 below --min-accuracy, a drop over --fail-on-drop, or a gate
    given with no test found (--allow-empty: 0); 2 bad input or config; 3 provider failure, interrupted run, a test that could not be
    scored, or --fail-on-drop with a history that could not be read (a broken history
    is otherwise a warning and never changes the exit code).
    """
    from ..report.json import to_json, write_json
    from ..suites.consistency import run_tests_async
    from ..suites.results import ConsistencyRun
    from .interrupt import interrupt_reason, run_interruptible
    from .verdict import Gates, finish_run, gate_option_error

    err = stderr_console()
    out = streams().stdout
    setup_logging(err, debug)
    as_json = format is Format.json
    from .testfiles import is_test_file, run_test_files_command

    files = files or []
    pass_fail = [f for f in files if is_test_file(f)]
    if not files or pass_fail:
        message = None
        if len(pass_fail) != len(files):
            message = (
                "oxy test was given *.test.yml files and agent or workflow files together; "
                "they report differently: run them in two calls"
            )
        elif fail_on_drop is not None:
            message = "--fail-on-drop applies to consistency tests, not *.test.yml files"
        if message is not None:
            err.print(f"error: {message}", style="red", markup=False)
            if as_json:
                write_json({"error": message, "exit_code": EXIT_INPUT}, out)
            raise typer.Exit(EXIT_INPUT)
        raise typer.Exit(
            run_test_files_command(
                files,
                as_json=as_json,
                quiet=quiet,
                project=project,
                db=db,
                junit=junit,
                cache=cache,
                no_history=no_history,
                tags=tag or [],
                cases=case or [],
                adaptive=adaptive,
                min_accuracy=min_accuracy,
                threshold_mode=threshold_mode.value,
                strict=strict,
                allow_empty=allow_empty,
            )
        )
    if tag or case or adaptive:
        message = "--tag, --case and --adaptive apply to *.test.yml files"
        err.print(f"error: {message}", style="red", markup=False)
        if as_json:
            write_json({"error": message, "exit_code": EXIT_INPUT}, out)
        raise typer.Exit(EXIT_INPUT)
    show_progress = not quiet and sys.stderr.isatty()
    progress = RichProgress(err) if show_progress else None
    run = ConsistencyRun()
    started = datetime.now(timezone.utc)  # the JUnit suites' timestamp
    error: BaseException | None = None
    gates = Gates(min_accuracy, threshold_mode.value, strict, fail_on_drop, allow_empty=allow_empty)
    message = gate_option_error(gates)
    message = message or no_history_conflict(no_history, cache, fail_on_drop)
    if message is None and junit is not None:
        message = report_path_problem("--junit", junit)
    if message is not None:
        err.print(f"error: {message}", style="red", markup=False)
        if as_json:
            write_json(to_json(run, code=EXIT_INPUT, error=message), out)
        raise typer.Exit(EXIT_INPUT)
    main = run_tests_async(
        files,
        project_dir=project,
        progress=progress,
        into=run,
        cache=cache,
        db=db,
        history=not no_history,
    )
    try:
        with progress.progress if progress is not None else nullcontext():
            run_interruptible(main)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM (see oxyeval.cli.interrupt)
        run.interrupted = True
        cut = sum(1 for t in run.tests if t.interrupted)
        err.print(
            f"{interrupt_reason(exc)}: reporting {len(run.tests) - cut} test(s) that finished "
            f"and {cut} cut short (their finished runs are kept, marked interrupted); "
            f"exit {EXIT_INFRA}",
            style="yellow",
            markup=False,
        )
    except OxyError as exc:
        error = exc
    except Exception as exc:  # a bug: still say it in one paragraph and keep what finished
        error = exc
        if not debug:
            err.print(
                f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
                style="red",
                markup=False,  # brackets in an exception's text are not rich markup
            )

    if error is not None and not run.tests:
        code = error.exit_code if isinstance(error, OxyError) else EXIT_INFRA
        if isinstance(error, OxyError) or debug:
            print_error(err, error, debug)
        if junit is not None:
            from ..report.junit import consistency_junit
            from ..report.verdict import decide

            decision = decide(run, gates, error=error)  # no test: the error's code
            text = consistency_junit(run, decision, error=json_error(error), timestamp=started)
            code = write_report("--junit", junit, text, err, code)
        if as_json:
            write_json(to_json(run, code=code, error=json_error(error)), out)
        raise typer.Exit(code)

    code, _threshold, _drop = finish_run(
        run,
        gates,
        err=err,
        out=out,
        as_json=as_json,
        quiet=quiet,
        error=error,
        debug=debug,
        junit=junit,
        started=started,
    )
    raise typer.Exit(code)
