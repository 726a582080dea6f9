"""``oxy ab`` for people and for machines: the ranked table of each case's branches, the
branches with their aggregates, one branch's executions, and their JSON.

The JSON is the Testing API's shape (camelCase: ``branchId``, ``qualityScore``,
``estimatedCost``, ``rank``; ``passRate`` in percent like the cases' one), what
``runABTest``, ``testBranches`` and ``testBranchExecutions`` return, so the GraphQL
server serves these dictionaries unchanged. Every key is always present (null when
unknown). Texts are scrubbed of secrets where they entered; printed through
:func:`~oxyeval.report.shown` so no escape sequence of a model reaches a terminal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .text import shown

if TYPE_CHECKING:
    from rich.console import Console

    from ..evaluation import Decision, Interval
    from ..store import BranchExecution, TestBranch
    from ..suites import ABCaseResult, ABRun, BranchSummary

__all__ = [
    "ab_case_json",
    "ab_run_json",
    "branch_execution_json",
    "branch_json",
    "render_ab_run",
    "render_branch",
    "render_branches",
]


def _r(value: float | None, digits: int = 6) -> float | None:
    """Rounded; None for unknown and for infinity (best_value of a free branch), which
    JSON cannot hold."""
    return None if value is None or not math.isfinite(value) else round(value, digits)


def _usd(value: float | None) -> float | None:
    """A cost to 6 significant digits: a fraction of a cent must never round to 0."""
    return None if value is None or not math.isfinite(value) else float(f"{value:.6g}")


def _interval(interval: Interval | None, key: str) -> dict[str, float | None] | None:
    if interval is None:
        return None
    rounded = _usd if key == "estimatedCost" else _r
    return {k: rounded(getattr(interval, k)) for k in ("low", "high", "mean")}


def branch_json(branch: TestBranch) -> dict[str, Any]:
    """The Testing API's TestBranch (``testBranches``)."""
    return {
        "id": branch.id,
        "testCaseId": branch.test_case_id,
        "name": branch.name,
        "description": branch.description,
        "provider": branch.provider,
        "model": branch.model,
        "temperature": branch.temperature,
        "maxTokens": branch.max_tokens,
        "topP": branch.top_p,
        "isControl": branch.is_control,
        "isActive": branch.is_active,
        "otherParams": dict(branch.other_params or {}),
        "totalRuns": branch.total_runs,
        "avgLatency": _r(branch.avg_latency, 3),
        "avgCost": _usd(branch.avg_cost),
        "avgQualityScore": _r(branch.avg_quality_score),
        "avgTokensPerSec": _r(branch.avg_tokens_per_sec, 3),
        "consistencyScore": _r(branch.consistency_score),
        "passRate": _r(branch.pass_rate, 3),
        "sourceFile": branch.source_file,
        "createdAt": branch.created_at,
        "updatedAt": branch.updated_at,
    }


def branch_execution_json(execution: BranchExecution) -> dict[str, Any]:
    """The Testing API's TestBranchExecution (``testBranchExecutions``)."""
    return {
        "id": execution.id,
        "branchId": execution.branch_id,
        "testCaseId": execution.test_case_id,
        "runId": execution.run_id,
        "executionId": execution.execution_id,
        "output": execution.output,
        "error": execution.error,
        "status": execution.status,
        "latencyMs": _r(execution.latency_ms, 3),
        "timeToFirstToken": _r(execution.time_to_first_token, 3),
        "tokensPerSecond": _r(execution.tokens_per_second, 3),
        "inputTokens": execution.input_tokens,
        "outputTokens": execution.output_tokens,
        "totalTokens": execution.total_tokens,
        "estimatedCost": _usd(execution.estimated_cost),
        "qualityScore": _r(execution.quality_score),
        "similarityScore": _r(execution.similarity_score),
        "clarityScore": _r(execution.clarity_score),
        "validJson": execution.valid_json,
        "consistencyHash": execution.consistency_hash,
        "promptVersion": execution.prompt_version,
        "iteration": execution.iteration,
        "createdAt": execution.created_at,
    }


