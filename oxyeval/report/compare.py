"""Two runs compared, and a kind's daily rollup, as the API (and ``--format json``) shape
them: camelCase, passRate in percent as the Testing API's trendData has it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .history import run_json

if TYPE_CHECKING:
    from rich.console import Console

    from ..store import DailyTotals
    from ..suites import RunComparison

__all__ = ["comparison_json", "daily_json", "render_comparison"]


def comparison_json(c: RunComparison) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "base": run_json(c.base),
        "head": run_json(c.head),
        "changes": [
            {
                "key": ch.key,
                "subject": ch.subject,
                "change": ch.change,
                "before": None if ch.before is None else ch.before.to_dict(),
                "after": None if ch.after is None else ch.after.to_dict(),
                "scoreDelta": ch.score_delta,
                "outputDiff": ch.output_diff,
            }
            for ch in c.changes
        ],
    }
    for change in ("regressed", "fixed", "improved", "worsened", "unchanged", "added", "removed"):
        doc[change] = c.count(change)
    return doc


def daily_json(rows: Sequence[DailyTotals]) -> list[dict[str, Any]]:
    """One point per day, the subjects of that day summed (a kind's trend, or one subject's)."""
    days: dict[str, list[DailyTotals]] = {}
    for row in rows:
        days.setdefault(row.day, []).append(row)
    out = []
    for day in sorted(days):
        group = days[day]
        passes = sum(r.passes for r in group)
        judged = passes + sum(r.failures for r in group)
        scored = sum(r.scored for r in group)
        latency_n = sum(r.latency_n for r in group)
        out.append(
            {
                "date": day,
                "totalRuns": sum(r.results for r in group),
                "passRate": None if not judged else 100.0 * passes / judged,
                "avgScore": None if not scored else sum(r.score_sum for r in group) / scored,
                "avgLatencyMs": None
                if not latency_n
                else sum(r.latency_sum for r in group) / latency_n,
                "errors": sum(r.errors for r in group),
            }
        )
    return out


_BADGE = {
    "regressed": "[red]regressed[/]",
    "fixed": "[green]fixed[/]",
    "improved": "[green]improved[/]",
    "worsened": "[yellow]worsened[/]",
    "unchanged": "[dim]unchanged[/]",
    "added": "[cyan]added[/]",
    "removed": "[magenta]removed[/]",
}


def render_comparison(c: RunComparison, console: Console, *, all_rows: bool = False) -> None:
    """``oxy history --compare BASE HEAD``: the counts, then each test that changed (every
    test with ``all_rows``), its score before and after."""
    from rich.markup import escape

    from .cases_pretty import _table
    from .text import shown

    counts = " · ".join(
        f"{c.count(k)} {k}"
        for k in ("regressed", "fixed", "improved", "worsened", "unchanged", "added", "removed")
        if c.count(k)
    )
    console.print(
        f"[bold]{escape(c.base.kind)} run {escape(c.base.id[:12])} → {escape(c.head.id[:12])}[/]"
        f" · {counts or 'no results'}"
    )
    rows = [ch for ch in c.changes if all_rows or ch.change != "unchanged"]
    if not rows:
        return
    table = _table("test", "change", "before", "after", "Δ", "after's output")
    for ch in rows:
        before = "-" if ch.before is None or ch.before.score is None else f"{ch.before.score:.3f}"
        after = "-" if ch.after is None or ch.after.score is None else f"{ch.after.score:.3f}"
        delta = "" if ch.score_delta is None else f"{ch.score_delta:+.3f}"
        text = "" if ch.after is None else shown(ch.after.output or ch.after.error or "")
        output = " ".join(text.split())
        output = output if len(output) <= 60 else output[:59] + "…"
        table.add_row(escape(ch.key), _BADGE[ch.change], before, after, delta, escape(output))
    console.print(table)
