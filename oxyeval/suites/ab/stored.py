"""A stored A/B run ranked again: its executions read back from the history, through the
same summary and ranking a live run uses, under its own criterion or another.

Why: the winner of a run is not a stored number but a judgement over its executions (the
criterion, the Pareto front, the ties rule, the significance call); reading the
executions back and ranking them with the one ranking means a dashboard, the API and
``oxy ab run`` can never disagree about who won, and a reader may ask "who wins on cost?"
of a run made for quality without calling any model again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ConfigError
from ...store import NotFoundError
from .ranking import CRITERIA, DEFAULT_CRITERIA
from .results import ABCaseResult, BranchOutcome
from .summary import summarise

if TYPE_CHECKING:
    from ...store import BranchExecution, Store

__all__ = ["latest_ab_run", "stored_ab_result"]


def _outcome(e: BranchExecution) -> BranchOutcome:
    return BranchOutcome(
        branch_id=e.branch_id,
        iteration=e.iteration,
        status=e.status,
        output=e.output,
        error=e.error,
        latency_ms=e.latency_ms,
        time_to_first_token=e.time_to_first_token,
        tokens_per_second=e.tokens_per_second,
        input_tokens=e.input_tokens,
        output_tokens=e.output_tokens,
        estimated_cost=e.estimated_cost,
        quality_score=e.quality_score,
        similarity_score=e.similarity_score,
        clarity_score=e.clarity_score,
        valid_json=e.valid_json,
        consistency_hash=e.consistency_hash,
        cached=e.cached,
        execution_id=e.id,
        judge_cost=e.judge_cost,
    )


def latest_ab_run(store: Store, test_case_id: str) -> str | None:
    """The newest A/B run of a case (None: it has none)."""
    runs = store.runs.list(1, kind="ab", subject=test_case_id)
    return runs[0].id if runs else None


def stored_ab_result(store: Store, run_id: str, criteria: str | None = None) -> ABCaseResult:
    """The A/B run ``run_id`` as :func:`run_ab_test` returned it, ranked by ``criteria``
    (default: the criterion it was run with)."""
    run = store.runs.get(run_id)
    if run is None or run.kind != "ab":
        raise NotFoundError(f"no A/B run {run_id!r} in {store.path}", path=store.path)
    if criteria is not None and criteria not in CRITERIA:
        raise ConfigError(f"criteria must be one of {', '.join(CRITERIA)}, not {criteria!r}")
    executions = store.branches.executions_of_run(run_id)
    used = next((e.details.get("criteria") for e in executions if e.details.get("criteria")), None)
    case = store.cases.get(run.subject or "", include_deleted=True)
    branches = []
    for branch_id in dict.fromkeys(e.branch_id for e in executions):
        branch = store.branches.get(branch_id, include_deleted=True)
        if branch is not None:
            branches.append(branch)
    outcomes: dict[str, list[BranchOutcome]] = {}
    for e in executions:
        outcomes.setdefault(e.branch_id, []).append(_outcome(e))
    result = ABCaseResult(
        test_case_id=run.subject or "",
        case_name=case.name if case is not None else (run.subject or ""),
        prompt_id=case.prompt_id if case is not None else (run.prompt_id or ""),
        prompt_version=run.prompt_version or 0,
        criteria=criteria or used or DEFAULT_CRITERIA,
        iterations=1 + max((e.iteration for e in executions), default=0),
        run_id=run_id,
        interrupted=run.status == "interrupted",
    )
    summarise(result, branches, outcomes)
    return result