def _branch_result(summary: BranchSummary) -> dict[str, Any]:
    last = summary.last
    return {
        "branchId": summary.branch.id,
        "branchName": summary.branch.name,
        "provider": summary.branch.provider,
        "model": summary.branch.model,
        "isControl": summary.branch.is_control,
        "execution": None
        if last is None
        else {
            "id": last.execution_id,
            "output": last.output,
            "status": last.status,
            "error": last.error,
        },
        "qualityScore": _r(summary.quality_score),
        "latencyMs": _r(summary.latency_ms, 3),
        "timeToFirstToken": _r(summary.time_to_first_token, 3),
        "estimatedCost": _usd(summary.estimated_cost),
        "tokensPerSecond": _r(summary.tokens_per_second, 3),
        "similarityScore": _r(last.similarity_score) if last is not None else None,
        "clarityScore": _r(last.clarity_score) if last is not None else None,
        "validJson": last.valid_json if last is not None else None,
        "consistencyHash": last.consistency_hash if last is not None else None,
        "rank": summary.rank,
        "criterionScore": _r(summary.criterion_score),
        "paretoOptimal": summary.pareto_optimal,
        "dominatedBy": list(summary.dominated_by),
        "runs": len(summary.outcomes),
        "errors": summary.errors,
        "judgeCalls": sum(o.judge_calls for o in summary.outcomes),
        "judgeCostUsd": _judge_cost(summary),
        "intervals": {k: _interval(v, k) for k, v in summary.intervals.items()},
    }


def _judge_cost(summary: BranchSummary) -> float | None:
    costs = [o.judge_cost for o in summary.outcomes if o.judge_calls]
    if not costs or None in costs:
        return None
    return _usd(sum(c for c in costs if c is not None))


def ab_case_json(result: ABCaseResult, *, api: bool = False) -> dict[str, Any]:
    """The Testing API's runABTest result, with the iterations' verdict beside it.

    ``winner`` is a winner beyond the noise (null otherwise; ``leader`` is the branch
    ranked first). For the API (``api``), ``winner`` is its specification's: the branch
    ranked first on the criteria, with ``significant`` and ``notes`` saying whether that
    lead is beyond the noise, since the specification's clients read a winner whenever a
    branch ranked."""
    winner = (result.winner or result.leader) if api else result.winner
    return {
        "testCaseId": result.test_case_id,
        "caseName": result.case_name,
        "promptId": result.prompt_id,
        "promptVersion": result.prompt_version,
        "runId": result.run_id,
        "criteria": result.criteria,
        "winner": None
        if winner is None
        else {
            "branchId": winner.branch.id,
            "branchName": winner.branch.name,
            "model": winner.branch.model,
            "qualityScore": _r(winner.quality_score),
            "latencyMs": _r(winner.latency_ms, 3),
            "estimatedCost": _usd(winner.estimated_cost),
        },
        "leader": None if result.leader is None else result.leader.branch.name,
        "branches": [_branch_result(s) for s in result.branches],
        "iterations": result.iterations,
        "iterationsCompleted": result.iterations_done
        if result.iterations > 1
        else len({o.iteration for s in result.branches for o in s.outcomes}),
        "winnerDistribution": dict(result.winner_distribution),
        "significant": result.significant,
        "notes": list(result.notes),
        "interrupted": result.interrupted,
    }


def ab_run_json(run: ABRun, decision: Decision | None = None) -> dict[str, Any]:
    """``oxy ab run --format json``: the run document (:mod:`.documents`) with each
    case's comparison (``cases``), the criteria, the iterations and the judge's calls;
    ``decision``: the one the run ends with (by default the ungated one)."""
    from ..evaluation import decide_run
    from .documents import run_document
    from .streaming import listed

    if decision is None:
        decision = decide_run(run)
    # A run kept on disk has its results written one at a time as they are made, not
    # built as a list of 100,000 (with their dicts) first.
    results = listed(run.each_result, run.execution_count, stream=run.spilled)
    body = {
        "criteria": run.criteria,
        "iterations": run.iterations,
        "cases": [ab_case_json(r) for r in run.results],
        "judgeCalls": run.judge_calls,
        "judgeCostUsd": _usd(run.judge_cost) if run.judge_calls else None,
    }
    return run_document(
        "ab",
        body,
        results,
        decision,
        interrupted=run.interrupted,
        history=run.history,
        warnings=run.warnings,
        cached_calls=run.cached_calls,
    )


# -- for people ---------------------------------------------------------------------


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{unit}"


