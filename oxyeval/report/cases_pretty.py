"""``oxy cases`` and ``oxy history`` for people: tables, word diffs and a sparkline.

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

    from ..store import CaseStats, ConsistencyRunSummary, Run, TestCase
    from ..suites.cases.results import CaseRun
    from ..suites.history_queries import TestHistory

__all__ = [
    "diff_text",
    "render_case_list",
    "render_case_run",
    "render_case_stats",
    "render_history",
    "render_test_history",
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


def render_case_run(run: CaseRun, console: Console, *, quiet: bool = False) -> None:
    """``oxy cases run``: one row per case, then (unless ``quiet``) what went wrong with
    each failed, pending or regressed case, and a one-line summary."""
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
    console.print(table)
    if not quiet:
        _render_details(run, console)
    versions = ", ".join(f"{p} v{v}" for p, v in run.versions.items())
    console.print(
        f"{len(run.results)} case(s): {len(run.passed)} passed, {len(run.failed)} failed, "
        f"{len(run.regressions)} regression(s), {len(run.errors)} error(s)"
        + (f", {len(run.pending)} pending (no expected output)" if run.pending else "")
        + (f", {run.cached_calls} answer(s) from the cache" if run.cached_calls else "")
        + f" · {versions} · history in {run.db}"
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


def render_case_list(cases: Sequence[TestCase], console: Console) -> None:
    """``oxy cases list``: every case with its aggregates."""
    table = _table("case", "prompt", "runs", "pass rate", "avg score", "last run", "last passed")
    for c in cases:
        last = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[c.last_passed]
        table.add_row(
            c.name,
            c.prompt_id,
            str(c.total_runs),
            _fmt(c.pass_rate, pct=True),
            _fmt(c.avg_score),
            _when(c.last_run),
            last,
        )
    console.print(table)


def render_case_stats(case: TestCase, stats: CaseStats, console: Console) -> None:
    """``oxy cases show``: the totals, the daily pass-rate sparkline, recent runs and the
    latest regressions of one case."""
    console.print(f"[bold]{case.id}[/]  {case.description or ''}")
    console.print(
        f"runs {stats.total_runs} · pass rate {_fmt(stats.pass_rate, pct=True)} · "
        f"avg score {_fmt(stats.avg_score)} · regressions {stats.regression_count}"
    )
    trend = stats.trend
    if trend:
        line = sparkline([None if t.pass_rate is None else t.pass_rate / 100 for t in trend])
        console.print(f"pass rate by day {trend[0].date} .. {trend[-1].date}: {line}")
    table = _table("when", "version", "passed", "score")
    table.title = "recent runs"
    for r in stats.recent_runs:
        table.add_row(
            _when(r.created_at),
            str(r.prompt_version),
            "[green]yes[/]" if r.passed else "[red]no[/]",
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


def _pct(value: float | None) -> str:
    """A 0..1 accuracy as a percentage, as ``oxy test`` prints it."""
    return "-" if value is None else f"{value * 100:.1f}%"


def _run_what(r: Run) -> str:
    if r.kind == "cases":
        return f"{r.prompt_id or '-'} v{r.prompt_version or '-'}"
    return r.subject or "-"


def _run_result(r: Run, tests: ConsistencyRunSummary | None) -> str:
    if r.kind == "cases":
        text = f"{r.passed} passed, {r.failed} failed"
        if r.regressions:
            text += f", [yellow]{r.regressions} regression(s)[/]"
        if r.errors:
            text += f", [red]{r.errors} error(s)[/]"
        return text
    if r.kind == "consistency":
        if tests is None:
            return "-"
        text = f"accuracy {_pct(tests.average_accuracy)} ({tests.scored} scored"
        if tests.errors:
            text += f", [red]{tests.errors} not scored[/]"
        if tests.interrupted:
            text += f", [yellow]{tests.interrupted} cut short[/]"
        return text + ")"
    return "-"


def render_history(
    runs: Sequence[Run],
    console: Console,
    tests: Mapping[str, ConsistencyRunSummary] | None = None,
) -> None:
    """``oxy history``: recent runs of every kind, newest first (as given); ``tests``
    summarises the consistency runs (average accuracy over their scored tests)."""
    from rich.markup import escape

    if not runs:
        console.print("no runs yet")
        return
    table = _table("started", "kind", "what", "status", "done", "result")
    for r in runs:
        table.add_row(
            _when(r.started_at),
            escape(r.kind),  # the stored name, as --format json and --kind say it
            escape(_run_what(r)),
            _STATUS.get(r.status, escape(r.status)),
            f"{r.done}/{r.total}",
            _run_result(r, (tests or {}).get(r.id)),
        )
    console.print(table)


def render_test_history(history: TestHistory, console: Console) -> None:
    """``oxy history --test NAME``: the accuracy over time as a sparkline (oldest to
    newest, a gap where a run was not scored), then each result, newest first, with its
    change against the scored result before it."""
    from rich.markup import escape

    from .pretty import points

    results = history.results
    console.print(f"[bold]{escape(history.file)} · {escape(history.name)}[/]")
    if not results:
        console.print("no results stored yet")
        return
    oldest_first = list(reversed(results))
    scored = [r.accuracy if r.status == "scored" else None for r in oldest_first]
    line = sparkline(scored)
    known = [a for a in scored if a is not None]
    latest = f"latest {_pct(known[-1])}" if known else "never scored"
    span = f"{_when(oldest_first[0].created_at)[:10]} .. {_when(results[0].created_at)[:10]}"
    console.print(f"accuracy over {len(results)} run(s), {span}: {line}  ({latest})", markup=False)
    table = _table("when", "status", "accuracy", "change", "runs ok", "pairs judged", "model")
    for k, r in enumerate(results):
        before = next((o.accuracy for o in results[k + 1 :] if o.status == "scored"), None)
        change = "-"
        if r.status == "scored" and r.accuracy is not None and before is not None:
            change = points((r.accuracy - before) * 100)
        table.add_row(
            _when(r.created_at),
            _STATUS.get(r.status, escape(r.status)),
            _pct(r.accuracy) + (" (partial)" if r.status == "interrupted" and r.accuracy else ""),
            change,
            f"{r.runs_ok}/{r.n}",
            f"{r.pairs_judged}/{r.pairs_total}",
            escape(r.model or "-"),
        )
    console.print(table)
    for r in results[:5]:
        if r.error:
            console.print(f"{_when(r.created_at)}: {shown(r.error)}", style="red", markup=False)
