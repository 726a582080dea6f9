"""``oxy cases ...`` and ``oxy history``: test cases with expected outputs, and their history."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import EXIT_FAILED, EXIT_INFRA, OxyError
from ..project.limits import MAX_CONCURRENCY
from .console import print_error, stderr_console, stdout_console

if TYPE_CHECKING:
    from rich.console import Console

    from ..store import Store
    from ..suites.cases.run import CaseRun

__all__ = ["cases_app", "history_command"]

cases_app = typer.Typer(
    name="cases",
    help="Test cases with expected outputs: run, list, show, accept a new baseline.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="History: an SQLite file or a postgresql://user@host:5432/db URL (default: "
        "$OXY_DB, else history.url in config.yml, else .oxy/oxyeval.db in the project).",
    ),
]
ProjectOption = Annotated[str | None, typer.Option("--project", help="Project folder.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Same as --format json.")]


class Format(str, Enum):
    """The output formats of the read commands; anything else is refused (exit 2)."""

    pretty = "pretty"
    json = "json"


FormatOption = Annotated[
    Format, typer.Option("--format", help="pretty or json (one JSON document on stdout).")
]


def _consoles() -> tuple[Console, Console]:
    return stdout_console(), stderr_console()


def _fail(err: Console, exc: BaseException, as_json: bool) -> typer.Exit:
    from ..report.consistency import write_json

    code = exc.exit_code if isinstance(exc, OxyError) else EXIT_INFRA
    print_error(err, exc)
    if as_json:
        write_json({"error": str(exc), "exit_code": code}, sys.stdout)
    return typer.Exit(code)


def _open(project_dir: str | None, db: str | None, *, write: bool) -> tuple[Any, Store | None]:
    """The project and its history. Read commands open it read-only and never create one:
    no history yet gives ``None``, unless the user named a file that does not exist."""
    from ..project.config import load_project
    from ..store import EmptyHistoryError, LocationError, open_store
    from ..suites.cases.run import history_location

    project = load_project(project_dir=project_dir) if project_dir else load_project()
    location = history_location(project, db)
    if write:
        return project, open_store(location)
    if location.explicit and location.path is not None and not location.path.exists():
        raise LocationError(
            f"history database {location.display} does not exist", path=location.display
        )
    try:
        return project, open_store(location, read_only=True)
    except EmptyHistoryError:
        return project, None


def _read(
    project: str | None,
    db: str | None,
    err: Console,
    as_json: bool,
    read: Any,
    *,
    write: bool = False,
) -> Any:
    """Open the project's history, call ``read(project, store)``, report errors the one way."""
    try:
        proj, store = _open(project, db, write=write)
        if store is None:
            return read(proj, None)
        with store:
            return read(proj, store)
    except OxyError as exc:
        raise _fail(err, exc, as_json) from None


def _table(*columns: str) -> Any:
    from rich.table import Table

    table = Table()
    for column in columns:
        table.add_column(column)
    return table


def _fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}%" if pct else f"{value:.3f}"


def _diff_text(ops: list[dict[str, str]], colour: bool) -> Any:
    """Colours on a terminal; [-removed-]{+added+} markers where colours do not show."""
    from rich.text import Text

    text = Text()
    for op in ops:
        if op["op"] == "equal":
            text.append(op["text"])
        elif op["op"] == "delete":
            text.append(
                op["text"] if colour else f"[-{op['text']}-]", style="red strike" if colour else ""
            )
        else:
            text.append(
                op["text"] if colour else f"{{+{op['text']}+}}",
                style="green underline" if colour else "",
            )
    return text