def _cost(value: float | None) -> str:
    """USD with three significant digits and no exponent: $0.0123, $0.00000145."""
    if value is None:
        return "no price"
    if value == 0 or not math.isfinite(value):
        return "$0" if value == 0 else "-"
    digits = max(2, 2 - math.floor(math.log10(abs(value))))
    return f"${value:.{digits}f}"


def _row(table: Any, *cells: str) -> None:
    """Cells as plain text: a branch named ``[bold]x`` is shown so, never as markup."""
    from rich.text import Text

    table.add_row(*(Text(cell) for cell in cells))


def _table(title: str | None, *columns: tuple[str, str]) -> Any:
    from rich.markup import escape
    from rich.table import Table

    shown_title = None if title is None else escape(shown(title))
    table = Table(title=shown_title, title_justify="left", title_style="bold")
    for name, justify in columns:
        # Figures never wrap; names and model ids fold rather than end in "…".
        text = justify == "left"
        table.add_column(
            name,
            justify=justify,  # type: ignore[arg-type]
            overflow="fold" if text else "ellipsis",
            no_wrap=not text,
        )
    return table


def render_ab_run(run: ABRun, console: Console) -> None:
    """One ranked table per case, the winner named with its criterion, notes after."""
    for result in run.results:
        _render_case(result, console)
    for warning in run.warnings:
        console.print(f"warning: {warning}", style="yellow", markup=False)
    executions = errors = 0
    for result in run.results:
        for summary in result.branches:
            executions += len(summary.outcomes)
            errors += summary.errors
    line = (
        f"{len(run.results)} case(s), {executions} execution(s), {errors} error(s) · "
        f"criteria: {run.criteria}"
    )
    if run.iterations > 1:
        line += f" · {run.iterations} iterations"
    if run.cached_calls:
        line += f" · {run.cached_calls} from the cache"
    if run.judge_calls:
        line += f" · quality judge: {run.judge_calls} call(s), {_cost(run.judge_cost)} (apart)"
    if run.db is not None:
        line += f" · history in {run.db}"
    console.print(line, style="dim", markup=False)


def _iterations_text(numbers: Sequence[int]) -> str:
    if len(numbers) == 1:
        return f"iteration {numbers[0]}"
    shown_ = ", ".join(map(str, numbers[:5]))
    more = f" and {len(numbers) - 5} more" if len(numbers) > 5 else ""
    return f"iterations {shown_}{more}"


def _render_case(result: ABCaseResult, console: Console) -> None:
    """At 100 columns and more, branch and model side by side and quality with its
    interval; narrower (80 columns), the model under the branch's name and the intervals
    left to the JSON, so no figure is cut."""
    iterations = result.iterations > 1
    wide = console.width >= 100
    columns = [("rank", "right"), ("branch", "left")]
    if wide:
        columns.append(("model", "left"))
    columns += [
        ("quality", "right"),
        ("latency", "right"),
        ("TTFT", "right"),
        ("tok/s", "right"),
        ("cost", "right"),
        ("Pareto", "left"),
    ]
    table = _table(
        f"{result.test_case_id} (prompt v{result.prompt_version}) · {result.criteria}", *columns
    )
    for s in result.branches:
        mark = "★ " if s is result.winner else ""
        control = " (control)" if s.branch.is_control else ""
        model = f"{s.branch.provider}:{s.branch.model}" if s.branch.provider else s.branch.model
        quality = _num(s.quality_score, ".3f")
        if wide and iterations and "qualityScore" in s.intervals:
            iv = s.intervals["qualityScore"]
            quality += f" [{iv.low:.2f}–{iv.high:.2f}]"
        pareto = "yes" if s.pareto_optimal else f"no: {', '.join(s.dominated_by)}"
        if not s.ok:
            pareto = "error"
        name = shown(f"{mark}{s.branch.name}{control}")
        cells = [str(s.rank)]
        cells += [name, shown(model)] if wide else [f"{name}\n{shown(model)}"]
        cells += [
            quality,
            _num(s.latency_ms, ".0f", " ms"),
            _num(s.time_to_first_token, ".0f", " ms"),
            _num(s.tokens_per_second, ".1f"),
            _cost(s.estimated_cost) if s.ok else "-",
            shown(pareto),
        ]
        _row(table, *cells)
    console.print(table)
    for s in result.branches:
        # One line per distinct error of a branch, naming the iterations it hit.
        grouped: dict[str, list[int]] = {}
        for o in s.outcomes:
            if not o.ok:
                grouped.setdefault(o.error or "", []).append(o.iteration + 1)
        for error, hit in grouped.items():
            where = "" if len(s.outcomes) == 1 else f", {_iterations_text(hit)}"
            console.print(
                f"error: {s.branch.name}{where}: {shown(error)}", style="red", markup=False
            )
    leader = next((b for b in result.branches if b.ok), None)
    if result.winner is None and leader is not None:
        # The notes say why: one iteration, or intervals that overlap.
        console.print(
            shown(
                f"No winner ({result.criteria}): {leader.branch.name} ranks first, but not "
                "beyond the noise"
            ),
            style="bold",
            markup=False,
        )
    elif result.winner is None:
        console.print("No winner: no branch produced an answer.", style="bold red", markup=False)
    else:
        verdict = f"Winner ({result.criteria}): {result.winner.branch.name}"
        if iterations:
            spread = ", ".join(f"{k} {v}" for k, v in result.winner_distribution.items())
            verdict += f" · wins per iteration: {spread or 'none'} (of {result.iterations_done})"
            verdict += " · significant" if result.significant else " · no significant winner"
        console.print(shown(verdict), style="bold", markup=False)
    for note in result.notes:
        console.print(f"note: {shown(note)}", style="dim", markup=False)


