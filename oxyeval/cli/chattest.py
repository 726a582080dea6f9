"""``oxy chattest``: chattest's prompt and model files, judged PASS/FAIL over repeated runs."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated

import typer

from ._app import CacheOption, DebugOption, Format, ProjectOption, app, setup_logging
from ._common import (
    DbOption,
    FormatOption,
    check_junit,
    concurrency_option,
    consoles,
    print_json,
    run_reporting,
)
from .artifacts import JunitOption, write_report

__all__ = ["chattest_command"]


@app.command("chattest")
def chattest_command(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH...",
            help="A folder with prompts/ and models/, or chattest JSON files (default: .).",
        ),
    ] = None,
    format: FormatOption = Format.pretty,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bar and no outputs.")
    ] = False,
    adaptive: Annotated[
        bool,
        typer.Option(
            "--adaptive",
            help="runVolume is a maximum: stop a test once its PASS/FAIL is statistically "
            "settled (anytime-valid, wrong decisions at most 5%).",
        ),
    ] = False,
    concurrency: Annotated[int, concurrency_option("Model calls in flight.")] = 5,
    db: DbOption = None,
    project: ProjectOption = None,
    junit: JunitOption = None,
    cache: CacheOption = None,
    debug: DebugOption = False,
) -> None:
    """Run chattest prompts on their models, judge each output against each test.

    A test passes for a model when its pass rate meets the prompt's successThreshold
    (default 0). Exit codes: 0 every test passed for every model; 1 one failed; 2 bad
    input; 3 a provider failure, a test no run of which could be judged, or an interrupt.
    """
    from ..report.passfail import chattest_json, render_chattest
    from ..suites import PassFailRun, run_chattest_async

    out, err = consoles()
    setup_logging(err, debug)
    as_json = format is Format.json
    check_junit(err, junit, as_json)
    run = PassFailRun()
    started = datetime.now(timezone.utc)
    interrupted, error = run_reporting(
        lambda events: run_chattest_async(
            paths or [],
            project_dir=project,
            db=db,
            cache=cache,
            events=events,
            concurrency=concurrency,
            adaptive=adaptive,
            into=run,
        ),
        quiet=quiet,
        err=err,
        as_json=as_json,
        finished=lambda: len(run.subjects),
        noun="prompt/model pair(s)",
    )
    run.interrupted = run.interrupted or interrupted or error is not None
    code = run.exit_code
    if junit is not None:
        from ..report.junit import passfail_junit

        code = write_report("--junit", junit, passfail_junit(run, timestamp=started), err, code)
    if as_json:
        print_json(chattest_json(run))
    else:
        render_chattest(run, out, quiet=quiet)
    for result in run.results:
        if result.passed is False:
            rate = result.rate.pass_rate or 0.0
            err.print(
                f"failed: {result.label}: {result.criterion.key}: pass rate {rate * 100:.0f}% "
                f"< {result.threshold * 100:.0f}%",
                style="red",
                markup=False,
            )
    raise typer.Exit(code)