def _render_run(out: Console, run: CaseRun, quiet: bool) -> None:
    from rich.table import Table

    methods = sorted({r.similarity_method for r in run.results if r.similarity_method})
    caption = "score = 1.0 on exact match, else similarity: " + (", ".join(methods) or "-")
    if any(m == "lexical" for m in methods):
        caption += (
            " (lexical = word overlap, not semantic: a synonym or paraphrase scores low, an"
            " answer that repeats the expected words scores high; a text with over twice the"
            " other's words is scaled down)"
        )
    table = Table(title=None, caption=caption, caption_justify="left")
    for column in ("case", "passed", "score", "exact", "Δlength", "Δtokens", "regression"):
        table.add_column(column, justify="left" if column in ("case", "regression") else "right")
    several = len({r.prompt_id for r in run.results}) > 1
    for r in run.results:
        label = f"{r.prompt_id}::{r.name}" if several else r.name
        if r.error is not None:
            table.add_row(label, "[red]error[/]", "-", "-", "-", "-", "")
            continue
        passed = (
            "[green]yes[/]" if r.passed else ("[yellow]pending[/]" if r.pending else "[red]no[/]")
        )
        tokens = "-" if r.token_diff is None else f"{r.token_diff:+d}"
        if r.token_diff is not None and r.token_method == "estimate":
            tokens = "~" + tokens
        regression = ", ".join(r.regression_types) if r.is_regression else ""
        length = "-" if r.length_diff is None else f"{r.length_diff:+d}"
        table.add_row(
            label,
            passed,
            _fmt(r.score),
            "yes" if r.exact_match else "no",
            length,
            tokens,
            f"[yellow]{regression}[/]" if regression else "",
        )
    out.print(table)
    if not quiet:
        for r in run.results:
            if r.error is not None:
                out.print(f"[red]{r.name}: {r.error}[/]", markup=True)
            elif not r.passed or r.is_regression:
                state = "pending" if r.pending else ("failed" if not r.passed else "regression")
                out.rule(f"{r.name}: {state}", style="dim", align="left")
                if r.expected_output is None:
                    out.print(
                        "no expected output yet; accept one with: oxy cases accept " + repr(r.name)
                    )
                else:
                    if "\n" not in (r.expected_output or "") + (r.actual_output or ""):
                        out.print(f"expected: {r.expected_output}", markup=False)
                        out.print(f"actual:   {r.actual_output}", markup=False)
                    colour = out.is_terminal
                    out.print(_diff_text(r.output_diff, colour))
                    legend = (
                        "red: expected text missing from the output; green: text the output added"
                        if colour
                        else "[-...-]: expected text missing from the output; {+...+}: text the output added"
                    )
                    out.print(f"({legend})", style="dim", markup=False)
                for reason in r.regression_reasons:
                    out.print(f"[yellow]regression: {reason}[/]")
    passed = sum(1 for r in run.results if r.passed and r.error is None)
    versions = ", ".join(f"{p} v{v}" for p, v in run.versions.items())
    out.print(
        f"{len(run.results)} case(s): {passed} passed, {len(run.failed)} failed, "
        f"{len(run.regressions)} regression(s), {len(run.errors)} error(s)"
        + (f", {len(run.pending)} pending (no expected output)" if run.pending else "")
        + f" · {versions} · history in {run.db}"
    )


def _print_reasons(err: Console, run: CaseRun, fail_on_regression: bool) -> None:
    """Why the exit code is not 0, one line per case on stderr, whatever the format."""
    from ..redact import redact

    for r in run.errors:
        err.print(f"error: {r.case_id}: {redact(r.error or '')}", style="red", markup=False)
    for r in run.failed:
        score = "-" if r.score is None else f"{r.score:.3f}"
        err.print(
            f"failed: {r.case_id}: score {score} below its threshold {r.threshold:g}",
            style="red",
            markup=False,
        )
    if fail_on_regression:
        for r in run.regressions:
            why = "; ".join(r.regression_reasons) or ", ".join(r.regression_types)
            err.print(f"regression: {r.case_id}: {redact(why)}", style="red", markup=False)