def render_branches(branches: Sequence[TestBranch], console: Console) -> None:
    """``oxy ab list``: every branch with its aggregates."""
    table = _table(
        None,
        ("case", "left"),
        ("branch", "left"),
        ("model", "left"),
        ("runs", "right"),
        ("errors", "right"),
        ("quality", "right"),
        ("pass", "right"),
        ("latency", "right"),
        ("tok/s", "right"),
        ("cost", "right"),
        ("consistency", "right"),
    )
    for b in branches:
        model = f"{b.provider}:{b.model}" if b.provider else b.model
        name = b.name + (" (control)" if b.is_control else "") + ("" if b.is_active else " (off)")
        if b.deleted_at is not None:
            name += " (removed)"
        _row(
            table,
            shown(b.test_case_id),
            shown(name),
            shown(model),
            str(b.total_runs),
            str(b.errors),
            _num(b.avg_quality_score, ".3f"),
            _num(b.pass_rate, ".1f", "%"),
            _num(b.avg_latency, ".0f", " ms"),
            _num(b.avg_tokens_per_sec, ".1f"),
            _cost(b.avg_cost) if b.total_runs else "-",
            _num(b.consistency_score, ".2f"),
        )
    console.print(table)
    console.print(
        "pass = executions with quality >= 0.7; consistency = share of runs giving the "
        "branch's most common answer (whitespace aside)",
        style="dim",
        markup=False,
    )


def render_branch(
    branch: TestBranch, executions: Sequence[BranchExecution], console: Console
) -> None:
    """``oxy ab show``: a branch's settings, then its executions, newest first."""
    model = f"{branch.provider}:{branch.model}" if branch.provider else branch.model
    console.print(
        shown(
            f"{branch.id} · {model} · temperature {branch.temperature} · max_tokens "
            f"{branch.max_tokens} · top_p {branch.top_p}"
            + (" · control" if branch.is_control else "")
            + (" · removed from its file" if branch.deleted_at is not None else "")
        ),
        style="bold",
        markup=False,
    )
    table = _table(
        None,
        ("when", "left"),
        ("status", "left"),
        ("quality", "right"),
        ("latency", "right"),
        ("TTFT", "right"),
        ("tokens", "right"),
        ("cost", "right"),
        ("output", "left"),
    )
    for e in executions:
        text = e.error if e.status != "success" else e.output
        _row(
            table,
            (e.created_at or "-")[:19].replace("T", " "),
            e.status,
            _num(e.quality_score, ".3f"),
            _num(e.latency_ms, ".0f", " ms"),
            _num(e.time_to_first_token, ".0f", " ms"),
            "-" if e.total_tokens is None else str(e.total_tokens),
            _cost(e.estimated_cost),
            shown((text or "")[:80]),
        )
    console.print(table)
