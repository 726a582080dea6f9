"""``oxy history`` in both forms: the runs of every kind (a table, or the Testing API's run
JSON with this tool's extras) and one consistency test's results over time.

Apart from the test cases' reports (:mod:`.cases`, :mod:`.cases_pretty`), whose table
helpers it borrows, because the history lists every kind of run, not only cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .cases_pretty import _STATUS, _table, _when, sparkline
from .text import shown

if TYPE_CHECKING:
    from rich.console import Console

    from ..store import ConsistencyResult, Run
    from ..suites import StoredRunView
    from ..suites.history_queries import TestHistory

__all__ = [
    "consistency_result_json",
    "history_of_test_json",
    "render_history",
    "render_stored_run",
    "render_test_history",
    "run_json",
    "stored_run_json",
]


def _pct(value: float | None) -> str:
    """A 0..1 accuracy as a percentage, as ``oxy test`` prints it."""
    return "-" if value is None else f"{value * 100:.1f}%"


def _run_what(r: Run) -> str:
    if r.kind == "cases":
        return f"{r.prompt_id or '-'} v{r.prompt_version or '-'}"
    return r.subject or "-"


def _run_result(r: Run) -> str:
    """A run's results in a few words, from its counts (the same for every kind); a
    consistency run says its accuracy, a workflow run where to see its output."""
    if r.kind == "consistency":
        if not r.results:
            return "-"
        text = f"accuracy {_pct(r.average_score)} ({r.statuses.get('scored', 0)} scored"
        if r.statuses.get("error"):
            text += f", [red]{r.statuses['error']} not scored[/]"
        if r.statuses.get("interrupted"):
            text += f", [yellow]{r.statuses['interrupted']} cut short[/]"
        return text + ")"
    if r.kind == "workflow" and not r.errors:
        return f"oxy history --run {r.id[:8]}"  # its variables, tasks and output
    if not r.results:
        return "-"
    judged = r.passed or r.failed
    text = f"{r.passed} passed, {r.failed} failed" if judged else f"{r.results} result(s)"
    if r.regressions:
        text += f", [yellow]{r.regressions} regression(s)[/]"
    if r.errors:
        text += f", [red]{r.errors} error(s)[/]"
    if r.pending:
        text += f", {r.pending} pending"
    if r.average_score is not None:
        text += f", avg score {r.average_score:.3f}"
    return text


def render_history(runs: Sequence[Run], console: Console) -> None:
    """``oxy history``: recent runs of every kind, newest first (as given), each with its
    results counted."""
    from rich.markup import escape

    if not runs:
        console.print("no runs yet")
        return
    table = _table("run", "started (UTC)", "kind", "what", "status", "done", "result")
    for r in runs:
        table.add_row(
            escape(r.id[:8]),  # what --run and --compare take (an unambiguous start)
            _when(r.started_at),
            escape(r.kind),  # the stored name, as --format json and --kind say it
            escape(_run_what(r)),
            _STATUS.get(r.status, escape(r.status)),
            f"{r.done}/{r.total}",
            _run_result(r),
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
    table = _table("when (UTC)", "status", "accuracy", "change", "runs ok", "pairs judged", "model")
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


def run_json(r: Run, *, status: str | None = None) -> dict[str, Any]:
    """``status`` overrides the stored one (a read command shows a dead run as
    interrupted without writing that down). The Testing API's keys for every kind, counted from
    the run's results by one rule (:class:`~oxyeval.store.Run`), then ``kind``,
    ``groupId``, ``subject``, ``results`` (how many) and ``averageScore``; a consistency
    run (``oxy test``) adds ``consistency``, its tests counted in its own words."""
    doc: dict[str, Any] = {
        "id": r.id,
        "promptId": r.prompt_id,
        "promptVersion": r.prompt_version,
        "startedAt": r.started_at,
        "finishedAt": r.finished_at,
        "status": status or r.status,
        "total": r.total,
        "done": r.done,
        "passed": r.passed,
        "failed": r.failed,
        "pending": r.pending,
        "errors": r.errors,
        "regressions": r.regressions,
        "kind": r.kind,
        "groupId": r.group_id,
        "subject": r.subject,
        "results": r.results,
        "averageScore": r.average_score,
    }
    if r.kind == "consistency":
        doc["consistency"] = {
            "tests": r.results,
            "scored": r.statuses.get("scored", 0),
            "errors": r.statuses.get("error", 0),
            "interrupted": r.statuses.get("interrupted", 0),
            "averageAccuracy": r.average_score,
        }
    return doc


def consistency_result_json(r: ConsistencyResult) -> dict[str, Any]:
    """One stored result of a consistency test (accuracy 0..1, as ``oxy test``)."""
    return {
        "id": r.id,
        "runId": r.run_id,
        "file": r.file,
        "name": r.name,
        "status": r.status,
        "accuracy": r.accuracy,
        "n": r.n,
        "runsOk": r.runs_ok,
        "pairing": r.pairing,
        "model": r.model,
        "judgeModel": r.judge_model,
        "pairsTotal": r.pairs_total,
        "pairsJudged": r.pairs_judged,
        "identicalPairs": r.identical_pairs,
        "judgeCalls": r.judge_calls,
        "selectedRun": r.selected_run,
        "selectedOutput": r.selected_output,
        "failedRuns": list(r.run_errors),
        "error": r.error,
        "durationMs": r.duration_ms,
        "createdAt": r.created_at,
    }


def history_of_test_json(h: TestHistory) -> dict[str, Any]:
    """``oxy history --test NAME --format json``'s body: the test, its results newest
    first."""
    return {
        "test": {"file": h.file, "name": h.name},
        "results": [consistency_result_json(r) for r in h.results],
    }


def stored_run_json(view: StoredRunView) -> dict[str, Any]:
    """``oxy history --run ID --format json``: the run, its results (every kind in one
    shape, :meth:`oxyeval.store.StoredResult.to_dict`) and, for a workflow run, its
    variables, output and tasks; every key always present."""
    workflow = None
    if view.workflow is not None:
        w = view.workflow
        workflow = {
            "workflow": w.workflow,
            "variables": w.variables,
            "output": w.output,
            "error": w.error,
            "durationMs": w.duration_ms,
            "tasks": [
                {
                    "path": t.path,
                    "name": t.name,
                    "type": t.type,
                    "status": t.status,
                    "startedMs": t.started_ms,
                    "durationMs": t.duration_ms,
                    "output": t.output,
                    "error": t.error,
                }
                for t in w.tasks
            ],
        }
    return {
        "run": run_json(view.run),
        "results": [r.to_dict() for r in view.results],
        "workflow": workflow,
    }


def render_stored_run(view: StoredRunView, console: Console) -> None:
    """``oxy history --run ID``: what the run was, each result, and a workflow run's
    variables, tasks and output."""
    import json

    from rich.markup import escape

    r = view.run
    console.print(
        f"[bold]{escape(r.kind)} run {escape(r.id)}[/] · {_STATUS.get(r.status, escape(r.status))}"
        f" · {escape(r.subject or '-')} · {_when(r.started_at)} .. {_when(r.finished_at)}"
    )
    if view.results:
        table = _table("subject", "status", "passed", "score", "latency", "error")
        for res in view.results:
            passed = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[res.passed]
            table.add_row(
                escape(res.subject),
                escape(res.status),
                passed,
                "-" if res.score is None else f"{res.score:.3f}",
                "-" if res.latency_ms is None else f"{res.latency_ms / 1000:.2f}s",
                escape(shown(res.error)) if res.error else "",
            )
        console.print(table)
    w = view.workflow
    if w is not None:
        console.print(f"variables: {json.dumps(w.variables, ensure_ascii=False)}", markup=False)
        tasks = _table("task", "type", "status", "time")
        for t in w.tasks:
            time = "-" if t.duration_ms is None else f"{t.duration_ms / 1000:.2f}s"
            tasks.add_row(escape(t.path), escape(t.type), escape(t.status), time)
        console.print(tasks)
        output = w.output if isinstance(w.output, str) else json.dumps(w.output, ensure_ascii=False)
        console.print("output:", style="bold")
        console.print(shown(output or "-"), markup=False)