@cases_app.command("run")
def cases_run(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Prompt/cases files or folders (default: the project)."),
    ] = None,
    case: Annotated[
        list[str] | None, typer.Option("--case", help="Only this case (repeatable).")
    ] = None,
    version: Annotated[
        int | None, typer.Option("--version", help="Run an earlier prompt version.")
    ] = None,
    format: Annotated[str, typer.Option("--format", help="pretty or json.")] = "pretty",
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="Exit 1 on a regression too.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No diff view.")] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=MAX_CONCURRENCY, help="Cases in flight.")
    ] = 8,
    db: DbOption = None,
    project: ProjectOption = None,
) -> None:
    """Run test cases, score them, store every execution and flag regressions.

    Exit codes: 0 all passed; 1 a case failed (or regressed, with --fail-on-regression);
    2 bad input; 3 a provider failure or an interrupted run.
    """
    from ..report.consistency import write_json
    from ..suites.cases.run import CaseRun, run_cases_async
    from .interrupt import interrupt_reason, run_interruptible

    out, err = _consoles()
    as_json = format == "json"
    if format not in ("pretty", "json"):
        raise _fail(err, OxyError(f"--format must be pretty or json, not {format!r}"), False)
    run = CaseRun(db=Path("."))
    try:
        run_interruptible(
            run_cases_async(
                paths or [],
                project_dir=project,
                cases=case,
                version=version,
                db=db,
                concurrency=concurrency,
                into=run,
            )
        )
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM (see oxyeval.cli.interrupt)
        run.interrupted = True
        err.print(
            f"{interrupt_reason(exc)}: {len(run.results)} of {run.planned} case(s) finished "
            f"and are stored in {run.db}; exit {EXIT_INFRA}",
            style="yellow",
            markup=False,
        )
    except OxyError as exc:
        if not run.results:
            raise _fail(err, exc, as_json) from None
        err.print(f"error: {exc}", style="red", markup=False)
        run.interrupted = True
    for warning in run.warnings:
        err.print(f"warning: {warning}", style="yellow", markup=False)
    code = 0
    if run.failed or (fail_on_regression and run.regressions):
        code = EXIT_FAILED
    if run.errors or run.interrupted:
        code = EXIT_INFRA
    _print_reasons(err, run, fail_on_regression)
    if as_json:
        write_json(
            {
                "executions": [r.to_dict() for r in run.results],
                "summary": {
                    "cases": len(run.results),
                    "planned": run.planned,
                    "passed": sum(1 for r in run.results if r.passed and r.error is None),
                    "failed": len(run.failed),
                    "regressions": len(run.regressions),
                    "errors": len(run.errors),
                    "interrupted": run.interrupted,
                    "versions": run.versions,
                    "runs": run.runs,
                    "db": str(run.db),
                    "exit_code": code,
                },
            },
            sys.stdout,
        )
    else:
        _render_run(out, run, quiet)
    raise typer.Exit(code)


@cases_app.command("list")
def cases_list(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Prompt/cases files or folders (default: the project)."),
    ] = None,
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    db: DbOption = None,
    project: ProjectOption = None,
) -> None:
    """Every test case with its aggregates: runs, pass rate, average score, last run."""
    from ..report.consistency import write_json

    out, err = _consoles()
    as_json = as_json or format == "json"

    def read(proj: Any, store: Store | None) -> list[dict[str, Any]]:
        from ..report.cases import case_json
        from ..suites.cases.run import preview_cases

        return [case_json(c) for c in preview_cases(store, proj, paths or [])]

    cases = _read(project, db, err, as_json, read)
    if as_json:
        write_json({"testCases": cases}, sys.stdout)
        raise typer.Exit(0)
    table = _table("case", "prompt", "runs", "pass rate", "avg score", "last run", "last passed")
    for c in cases:
        last = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[c["lastPassed"]]
        table.add_row(
            c["name"],
            c["promptId"],
            str(c["totalRuns"]),
            _fmt(c["passRate"], pct=True),
            _fmt(c["avgScore"]),
            (c["lastRun"] or "-")[:19].replace("T", " "),
            last,
        )
    out.print(table)


_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float | None]) -> str:
    """One character per point, 0..1 mapped to eight heights; gaps as spaces."""
    return "".join(" " if v is None else _BARS[min(7, max(0, int(v * 7.999)))] for v in values)


