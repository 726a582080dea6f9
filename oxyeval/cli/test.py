"""``oxy test``: run the consistency tests of agent and workflow files, gate CI on accuracy."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from typing import Annotated

import typer

from ..errors import EXIT_INFRA, EXIT_INPUT, EXIT_OK, OxyError
from ._app import CacheOption, DebugOption, Format, RichProgress, ThresholdMode, app, setup_logging
from .artifacts import JunitOption, report_path_problem, write_report
from .console import print_error, stderr_console, stdout_console, streams

__all__ = ["test_command"]


@app.command("test")
def test_command(
    files: Annotated[
        list[str], typer.Argument(help="Agent or workflow files (or folders) whose tests to run.")
    ],
    format: Annotated[
        Format, typer.Option("--format", help="pretty, or json: one JSON document on stdout.")
    ] = Format.pretty,
    min_accuracy: Annotated[
        float | None,
        typer.Option("--min-accuracy", help="Exit 1 if accuracy is below this (0..1)."),
    ] = None,
    threshold_mode: Annotated[
        ThresholdMode,
        typer.Option("--threshold-mode", help="average: mean of the tests; all: every test."),
    ] = ThresholdMode.average,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar and no details.")
    ] = False,
    project: Annotated[
        str | None,
        typer.Option(
            "--project", help="Project folder (default: nearest config.yml above the file)."
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Exit 3 if any run or judge call failed, even when scored."),
    ] = False,
    junit: JunitOption = None,
    debug: DebugOption = False,
    cache: CacheOption = None,
) -> None:
    """Run the consistency tests declared in agent files and gate CI on their accuracy.

    Exit codes: 0 pass; 1 below --min-accuracy; 2 bad input or config;
    3 provider failure, interrupted run, or a test that could not be scored.
    """
    from ..redact import redact
    from ..report.json import to_json, write_json
    from ..report.pretty import render_pretty
    from ..report.threshold import check_threshold, exit_code
    from ..suites.consistency import run_tests_async
    from ..suites.results import TestRun
    from .interrupt import interrupt_reason, run_interruptible

    err = stderr_console()
    out = streams().stdout
    setup_logging(err, debug)
    as_json = format is Format.json
    show_progress = not quiet and sys.stderr.isatty()
    progress = RichProgress(err) if show_progress else None
    run = TestRun()
    started = datetime.now(timezone.utc)  # the JUnit suites' timestamp
    error: BaseException | None = None
    if min_accuracy is not None and not 0.0 <= min_accuracy <= 1.0:
        message = f"--min-accuracy must be between 0 and 1 (a share, e.g. 0.8 for 80%), got {min_accuracy:g}"
        err.print(f"error: {message}", style="red", markup=False)
        if as_json:
            write_json(to_json(run, code=EXIT_INPUT, error=message), out)
        raise typer.Exit(EXIT_INPUT)
    junit_problem = None if junit is None else report_path_problem("--junit", junit)
    if junit_problem is not None:
        err.print(f"error: {junit_problem}", style="red", markup=False)
        if as_json:
            write_json(to_json(run, code=EXIT_INPUT, error=junit_problem), out)
        raise typer.Exit(EXIT_INPUT)
    try:
        if progress is not None:
            with progress.progress:
                run_interruptible(
                    run_tests_async(
                        files, project_dir=project, progress=progress, into=run, cache=cache
                    )
                )
        else:
            run_interruptible(run_tests_async(files, project_dir=project, into=run, cache=cache))
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

            text = consistency_junit(run, code=code, error=str(error), timestamp=started)
            code = write_report("--junit", junit, text, err, code)
        if as_json:
            write_json(to_json(run, code=code, error=str(error)), out)
        raise typer.Exit(code)

    if not quiet:
        for warning in run.warnings + run.skipped:
            err.print(warning, style="yellow", markup=False, highlight=False)
    threshold = None
    if min_accuracy is not None:
        threshold = check_threshold(run, min_accuracy, threshold_mode.value)
        if threshold is None:
            err.print(
                "warning: --min-accuracy given but no accuracy metrics were produced; not gating",
                style="yellow",
            )
    code = exit_code(run, threshold, strict=strict)
    if strict and code == EXIT_INFRA and all(t.ok for t in run.tests) and not run.interrupted:
        runs = sum(len(t.run_errors) for t in run.tests)
        judges = sum(len(t.judge_errors) for t in run.tests)
        err.print(
            f"strict: {runs} run error(s) and {judges} judge error(s) -> exit {EXIT_INFRA} "
            "(without --strict they are reported and the scores stand)",
            style="red",
            markup=False,
        )
    for test in run.tests:
        if not test.ok and test.error:  # every non-zero exit says why on stderr, in any format
            err.print(
                f"not scored: {run.label(test)}: {redact(test.error)}", style="red", markup=False
            )
    if error is not None:
        code = error.exit_code if isinstance(error, OxyError) else EXIT_INFRA
        print_error(err, error, debug)
    if code != EXIT_OK:  # the reason is on stderr whatever the format (stdout may go to a file)
        for test in run.tests:
            if not test.ok:
                what = "" if test.interrupted else "not scored: "  # its error says interrupted
                reason = redact(test.error or "no accuracy")
                err.print(f"{what}{run.label(test)}: {reason}", style="red", markup=False)
    if junit is not None:
        from ..report.junit import consistency_junit

        stopped = None if error is None else str(error)
        text = consistency_junit(
            run, threshold, strict=strict, code=code, error=stopped, timestamp=started
        )
        code = write_report("--junit", junit, text, err, code)
    if as_json:
        write_json(
            to_json(run, threshold, code=code, error=None if error is None else str(error)), out
        )
    else:
        render_pretty(run, threshold, stdout_console(), quiet=quiet, code=code)
    if threshold is not None and not threshold.passed:
        err.print(threshold.message, style="red", markup=False)
    raise typer.Exit(code)
