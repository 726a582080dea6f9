"""The rows ``oxy test`` and ``oxy run`` write: consistency results and workflow runs, and
the values every writer inserts for them (the SQLAlchemy repositories and the lean
sqlite3 store, ``_lite``).

Apart from the other row types (``_rows``, which re-exports these) because the lean
store of every ``oxy test`` and ``oxy run`` imports only these: building a frozen
dataclass costs about a millisecond of CPU, some twenty of them a run's worth of noise.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..redact import clip
from ._util import canonical_json, loads, new_id, redact_json, redact_text, utc_timestamp
from .kinds import CONSISTENCY_STATUSES

__all__ = [
    "CONSISTENCY_STATUSES",
    "MAX_STORED_CHARS",
    "ConsistencyResult",
    "NewConsistencyResult",
    "NewWorkflowRun",
    "NewWorkflowTask",
    "bounded_text",
    "consistency_from_row",
    "consistency_values",
    "finished_tasks",
    "workflow_values",
]

#: The most characters of one output kept in the history (a selected answer, a workflow's or
#: a task's output as JSON). A SQL task may return millions of rows and a model 8 MB of text;
#: the history is for looking back, and a run's full outputs are in its own report, so a
#: longer value is stored cut, saying so, rather than growing every history by megabytes.
MAX_STORED_CHARS = 1_000_000


def bounded_text(text: str | None) -> str | None:
    """``text`` cut at :data:`MAX_STORED_CHARS`, saying so, with the SHA-256 of the whole
    (so two cut outputs can still be told equal or not): what the history keeps of an
    output. (Redact first: a secret must not straddle the cut, nor be hashed.)"""
    if text is None or len(text) <= MAX_STORED_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    marker = f"\n[... cut: {len(text):,} characters in all, sha256 {digest}]"
    return clip(text, MAX_STORED_CHARS, marker)


@dataclass(frozen=True, kw_only=True)
class NewConsistencyResult:
    """One consistency test of ``oxy test`` (identified by file and name) to record."""

    file: str
    name: str
    status: str  # scored | error | interrupted
    test_index: int = 0
    accuracy: float | None = None
    n: int = 0
    runs_ok: int = 0
    pairing: str = ""
    model: str = ""
    judge_model: str = ""
    pairs_total: int = 0
    pairs_judged: int = 0
    identical_pairs: int = 0
    judge_calls: int = 0
    selected_run: int | None = None
    selected_output: str | None = None
    run_errors: tuple[dict[str, Any], ...] | list[dict[str, Any]] = ()
    error: str | None = None
    duration_ms: float = 0.0
    created_at: str | None = None
    id: str | None = None
    #: (answers in the largest answer cluster, answers): the result row's ``tally``.
    tally: tuple[int, int] | None = None


def consistency_values(run_id: str, result: NewConsistencyResult) -> dict[str, Any]:
    """The ``test_results`` row of one result, checked and redacted: what every writer
    inserts (the SQLAlchemy repository and the lean SQLite one, ``_lite``)."""
    if result.status not in CONSISTENCY_STATUSES:
        raise ValueError(
            f"test status must be one of {', '.join(CONSISTENCY_STATUSES)}, not {result.status!r}"
        )
    if not result.file or not result.name:
        raise ValueError("a consistency result needs its file and test name")
    if result.accuracy is not None and not 0.0 <= result.accuracy <= 1.0:
        raise ValueError(f"accuracy must be between 0 and 1 (or None), got {result.accuracy!r}")
    if result.pairs_judged > result.pairs_total:
        raise ValueError("pairs_judged cannot exceed pairs_total")
    return {
        "id": result.id or new_id(),
        "run_id": run_id,
        "file": result.file,
        "name": result.name,
        "test_index": result.test_index,
        "status": result.status,
        "accuracy": result.accuracy,
        "n": result.n,
        "runs_ok": result.runs_ok,
        "pairing": result.pairing,
        "model": result.model,
        "judge_model": result.judge_model,
        "pairs_total": result.pairs_total,
        "pairs_judged": result.pairs_judged,
        "identical_pairs": result.identical_pairs,
        "judge_calls": result.judge_calls,
        "selected_run": result.selected_run,
        "selected_output": bounded_text(redact_text(result.selected_output)),
        "run_errors": canonical_json(redact_json(list(result.run_errors))),
        "error_message": redact_text(result.error),
        "duration_ms": float(result.duration_ms),
        "created_at": utc_timestamp(result.created_at),
    }


@dataclass(frozen=True)
class ConsistencyResult:
    id: str
    run_id: str
    file: str
    name: str
    test_index: int
    status: str
    accuracy: float | None
    n: int
    runs_ok: int
    pairing: str
    model: str
    judge_model: str
    pairs_total: int
    pairs_judged: int
    identical_pairs: int
    judge_calls: int
    selected_run: int | None
    selected_output: str | None
    run_errors: tuple[dict[str, Any], ...]
    error: str | None
    duration_ms: float
    created_at: str


def consistency_from_row(r: Any) -> ConsistencyResult:
    """A ``test_results`` row (any object with its columns as attributes) as a result."""
    return ConsistencyResult(
        id=r.id,
        run_id=r.run_id,
        file=r.file,
        name=r.name,
        test_index=r.test_index,
        status=r.status,
        accuracy=r.accuracy,
        n=r.n,
        runs_ok=r.runs_ok,
        pairing=r.pairing,
        model=r.model,
        judge_model=r.judge_model,
        pairs_total=r.pairs_total,
        pairs_judged=r.pairs_judged,
        identical_pairs=r.identical_pairs,
        judge_calls=r.judge_calls,
        selected_run=r.selected_run,
        selected_output=r.selected_output,
        run_errors=tuple(loads(r.run_errors) or ()),
        error=r.error_message,
        duration_ms=r.duration_ms,
        created_at=r.created_at,
    )


@dataclass(frozen=True, kw_only=True)
class NewWorkflowTask:
    path: str
    name: str
    type: str
    status: str  # succeeded | failed | skipped | cached | pending
    started_ms: float | None = None
    duration_ms: float | None = None
    output: Any = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class NewWorkflowRun:
    """A finished (or interrupted) ``oxy run`` of one workflow file, to record."""

    workflow: str
    variables: dict[str, Any] = field(default_factory=dict)
    output: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    tasks: tuple[NewWorkflowTask, ...] | list[NewWorkflowTask] = ()
    #: How the run ended, as its suite decided it (completed, failed, interrupted): its
    #: result's status. Required: the store records it and works none out.
    status: str = ""


def _json(value: Any) -> str | None:
    """The value as JSON, redacted; when longer than :data:`MAX_STORED_CHARS`, a JSON object
    holding the start of that text and its full length (still valid JSON on read)."""
    if value is None:
        return None
    text = canonical_json(redact_json(value))
    if len(text) <= MAX_STORED_CHARS:
        return text
    head = clip(text, MAX_STORED_CHARS, "")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return canonical_json({"oxy_cut": True, "chars": len(text), "sha256": digest, "head": head})


def finished_tasks(result: NewWorkflowRun) -> int:
    """The tasks of a run that ended (a run's ``done``): not those cut short or never
    started, so an interrupted run shows 1/3, not 3/3."""
    return sum(t.status not in ("interrupted", "pending", "running") for t in result.tasks)


def workflow_values(
    run_id: str, result: NewWorkflowRun
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``workflow_runs`` row and ``workflow_tasks`` rows of one workflow run, redacted
    (a model may echo a secret): what every writer inserts."""
    if not result.workflow:
        raise ValueError("a workflow run needs its workflow file")
    run = {
        "run_id": run_id,
        "workflow": result.workflow,
        "variables": _json(dict(result.variables)) or "{}",
        "output": _json(result.output),
        "error_message": redact_text(result.error),
        "duration_ms": float(result.duration_ms),
    }
    tasks = [
        {
            "run_id": run_id,
            "path": t.path,
            "name": t.name,
            "type": t.type,
            "status": t.status,
            "started_ms": t.started_ms,
            "duration_ms": t.duration_ms,
            "output": _json(t.output),
            "error_message": redact_text(t.error),
        }
        for t in result.tasks
    ]
    return run, tasks