@cases_app.command("show")
def cases_show(
    name: Annotated[str, typer.Argument(help="Case name, or <prompt>::<case>.")],
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    recent: Annotated[int, typer.Option("--recent", min=1, help="Recent runs to list.")] = 10,
    db: DbOption = None,
    project: ProjectOption = None,
) -> None:
    """Statistics of one case: pass rate, average score, recent runs, regressions, trend."""
    from ..report.consistency import write_json

    out, err = _consoles()
    as_json = as_json or format == "json"

    def read(proj: Any, store: Store | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
        from ..report.cases import case_json, empty_stats, stats_json
        from ..suites.cases.run import find_case, preview_cases

        case = find_case(preview_cases(store, proj, []), name)  # declared, never run: shown too
        stats = None if store is None else store.stats.case_stats(case.id, recent=recent)
        return case_json(case), stats_json(stats or empty_stats(case.id))

    case, stats = _read(project, db, err, as_json, read)
    if as_json:
        write_json({"testCase": case, "stats": stats}, sys.stdout)
        raise typer.Exit(0)
    out.print(f"[bold]{case['id']}[/]  {case.get('description') or ''}")
    out.print(
        f"runs {stats['totalRuns']} · pass rate {_fmt(stats['passRate'], pct=True)} · "
        f"avg score {_fmt(stats['avgScore'])} · regressions {stats.get('regressionCount', len(stats['regressions']))}"
    )
    trend = stats["trendData"]
    if trend:
        line = sparkline([None if t["passRate"] is None else t["passRate"] / 100 for t in trend])
        out.print(f"pass rate by day {trend[0]['date']} .. {trend[-1]['date']}: {line}")
    table = _table("when", "version", "passed", "score")
    table.title = "recent runs"
    for r in stats["recentRuns"]:
        table.add_row(
            r["createdAt"][:19].replace("T", " "),
            str(r["promptVersion"]),
            "[green]yes[/]" if r["passed"] else "[red]no[/]",
            _fmt(r["score"]),
        )
    out.print(table)
    for r in stats["regressions"][:5]:
        out.print(
            f"[yellow]regression {r['regressionType']} at {r['createdAt'][:19]} (v{r['promptVersion']})[/]"
        )


@cases_app.command("accept")
def cases_accept(
    name: Annotated[str, typer.Argument(help="Case name, or <prompt>::<case>.")],
    output: Annotated[
        str | None,
        typer.Option(
            "--output", help="The new expected output (default: the latest actual output)."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Accept an output that stopped at the token limit too."),
    ] = False,
    db: DbOption = None,
    project: ProjectOption = None,
) -> None:
    """Accept a new baseline: set the expected output (rewrites the YAML value in place).

    An output that stopped at the model's token limit is probably cut off: accepting it
    takes --force (exit 2 without).
    """
    from ..suites.cases.run import accept_baseline, check_accept

    _out, err = _consoles()
    # A read-only look first: an accept that cannot succeed changes (or creates) nothing.
    _read(
        project,
        db,
        err,
        False,
        lambda proj, store: check_accept(store, proj, name, output, force=force),
    )
    updated, where = _read(
        project,
        db,
        err,
        False,
        lambda proj, store: accept_baseline(store, proj, name, output, force=force),
        write=True,
    )
    err.print(f"expected output of {updated.id} set in {where}", style="green", markup=False)


def history_command(
    limit: Annotated[int, typer.Option("--limit", min=1, help="Runs to show.")] = 20,
    as_json: JsonOption = False,
    format: FormatOption = Format.pretty,
    db: DbOption = None,
    project: ProjectOption = None,
) -> None:
    """Recent test-case runs, newest first."""
    from ..report.consistency import write_json

    out, err = _consoles()
    as_json = as_json or format == "json"

    def read(_proj: Any, store: Store | None) -> list[dict[str, Any]]:
        from ..report.cases import run_json

        if store is None:
            return []
        stale = set(store.runs.find_stale())  # shown as interrupted; a read writes nothing
        return [
            run_json(r, status="interrupted" if r.id in stale else None)
            for r in store.runs.list(limit, kind="cases")
        ]

    runs = _read(project, db, err, as_json, read)
    if as_json:
        write_json({"runs": runs}, sys.stdout)
        raise typer.Exit(0)
    if not runs:
        out.print("no runs yet")
        raise typer.Exit(0)
    table = _table(
        "started",
        "prompt",
        "version",
        "status",
        "done",
        "passed",
        "failed",
        "regressions",
    )
    for r in runs:
        status = {
            "completed": "[green]completed[/]",
            "interrupted": "[yellow]interrupted[/]",
            "failed": "[red]failed[/]",
        }.get(r["status"], r["status"])
        table.add_row(
            r["startedAt"][:19].replace("T", " "),
            r["promptId"] or "-",
            str(r["promptVersion"] or "-"),
            status,
            f"{r['done']}/{r['total']}",
            str(r["passed"]),
            str(r["failed"]),
            str(r["regressions"]),
        )
    out.print(table)
