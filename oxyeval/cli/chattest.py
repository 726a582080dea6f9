"""``oxy chattest``: chattest's prompt and model files, judged PASS/FAIL over repeated runs."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import (
    AllowEmptyOption,
    CacheOption,
    DebugOption,
    FailOnDropOption,
    Format,
    MinAccuracyOption,
    MinPassRateOption,
    ProjectOption,
    RunGroupOption,
    ShardOption,
    StrictOption,
    ThresholdMode,
    ThresholdModeOption,
    app,
    gates,
    setup_logging,
    shards,
)
from ._common import DbOption, FormatOption, concurrency_option, consoles
from .artifacts import JunitOption

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
    min_accuracy: MinAccuracyOption = None,
    threshold_mode: ThresholdModeOption = ThresholdMode.average,
    min_pass_rate: MinPassRateOption = None,
    strict: StrictOption = False,
    fail_on_drop: FailOnDropOption = None,
    allow_empty: AllowEmptyOption = False,
    junit: JunitOption = None,
    cache: CacheOption = None,
    shard: ShardOption = None,
    run_group: RunGroupOption = None,
    debug: DebugOption = False,
) -> None:
    """Run chattest prompts on their models, judge each output against each test.

    A test passes for a model when its pass rate meets the prompt's successThreshold
    (default 0). Exit codes: 0 every test passed for every model; 1 one failed (under
    --min-pass-rate: too many did) or a gate failed (--min-accuracy on the pass rates,
    --fail-on-drop); 2 bad input; 3 a provider failure, a test no run of which could be
    judged, or an interrupt.
    """
    from ..report import reporter
    from ..suites import PassFailRun, run_chattest_async
    from .driver import drive

    out, err = consoles()
    setup_logging(err, debug)
    run = PassFailRun()
    sharding, problem = shards(shard, run_group, kind="chattest")
    held = gates(min_accuracy, threshold_mode, min_pass_rate, strict, fail_on_drop, allow_empty)
    code = drive(
        reporter("chattest"),
        run,
        lambda events: run_chattest_async(
            paths or [],
            project_dir=project,
            db=db,
            cache=cache,
            events=events,
            concurrency=concurrency,
            adaptive=adaptive,
            into=run,
            sharding=sharding,
            gates=held,  # decided once, under the command's gates (see driver.finish)
        ),
        held,
        err=err,
        out=out,
        as_json=format is Format.json,
        quiet=quiet,
        junit=junit,
        debug=debug,
        problem=problem,
        sharding=sharding,
    )
    raise typer.Exit(code)
