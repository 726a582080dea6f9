"""``oxy cases ...``: test cases with expected outputs, and their history (``oxy history``,
which lists every kind of run, is :mod:`oxyeval.cli.history`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import OxyError
from ._app import (
    AllowEmptyOption,
    BatchOption,
    CacheOption,
    DebugOption,
    FailOnDropOption,
    FailOnRegressionOption,
    Format,
    Inconclusive,
    InconclusiveOption,
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
    fail,
    print_json,
    read_history,
)
from .artifacts import JunitOption
from .helptext import CommandGroup

if TYPE_CHECKING:
    from ..store import Store, TestCase

__all__ = ["cases_app"]

cases_app = typer.Typer(
    name="cases",
    help="Test cases with expected outputs: run, list, show, accept a new baseline.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    cls=CommandGroup,
)


@cases_app.command("run")
def cases_run(
    paths: PathsArgument = None,
    case: CaseOption = None,
    prompt_version: PromptVersionOption = None,
    old_version: Annotated[
        int | None,
        typer.Option("--version", metavar="N", hidden=True, help="Same as --prompt-version."),
    ] = None,
    format: FormatOption = Format.pretty,
    fail_on_regression: FailOnRegressionOption = False,
    inconclusive: InconclusiveOption = Inconclusive.passes,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="Only the summary and the cases that did not pass (no diffs)."
        ),
    ] = False,
    concurrency: Annotated[int, concurrency_option("Cases in flight.")] = 8,
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
    """Run test cases, score them, store every execution and flag regressions.

    Exit codes: 0 all passed; 1 a case failed (under --min-pass-rate: too many did), it
    regressed (with --fail-on-regression), or a gate failed (--min-accuracy on the scores,
    --fail-on-drop against each case's previous score); 2 bad input; 3 a provider failure
    or an interrupted run.
    """
    from ..report import reporter
    from ..suites.cases.run import CaseRun, run_cases_async
    from .driver import drive

    out, err = consoles()
    setup_logging(err, debug)
    as_json = format is Format.json
    if prompt_version is not None and old_version is not None and prompt_version != old_version:
        message = f"--prompt-version {prompt_version} and --version {old_version} disagree"
        raise fail(err, OxyError(message), as_json)
    run = CaseRun(db=Path("."))
    sharding, problem = shards(shard, run_group, kind="cases")
    held = gates(
        min_accuracy,
        threshold_mode,
        min_pass_rate,
        strict,
        fail_on_drop,
        allow_empty,
        fail_on_regression=fail_on_regression,
        inconclusive=inconclusive,
    )

    def once(events: Any, final: bool = True) -> Any:
        return run_cases_async(
            paths or [],
            project_dir=project,
            cases=case,
            version=prompt_version if prompt_version is not None else old_version,
            db=db,
            concurrency=concurrency,
            into=run if final else CaseRun(db=Path(".")),
            cache=cache,
            events=events if final else None,
            sharding=sharding,
            gates=held,  # decided once, under the command's gates (see driver.finish)
        )

    code = drive(
        reporter("cases"),
        run,
        batched(once, err, "cases", paths or [], project, db, False) if batch else once,
        held,
        err=err,
        out=out,
        as_json=as_json,
        quiet=quiet,
        junit=junit,
        debug=debug,
        problem=problem,
        sharding=sharding,
    )
    raise typer.Exit(code)


@cases_app.command("list")
def cases_list(
    paths: PathsArgument = None,
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Every test case with its aggregates: runs, pass rate, average score, last run."""
    out, err = consoles()
    setup_logging(err, debug)
    as_json = as_json or format == "json"

    def read(proj: Any, store: Store | None) -> tuple[list[TestCase], dict[str, Any]]:
        from ..suites.cases.run import preview_cases

        cases = preview_cases(store, proj, paths or [])
        return cases, ({} if store is None or as_json else store.stats.activity())

    cases, activity = read_history(project, db, err, as_json, read)
    if as_json:
        from ..report import case_json, document

        print_json(document("caseList", {"testCases": [case_json(c) for c in cases]}))
    else:
        from ..report.cases_pretty import render_case_list

        render_case_list(cases, out, activity)


@cases_app.command("show")
def cases_show(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Case name, or <prompt>::<case>.")],
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    limit: Annotated[
        int,
        typer.Option("--limit", metavar="N", min=1, max=10_000, help="Recent runs to list."),
    ] = 10,
    recent: Annotated[
        int | None,
        typer.Option("--recent", metavar="N", min=1, max=10_000, hidden=True),
    ] = None,  # an older name of --limit, kept for scripts
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Statistics of one case: pass rate, average score, recent runs, regressions, trend."""
    recent = recent if recent is not None else limit
    out, err = consoles()
    setup_logging(err, debug)
    as_json = as_json or format == "json"

    def read(proj: Any, store: Store | None) -> tuple[TestCase, Any, Any]:
        from ..report.cases import empty_stats
        from ..suites.cases.baseline import find_case
        from ..suites.cases.selection import preview_cases

        case = find_case(preview_cases(store, proj, []), name)  # declared, never run: shown too
        stats = None if store is None else store.stats.case_stats(case.id, recent=recent)
        activity = None if store is None else store.stats.activity([case.id]).get(case.id)
        return case, stats or empty_stats(case.id), activity

    case, stats, activity = read_history(project, db, err, as_json, read)
    if as_json:
        from ..report import case_json, document, stats_json

        print_json(
            document("caseDetail", {"testCase": case_json(case), "stats": stats_json(stats)})
        )
    else:
        from ..report.cases_pretty import render_case_stats

        render_case_stats(case, stats, out, activity)


@cases_app.command("accept")
def cases_accept(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Case name, or <prompt>::<case>.")],
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            metavar="TEXT",
            help="The new expected output (default: the latest actual output).",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Accept an output that stopped at the token limit too."),
    ] = False,
    db: DbOption = None,
    project: ProjectOption = None,
    debug: DebugOption = False,
) -> None:
    """Accept a new baseline: set the expected output (rewrites the YAML value in place).

    An output that stopped at the model's token limit is probably cut off: accepting it
    takes --force (exit 2 without).
    """
    from ..suites.cases.baseline import accept_baseline, check_accept

    _out, err = consoles()
    setup_logging(err, debug)
    # A read-only look first: an accept that cannot succeed changes (or creates) nothing.
    read_history(
        project,
        db,
        err,
        False,
        lambda proj, store: check_accept(store, proj, name, output, force=force),
    )
    updated, where = read_history(
        project,
        db,
        err,
        False,
        lambda proj, store: accept_baseline(store, proj, name, output, force=force),
        write=True,
    )
    err.print(f"expected output of {updated.id} set in {where}", style="green", markup=False)


app.add_typer(cases_app, name="cases")
