"""``oxy run --format json``: a workflow run, or one agent's answer, as the family's run
document (:mod:`.documents`), kinds ``workflow`` and ``ask``.

The engine's own ``to_dict`` (snake_case, a library call's shape) is turned into the
family's camelCase here, so the engine stays free of any report's naming.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .documents import camel, camel_keys, run_document

if TYPE_CHECKING:
    from ..evaluation import Decision
    from ..suites import AskOutcome, WorkflowOutcome

__all__ = ["ask_json", "workflow_json"]


def _task(task: dict[str, Any]) -> dict[str, Any]:
    """One task's entry; the keys a task type adds (``consistency``...) camelCase too,
    its output as it is (a model's or a query's data)."""
    out = {}
    for key, value in task.items():
        if key == "consistency" and isinstance(value, dict):
            value = camel_keys(value)
        out[camel(key)] = value
    return out


def workflow_json(
    outcome: WorkflowOutcome, decision: Decision, *, error: str | None = None
) -> dict[str, Any]:
    """A workflow run: its status, time, output, every task and the failed ones, under
    the one decision on its result; ``error``: what stopped it."""
    raw = outcome.run.to_dict()
    body = {
        "workflow": raw["workflow"] or outcome.subject,
        "status": raw["status"],
        "durationS": raw["duration_s"],
        "output": raw["output"],
        "tasks": [_task(t) for t in raw["tasks"]],
        "failedTasks": raw["errors"],
    }
    return run_document(
        "workflow",
        body,
        outcome.as_results(),
        decision,
        interrupted=outcome.interrupted,
        history=outcome.history,
        warnings=outcome.warnings,
        cached_calls=outcome.run.cached_calls,
        error=error,
    )


def ask_json(
    outcome: AskOutcome, decision: Decision, *, error: str | None = None
) -> dict[str, Any]:
    """One agent's answer (or how far the ask got when it was cut short): the same keys
    whether it answered or not."""
    answer = outcome.answer
    raw = answer.to_dict()
    body = {
        "agent": raw["agent"],
        "status": raw["status"],
        "output": raw["output"],
        "toolCalls": raw["tool_calls"],
        "usage": camel_keys(raw["usage"]),
        "durationS": raw["duration_s"],
    }
    return run_document(
        "ask",
        body,
        outcome.as_results(),
        decision,
        interrupted=answer.interrupted,
        history=outcome.history,
        cached_calls=answer.cached_calls,
        warnings=answer.warnings,
        error=error,
    )
