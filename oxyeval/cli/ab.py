"""``oxy ab ...``: A/B tests of model configurations (branches) on test cases."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._app import (
    AllowEmptyOption,
    BatchOption,
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
from ._common import (
    CaseOption,
    DbOption,
    FormatOption,
    JsonOption,
    PathsArgument,
    PromptVersionOption,
    batched,
    concurrency_option,
    consoles,
    print_json,
    read_history,
)
from .artifacts import JunitOption
from .helptext import CommandGroup

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["ab_app"]

ab_app = typer.Typer(
    name="ab",
    help="A/B tests: run a test case on several model configurations (branches) and rank them.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    cls=CommandGroup,
)


class Criteria(str, Enum):
    best_quality = "best_quality"
    fastest = "fastest"
    cheapest = "cheapest"
    best_value = "best_value"
    balanced = "balanced"


@ab_app.command("run")
def ab_run(
    paths: PathsArgument = None,
    case: CaseOption = None,
    criteria: Annotated[
        Criteria,
        typer.Option(
            "--criteria",
            metavar="best_quality|fastest|cheapest|best_value|balanced",
            help="How the winner is chosen.",
        ),
    ] = Criteria.best_quality,
    iterations: Annotated[
        int,
        typer.Option(
            "--iterations",
            metavar="N",
            min=1,
            max=1000,
            help="Repeat the comparison N times: winner distribution, 95% intervals, significance.",
        ),
    ] = 1,
    prompt_version: PromptVersionOption = None,
    format: FormatOption = Format.pretty,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    concurrency: Annotated[int, concurrency_option("Calls in flight.")] = 10,
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
    batch: BatchOption = False,
    shard: ShardOption = None,
    run_group: RunGroupOption = None,
    debug: DebugOption = False,
) -> None:
    """Run every branch of each case on the same prompt, measure, rank, store.

    Exit codes: 0 done (a branch under the quality mark is ranked, not failed); 1 a gate
    given failed (--min-accuracy on the quality scores, --min-pass-rate on the quality
    mark, --fail-on-drop against each branch's previous quality); 2 bad input; 3 a
    branch's call failed (the comparison misses data) or the run was interrupted.
    """
    from ..report import reporter
    from ..suites import ABRun, run_ab_tests_async
    from .driver import drive

    out, err = consoles()
    setup_logging(err, debug)
    run = ABRun(criteria=criteria.value, iterations=iterations)
    sharding, problem = shards(shard, run_group, kind="ab")
    held = gates(min_accuracy, threshold_mode, min_pass_rate, strict, fail_on_drop, allow_empty)

    def once(events: Any, final: bool = True) -> Any:
        return run_ab_tests_async(
            paths or [],
            project_dir=project,
            cases=case,
            criteria=criteria.value,
            iterations=iterations,
            prompt_version=prompt_version,
            db=db,
            concurrency=concurrency,
            cache=cache,
            events=events if final else None,
            into=run if final else ABRun(criteria=criteria.value, iterations=iterations),
            sharding=sharding,
            gates=held,  # decided once, under the command's gates (see driver.finish)
        )

    code = drive(
        reporter("ab"),
        run,
        batched(once, err, "ab", paths or [], project, db, False) if batch else once,
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


@ab_app.command("list")
def ab_list(
    paths: PathsArgument = None,
    include_removed: Annotated[
        bool,
        typer.Option(
            "--all", help="Also branches removed from their file (their history is kept)."
        ),
    ] = False,
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Every branch with its aggregates: runs, quality, pass rate, latency, cost."""
    out, err = consoles()
    setup_logging(err, debug)
    as_json = as_json or format == "json"

    def read(proj: Any, store: Store | None) -> list[Any]:
        from ..suites import preview_branches

        return preview_branches(store, proj, paths or [], include_removed=include_removed)

    branches = read_history(project, db, err, as_json, read)
    if as_json:
        from ..report import branch_json, document

        print_json(document("branchList", {"testBranches": [branch_json(b) for b in branches]}))
    else:
        from ..report.ab import render_branches

        render_branches(branches, out)


@ab_app.command("show")
def ab_show(
    branch: Annotated[
        str, typer.Argument(metavar="BRANCH", help="A branch id (<case id>@<name>) or name.")
    ],
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", min=1, max=1000, help="Executions to list.")
    ] = 20,
    offset: Annotated[
        int, typer.Option("--offset", metavar="N", min=0, help="Skip the N newest executions.")
    ] = 0,
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """One branch's settings and its executions, newest first."""
    out, err = consoles()
    setup_logging(err, debug)
    as_json = as_json or format == "json"

    def read(proj: Any, store: Store | None) -> tuple[Any, list[Any]]:
        from ..suites import find_branch

        found = find_branch(store, proj, branch)
        executions = (
            [] if store is None else store.branches.executions(found.id, limit=limit, offset=offset)
        )
        return found, executions

    found, executions = read_history(project, db, err, as_json, read)
    if as_json:
        from ..report import branch_execution_json, branch_json, document

        print_json(
            document(
                "branchDetail",
                {
                    "testBranch": branch_json(found),
                    "testBranchExecutions": [branch_execution_json(e) for e in executions],
                },
            )
        )
    else:
        from ..report.ab import render_branch

        render_branch(found, executions, out)


app.add_typer(ab_app, name="ab")
