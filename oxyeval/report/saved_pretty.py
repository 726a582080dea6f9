"""``oxy report`` for people on a saved run of a kind other than consistency tests (whose
report is ``oxy test``'s): what the decision made of each result, in one table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .text import shown

if TYPE_CHECKING:
    from rich.console import Console

    from ..evaluation import Decision

__all__ = ["render_saved"]

_OUTCOME = {"passed": "green", "failed": "red", "unknown": "yellow", "neutral": "dim"}


def render_saved(run: Any, decision: Decision, console: Console) -> None:
    """The headline (never contradicting the exit code), then one row per result."""
    from rich.table import Table
    from rich.text import Text

    results = run.as_results()
    states = [o.state for o in decision.outcomes]
    word = "passed" if decision.passed else f"failed (exit {decision.code})"
    console.print(
        f"{run.run_kind} run: {len(results)} result(s), {word}: {decision.headline}",
        style="green" if decision.passed else "bold red",
        markup=False,
    )
    if not results:
        return
    table = Table(title_justify="left")
    for name, justify in (
        ("subject", "left"),
        ("status", "left"),
        ("score", "right"),
        ("outcome", "left"),
    ):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for result, state in zip(results, states, strict=False):
        score = "-" if result.score is None else f"{result.score:.3f}"
        table.add_row(
            Text(shown(result.subject)),
            Text(result.status),
            Text(score),
            Text(state, style=_OUTCOME.get(state, "")),
        )
    console.print(table)
