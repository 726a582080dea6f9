"""Two runs compared, and a kind's daily rollup, as the API (and ``--format json``) shape
them: camelCase, passRate in percent as the seed's trendData has it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .history import run_json

if TYPE_CHECKING:
    from ..store import DailyTotals
    from ..suites import RunComparison

__all__ = ["comparison_json", "daily_json"]


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
