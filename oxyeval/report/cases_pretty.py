"""``oxy cases`` for people: tables, word diffs and a sparkline (``oxy history`` is
:mod:`.history`).

Everything renders onto the console it is given, so a Python caller (a notebook, a
dashboard) prints the same report as the CLI. The JSON side of these commands is
:mod:`oxyeval.report.cases`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .text import shown

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from ..store import CaseActivity, CaseStats, TestCase
    from ..suites.cases.results import CaseResult, CaseRun

__all__ = [
    "diff_text",
    "render_case_list",
    "render_case_run",
    "render_case_stats",
    "sparkline",
]

_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None]) -> str:
    """One character per point, 0..1 mapped to eight heights; gaps as spaces."""
    return "".join(" " if v is None else _BARS[min(7, max(0, int(v * 7.999)))] for v in values)


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


def _when(timestamp: str | None) -> str:
    """An ISO timestamp to the second, as a table shows it."""
    return (timestamp or "-")[:19].replace("T", " ")


def diff_text(ops: Sequence[dict[str, str]], colour: bool) -> Text:
    """A word diff (``output_diff``): colours on a terminal, ``[-removed-]{+added+}``
    markers where colours do not show (a CI log, a file)."""
    from rich.text import Text

    text = Text()
    for op in ops:
        part = shown(op["text"])  # a model's output: no escape sequence reaches the terminal
        if op["op"] == "equal":
            text.append(part)
        elif op["op"] == "delete":
            text.append(part if colour else f"[-{part}-]", style="red strike" if colour else "")
        else:
            text.append(
                part if colour else f"{{+{part}+}}", style="green underline" if colour else ""
            )
    return text


#: Passing cases the table lists before it counts the rest: the failures are what a
#: reader looks for, and 2,000 passing rows would bury them.
SHOWN_PASSING = 20


def render_case_run(run: CaseRun, console: Console, *, quiet: bool = False) -> None:
    """``oxy cases run``: a row per case that failed, erred, regressed or is pending, and
    the first SHOWN_PASSING that passed (then their count); unless ``quiet``, what went
    wrong with each, and a one-line summary that says when the run was interrupted.
    ``quiet``: the summary and the rows of the cases that did not pass, no diffs."""
    from rich.table import Table

    # Pending cases have no method: nothing was compared (they say "pending" in their row).
    methods = sorted(
        {r.similarity_method for r in run.results if r.similarity_method and not r.pending}
    )
    caption = "score = 1.0 on exact match, else similarity: " + (", ".join(methods) or "-")
    lexical_failed = any(
        r.similarity_method == "lexical" and not r.pending and (not r.passed or r.is_regression)
        for r in run.results
    )
    if lexical_failed and not quiet:  # the caveat matters only to read a low score
        caption += (
            " (lexical = word overlap, not semantic: a synonym or paraphrase scores low, an"
            " answer that repeats the expected words scores high; a text with over twice the"
            " other's words is scaled down)"
        )
    table = Table(title=None, caption=caption, caption_justify="left")
    for column in ("case", "passed", "score", "exact", "Δlength", "Δtokens", "regression"):
        table.add_column(column, justify="left" if column in ("case", "regression") else "right")
    several = len({r.prompt_id for r in run.results}) > 1
    passing = [r for r in run.results if _passed_cleanly(r)]
    listed = {id(r) for r in passing[: 0 if quiet else SHOWN_PASSING]}
    for r in run.results:
        if _passed_cleanly(r) and id(r) not in listed:
            continue
        _add_row(table, r, f"{r.prompt_id}::{r.name}" if several else r.name)
    hidden = len(passing) - len(listed)
    if hidden:
        table.add_row(f"[dim]… {hidden} more passed (not listed)[/]", "", "", "", "", "", "")
    if table.row_count > 1 or not hidden:
        console.print(table)
    if not quiet:
        _render_details(run, console)
    versions = ", ".join(f"{p} v{v}" for p, v in run.versions.items())
    counts = (
        f"{len(run.passed)} passed, {len(run.failed)} failed, "
        f"{len(run.regressions)} regression(s), {len(run.errors)} error(s)"
        + (f", {len(run.pending)} pending (no expected output)" if run.pending else "")
        + (f", {run.cached_calls} answer(s) from the cache" if run.cached_calls else "")
        + f" · {versions} · history in {run.db}"
    )
    if run.interrupted:
        left = max(0, run.planned - len(run.results))
        head = (
            f"interrupted: {len(run.results)} of {run.planned} case(s) finished ({left} not run): "
        )
        console.print(head + counts, style="yellow", markup=False)
    else:
        console.print(f"{len(run.results)} case(s): " + counts)


def _passed_cleanly(r: CaseResult) -> bool:
    return r.error is None and r.passed and not r.is_regression and not r.pending


def _add_row(table: Any, r: CaseResult, label: str) -> None:
    if r.error is not None:
        table.add_row(label, "[red]error[/]", "-", "-", "-", "-", "")
        return
    passed = "[green]yes[/]" if r.passed else ("[yellow]pending[/]" if r.pending else "[red]no[/]")
    tokens = "-" if r.token_diff is None else f"{r.token_diff:+d}"
    if r.token_diff is not None and r.token_method == "estimate":
        tokens = "~" + tokens
    regression = ", ".join(r.regression_types) if r.is_regression else ""
    length = "-" if r.length_diff is None else f"{r.length_diff:+d}"
    table.add_row(
        label,
        passed,
        _fmt(r.score),
        "-" if r.pending else ("yes" if r.exact_match else "no"),
        length,
        tokens,
        f"[yellow]{regression}[/]" if regression else "",
    )


def _render_details(run: CaseRun, console: Console) -> None:
    """Each error, and for each failed, pending or regressed case its expected and actual
    output as a word diff."""
    for r in run.results:
        if r.error is not None:
            console.print(f"{r.name}: {shown(r.error)}", style="red", markup=False)
        elif not r.passed or r.is_regression:
            state = "pending" if r.pending else ("failed" if not r.passed else "regression")
            console.rule(f"{r.name}: {state}", style="dim", align="left")
            if r.expected_output is None:
                console.print(
                    "no expected output yet; accept one with: oxy cases accept " + repr(r.name)
                )
            else:
                if "\n" not in (r.expected_output or "") + (r.actual_output or ""):
                    console.print(f"expected: {shown(r.expected_output)}", markup=False)
                    console.print(f"actual:   {shown(r.actual_output)}", markup=False)
                colour = console.is_terminal
                console.print(diff_text(r.output_diff, colour))
                legend = (
                    "red: expected text missing from the output; green: text the output added"
                    if colour
                    else "[-...-]: expected text missing from the output; {+...+}: text the output added"
                )
                console.print(f"({legend})", style="dim", markup=False)
            for reason in r.regression_reasons:
                console.print(f"[yellow]regression: {reason}[/]")


def _runs(judged: int, activity: CaseActivity | None) -> str:
    """Judged runs, and what else ran: "0 (+7 pending)", "5 (+1 error)"."""
    extra = []
    if activity is not None:
        if activity.pending:
            extra.append(f"+{activity.pending} pending")
        if activity.errors:
            extra.append(f"+{activity.errors} error{'s' if activity.errors > 1 else ''}")
    return f"{judged} ({', '.join(extra)})" if extra else str(judged)


def render_case_list(
    cases: Sequence[TestCase],
    console: Console,
    activity: Mapping[str, CaseActivity] | None = None,
) -> None:
    """``oxy cases list``: every case with its aggregates. ``runs`` counts judged runs
    (what the pass rate is over), then the pending and errored ones (``activity``); the
    last run is the latest of any kind."""
    activity = activity or {}
    table = _table("case", "prompt", "runs", "pass rate", "avg score", "last run", "last passed")
    for c in cases:
        last = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[c.last_passed]
        seen = activity.get(c.id)
        when = _when(c.last_run)
        if seen is not None and seen.last_day and (c.last_run or "")[:10] < seen.last_day:
            when = seen.last_day  # a later pending or errored run
        table.add_row(
            c.name,
            c.prompt_id,
            _runs(c.total_runs, seen),
            _fmt(c.pass_rate, pct=True),
            _fmt(c.avg_score),
            when,
            last,
        )
    console.print(table)


#: How a run's outcome reads in a case's recent runs: pending and errors are neither a
#: pass nor a failure.
_OUTCOME = {
    "passed": "[green]passed[/]",
    "failed": "[red]failed[/]",
    "pending": "[dim]pending[/]",
    "error": "[red]error[/]",
}


def render_case_stats(
    case: TestCase,
    stats: CaseStats,
    console: Console,
    activity: CaseActivity | None = None,
) -> None:
    """``oxy cases show``: the totals, the daily pass-rate sparkline, recent runs and the
    latest regressions of one case."""
    from rich.markup import escape

    console.print(f"[bold]{escape(case.id)}[/]  {escape(case.description or '')}")
    console.print(
        f"judged runs {_runs(stats.total_runs, activity)} · pass rate "
        f"{_fmt(stats.pass_rate, pct=True)} · avg score {_fmt(stats.avg_score)} · "
        f"regressions {stats.regression_count}"
    )
    trend = stats.trend
    if trend:
        line = sparkline([None if t.pass_rate is None else t.pass_rate / 100 for t in trend])
        console.print(f"pass rate by day {trend[0].date} .. {trend[-1].date}: {line}")
    table = _table("when (UTC)", "version", "result", "score")
    table.title = "recent runs"
    for r in stats.recent_runs:
        table.add_row(
            _when(r.created_at),
            str(r.prompt_version),
            _OUTCOME.get(r.status, escape(r.status)),
            _fmt(r.score),
        )
    console.print(table)
    for r in stats.regressions[:5]:
        console.print(
            f"[yellow]regression {r.regression_type} at {r.created_at[:19]} (v{r.prompt_version})[/]"
        )


_STATUS = {
    "completed": "[green]completed[/]",
    "scored": "[green]scored[/]",
    "interrupted": "[yellow]interrupted[/]",
    "failed": "[red]failed[/]",
    "error": "[red]error[/]",
}
